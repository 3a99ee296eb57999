"""Audit log (history: technical UUIDs, IDs recorded as given) and policies (minted IDs), both engines."""

from __future__ import annotations

import uuid

import pytest

from agentfy.identity import InvalidIdError
from agentfy.ids import format_id, is_canonical_id
from agentfy.store.db import Database
from agentfy.store.errors import ConflictError, InvalidInputError, NotFoundError
from agentfy.store.repos import audit, orgs, policies
from tests.helpers.tenants import make_tenant
from tests.store.helpers import count


def test_audit_records_history_as_given_and_reads_newest_first(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    with db.transaction() as tx:
        first = audit.record_audit(tx, acme, action="agent.create", actor_id="user-calm-rivers-k8m4p2d7n9x3",
                                   target_id="agent-calm-rivers-k8m4p2d7n9x3", details={"key": "bot"})
        # History keeps what happened: a legacy UUID, a Telegram sender, a synthetic actor, no target.
        second = audit.record_audit(tx, acme, action="agent.delete", actor_id="123456789",
                                    target_id="0193a5b0-7000-7000-8000-000000000001")
        third = audit.record_audit(tx, acme, action="cron.run", actor_id="subagent:task-1")
    assert uuid.UUID(first.id).version == 4 and len({first.id, second.id, third.id}) == 3
    with db.transaction() as tx:
        entries = audit.list_audit(tx, acme)
        assert entries[0].id == third.id and {e.id for e in entries} == {first.id, second.id, third.id}
        assert audit.get_audit_entry(tx, acme, first.id) == first
        assert audit.get_audit_entry(tx, acme, second.id).target_id == "0193a5b0-7000-7000-8000-000000000001"
        assert [e.id for e in audit.list_audit(tx, acme, action="agent.delete")] == [second.id]
        assert [e.id for e in audit.list_audit(tx, acme, target_id="agent-calm-rivers-k8m4p2d7n9x3")] == [first.id]
        assert len(audit.list_audit(tx, acme, limit=1)) == 1


def test_audit_entries_of_another_tenant_are_not_found(db: Database) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    with db.transaction() as tx:
        theirs = audit.record_audit(tx, globex, action="secret.read")
    with db.transaction() as tx:
        for ref in (theirs.id, str(uuid.uuid4())):
            with pytest.raises(NotFoundError, match=f"audit entry '{ref}' not found"):
                audit.get_audit_entry(tx, acme, ref)
        assert audit.list_audit(tx, acme) == []
        for bad in ("not-a-uuid", theirs.id.upper(), ""):
            with pytest.raises(InvalidInputError):
                audit.get_audit_entry(tx, acme, bad)


def test_audit_outlives_its_organization_and_refuses_only_non_strings(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    with db.transaction() as tx:
        audit.record_audit(tx, acme, action="org.delete")
        with pytest.raises(InvalidInputError):
            audit.record_audit(tx, acme, action="x", actor_id=42)  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError):
            audit.record_audit(tx, acme, action="")
        for bad in ("u\x00", "sender\udc00"):  # what no engine can store: refused by name, not a database error
            with pytest.raises(InvalidInputError, match="actor_id"):
                audit.record_audit(tx, acme, action="x", actor_id=bad)
            with pytest.raises(InvalidInputError, match="target_id"):
                audit.record_audit(tx, acme, action="x", target_id=bad)
        orgs.delete_organization(tx, acme.tenant_id)
    assert count(db, "org_audit") == 1


def test_policies_crud(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    with db.transaction() as tx:
        tools = policies.create_policy(tx, acme, "tools", {"allow": ["search"]})
        policies.create_policy(tx, acme, "retention", {"days": 30})
        assert is_canonical_id(tools.id, "org-policy") and tools.org_id == acme.tenant_id
        assert policies.get_policy(tx, acme, tools.id) == tools
        assert policies.get_policy_by_name(tx, acme, "tools") == tools
        assert [p.name for p in policies.list_policies(tx, acme)] == ["retention", "tools"]
        updated = policies.update_policy(tx, acme, tools.id, {"allow": []})
        assert updated.id == tools.id and updated.document == {"allow": []}
        policies.delete_policy(tx, acme, tools.id)
        assert [p.name for p in policies.list_policies(tx, acme)] == ["retention"]


def test_duplicate_policy_name_is_a_conflict_per_organization(db: Database) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    with db.transaction() as tx:
        policies.create_policy(tx, acme, "tools", {})
        policies.create_policy(tx, globex, "tools", {})
    with pytest.raises(ConflictError, match="policy name 'tools' is already used") as caught, db.transaction() as tx:
        policies.create_policy(tx, acme, "tools", {"x": 1})
    assert caught.value.field == "name"
    assert count(db, "org_policies") == 2


def test_policies_of_another_tenant_are_not_found(db: Database) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    with db.transaction() as tx:
        theirs = policies.create_policy(tx, globex, "tools", {"allow": ["all"]})
    with db.transaction() as tx:
        for ref in (theirs.id, format_id("org-policy")):
            with pytest.raises(NotFoundError, match=f"policy '{ref}' not found"):
                policies.get_policy(tx, acme, ref)
            with pytest.raises(NotFoundError):
                policies.update_policy(tx, acme, ref, {})
            with pytest.raises(NotFoundError):
                policies.delete_policy(tx, acme, ref)
        with pytest.raises(NotFoundError):
            policies.get_policy_by_name(tx, acme, "tools")
        for bad in ("goctech-leader", "org-calm-rivers-k8m4p2d7n9x3"):
            with pytest.raises(InvalidIdError):
                policies.get_policy(tx, acme, bad)
        with pytest.raises(InvalidInputError):
            policies.create_policy(tx, acme, "bad", ["not", "an", "object"])  # type: ignore[arg-type]
    with db.transaction() as tx:
        assert policies.get_policy(tx, globex, theirs.id).document == {"allow": ["all"]}
