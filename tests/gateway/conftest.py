"""Gateway fixtures: an app on each engine, two organizations, and keys of every role."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from agentfy.gateway.app import create_app
from agentfy.identity import Scope
from agentfy.identity.roles import ROLES
from agentfy.store.db import Database
from agentfy.store.repos import api_keys, orgs
from tests.helpers.tenants import Tenant, make_tenant


@pytest.fixture
def client(db: Database) -> Iterator[TestClient]:
    with TestClient(create_app(db, signing_secret=b"s" * 32)) as test_client:
        yield test_client


@pytest.fixture
def acme(db: Database) -> Tenant:
    return make_tenant(db, "acme", keys=ROLES)


@pytest.fixture
def globex(db: Database) -> Tenant:
    return make_tenant(db, "globex", keys=ROLES)


@pytest.fixture
def platform_admin(db: Database) -> dict[str, str]:
    with db.transaction() as tx:
        platform, _ = orgs.ensure_platform_organization(tx)
        key = api_keys.create_api_key(tx, Scope(platform.id), name="admin", role="owner", platform_admin=True).key
    return {"Authorization": f"Bearer {key}"}
