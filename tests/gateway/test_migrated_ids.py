"""Recorded cutover hops: an old ID is followed to its current one (UUID -> organization-… -> org-…), shown
only to the organization that owns it, and never becomes an HTTP alias."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from agentfy.cutover.hops import HopCycleError, record_hops, resolve_migrated_id
from agentfy.store.db import Database
from tests.helpers.tenants import Tenant

LEGACY_UUID = "0193a5b0-7000-7000-8000-000000000001"


def test_chains_resolve_to_the_current_id(db: Database, acme: Tenant) -> None:
    tail = acme.scope.tenant_id.removeprefix("org-")
    with db.transaction() as tx:
        record_hops(tx, [(LEGACY_UUID, f"organization-{tail}", "Organization")], run_id="run-1")
        record_hops(tx, [(f"organization-{tail}", acme.scope.tenant_id, "Organization")], run_id="run-2")
    with db.transaction(write=False) as tx:
        assert resolve_migrated_id(tx, LEGACY_UUID) == acme.scope.tenant_id
        assert resolve_migrated_id(tx, f"organization-{tail}") == acme.scope.tenant_id
        assert resolve_migrated_id(tx, acme.scope.tenant_id) is None  # current, never migrated


def test_a_corrupt_cycle_is_reported(db: Database) -> None:
    with db.transaction() as tx:
        record_hops(tx, [("a-1", "a-2", "Agent"), ("a-2", "a-1", "Agent")], run_id="broken")
    with db.transaction(write=False) as tx, pytest.raises(HopCycleError):
        resolve_migrated_id(tx, "a-1")


def test_the_ids_endpoint_follows_hops_for_the_owner_only(db: Database, client: TestClient, acme: Tenant,
                                                          globex: Tenant) -> None:
    bot = client.post("/v1/agents", json={"agent_key": "bot"}, headers=acme.headers()).json()
    with db.transaction() as tx:
        record_hops(tx, [(LEGACY_UUID, bot["id"], "Agent")], run_id="run-1")
    mine = client.get(f"/v1/ids/{LEGACY_UUID}", headers=acme.headers()).json()
    assert mine["migrated_to"] == bot["id"] and mine["format"] == "agentfy-legacy-uuid"
    assert client.get(f"/v1/ids/{LEGACY_UUID}", headers=globex.headers()).json()["migrated_to"] is None
    assert client.get(f"/v1/agents/{LEGACY_UUID}", headers=acme.headers()).status_code == 404  # no alias
