"""Gateway fixtures: an app on each engine, two organizations, and keys of every role."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from fastapi.testclient import TestClient

from agentfy.gateway.app import create_app
from agentfy.identity import Scope
from agentfy.store.db import Database
from agentfy.store.repos import api_keys, orgs


@dataclass
class Tenant:
    scope: Scope
    slug: str
    keys: dict[str, str]  # role -> bearer key

    def headers(self, role: str = "owner") -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys[role]}"}


def make_tenant(db: Database, slug: str) -> Tenant:
    with db.transaction() as tx:
        org = orgs.create_organization(tx, slug=slug, name=slug.title())
        scope = Scope(org.id)
        keys = {role: api_keys.create_api_key(tx, scope, name=role, role=role).key
                for role in ("owner", "admin", "operator", "member")}
    return Tenant(scope, slug, keys)


@pytest.fixture
def client(db: Database) -> Iterator[TestClient]:
    with TestClient(create_app(db, signing_secret=b"s" * 32)) as test_client:
        yield test_client


@pytest.fixture
def acme(db: Database) -> Tenant:
    return make_tenant(db, "acme")


@pytest.fixture
def globex(db: Database) -> Tenant:
    return make_tenant(db, "globex")


@pytest.fixture
def platform_admin(db: Database) -> dict[str, str]:
    with db.transaction() as tx:
        platform, _ = orgs.ensure_platform_organization(tx)
        key = api_keys.create_api_key(tx, Scope(platform.id), name="admin", role="owner", platform_admin=True).key
    return {"Authorization": f"Bearer {key}"}
