"""Console fixtures: a signed-in TestClient per role of ``acme`` (from the gateway fixtures), on both engines."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from fastapi.testclient import TestClient

from agentfy.gateway.app import create_app
from agentfy.store.db import Database
from tests.gateway.console.helpers import sign_in
from tests.helpers.tenants import Tenant

SignedIn = Callable[[str], TestClient]


@pytest.fixture
def signed_in(db: Database, acme: Tenant) -> Iterator[SignedIn]:
    """``signed_in(role)``: a new client (its own cookie jar) signed in with acme's key of ``role``."""
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
