"""Console fixtures: a signed-in TestClient per role of ``acme`` (from the gateway fixtures), on both engines."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from fastapi.testclient import TestClient

from agentfy.gateway.app import create_app
from agentfy.store.db import Database
from agentfy.store.repos import api_keys, orgs
from tests.gateway.console.helpers import sign_in
from tests.helpers.tenants import Tenant

SignedIn = Callable[[str], TestClient]


@pytest.fixture
def person(db: Database, acme: Tenant) -> str:
    """An operator key of acme that acts as a person (talking to agents needs one), also ``acme.keys["person"]``;
    returns the person's user ID."""
    with db.transaction() as tx:
        user_id = orgs.create_user(tx, display_name="Operator").id
        orgs.add_member(tx, acme.scope, user_id, "operator")
        acme.keys["person"] = api_keys.create_api_key(tx, acme.scope, name="operator person", role="operator",
                                                      user_id=user_id).key
    return user_id


@pytest.fixture
def signed_in(db: Database, acme: Tenant) -> Iterator[SignedIn]:
    """``signed_in(role)``: a new client (its own cookie jar) signed in with ``acme.keys[role]``."""
    app = create_app(db, signing_secret=b"s" * 32)
    clients: list[TestClient] = []

    def make(role: str) -> TestClient:
        client = TestClient(app, base_url="http://testserver")
        clients.append(client)
        answer = sign_in(client, acme.keys[role])
        assert answer.status_code == 303, answer.text
        return client

    try:
        yield make
    finally:
        for client in clients:
            client.close()
