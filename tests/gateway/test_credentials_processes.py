"""Credential lifecycle across two real ``agentfy serve`` processes on PostgreSQL: a revocation, a member's
removal or demotion, an organization's deletion or an epoch bump made through one process is refused by the
other at once for writes (whose credential is always checked in the database) and, 200 ms later, for reads
(whose principal cache the change feed has dropped); nothing is written by a refused request."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.sync.client import connect

from agentfy.gateway import auth
from agentfy.store.db import Database
from tests.gateway.processes import Server, serving
from tests.helpers.databases import PgDatabases

pytestmark = pytest.mark.slow
ADMIN_KEY = "agfy_ok_" + "c" * 40
SETTLE_SECONDS = 0.2


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def signed_context(server: Server, key: str) -> str:
    with connect(server.ws, additional_headers=bearer(key)) as ws:
        ws.send(json.dumps({"id": 1, "method": "context.sign"}))
        return str(json.loads(ws.recv(timeout=10))["result"]["token"])


class Org:
    """An organization made through ``server``, and people in it with keys and signed contexts."""

    def __init__(self, server: Server, slug: str) -> None:
        created = httpx.post(f"{server.base}/v1/orgs", json={"slug": slug, "name": slug}, headers=bearer(ADMIN_KEY))
        assert created.status_code == 201, created.text
        self.id = created.json()["organization"]["id"]
        self.owner = bearer(created.json()["api_key"]["key"])
        self.server = server

    def person(self, role: str) -> tuple[str, str, str, str]:
        """(user ID, key ID, key, signed context) of a new member with ``role``."""
        member = httpx.post(f"{self.server.base}/v1/org/members", json={"display_name": role, "role": role},
                            headers=self.owner).json()
        issued = httpx.post(f"{self.server.base}/v1/org/api-keys",
                            json={"name": role, "role": role, "user_id": member["user_id"]}, headers=self.owner).json()
        return member["user_id"], issued["api_key"]["id"], issued["key"], signed_context(self.server, issued["key"])

    def agents(self) -> int:
        return len(httpx.get(f"{self.server.base}/v1/agents", headers=self.owner).json()["items"])


def test_every_lifecycle_change_reaches_the_other_process(pg_databases: PgDatabases, tmp_path: Path) -> None:
    name = pg_databases.create()
    url = pg_databases.url(name)
    try:
        with serving(url, 2, tmp_path, env={"AGENTFY_ADMIN_API_KEY": ADMIN_KEY}) as (a, b):
            run(url, a, b)
    finally:
        pg_databases.drop(name)


def run(url: str, a: Server, b: Server) -> None:
    acme = Org(a, "acme")
    db = Database(url)
    changes: dict[str, Callable[[Org, str, str], Any]] = {
        "key revoked": lambda org, user, key_id: httpx.delete(f"{a.base}/v1/org/api-keys/{key_id}", headers=org.owner),
        "member removed": lambda org, user, key_id: httpx.delete(f"{a.base}/v1/org/members/{user}",
                                                                 headers=org.owner),
        "epoch bumped": lambda org, user, key_id: auth.bump_signing_epoch(db),
    }
    try:
        for change, make in changes.items():
            user, key_id, key, context = acme.person("admin")
            credentials = {"key": key, "signed context": context}
            if change == "epoch bumped":
                credentials.pop("key")  # an epoch bump voids signed contexts only
            for credential in credentials.values():
                for server in (a, b):  # cached in both processes
                    assert httpx.get(f"{server.base}/v1/agents", headers=bearer(credential)).status_code == 200
            before = acme.agents()
            made = make(acme, user, key_id)
            assert getattr(made, "status_code", 204) == 204
            for label, credential in credentials.items():
                write = httpx.post(f"{b.base}/v1/agents", json={"agent_key": "sneaky"}, headers=bearer(credential))
                assert write.status_code == 401, (change, label, write.text)
            time.sleep(SETTLE_SECONDS)
            for label, credential in credentials.items():
                for server in (a, b):
                    read = httpx.get(f"{server.base}/v1/agents", headers=bearer(credential))
                    assert read.status_code == 401 and read.json()["error"]["code"] == "revoked", (change, label)
            assert acme.agents() == before, change

        # a demotion: the admin key is narrowed to member, and its admin context refused, in both processes
        user, key_id, key, context = acme.person("admin")
        for server in (a, b):
            assert httpx.put(f"{server.base}/v1/org/default-agent", json={"agent": None},
                             headers=bearer(key)).status_code == 200
        assert httpx.patch(f"{a.base}/v1/org/members/{user}", json={"role": "member"},
                           headers=acme.owner).status_code == 200
        assert httpx.put(f"{b.base}/v1/org/default-agent", json={"agent": None}, headers=bearer(key)).status_code \
            == 403
        assert httpx.post(f"{b.base}/v1/agents", json={"agent_key": "x"}, headers=bearer(context)).status_code == 401
        time.sleep(SETTLE_SECONDS)
        for server in (a, b):
            assert httpx.get(f"{server.base}/v1/agents", headers=bearer(context)).status_code == 401

        # a deleted organization: its keys and contexts, everywhere
        globex = Org(a, "globex")
        _, _, key, context = globex.person("owner")
        for credential in (key, context):
            for server in (a, b):
                assert httpx.get(f"{server.base}/v1/agents", headers=bearer(credential)).status_code == 200
        assert httpx.delete(f"{a.base}/v1/orgs/{globex.id}", headers=bearer(ADMIN_KEY)).status_code == 204
        for credential in (key, context):
            assert httpx.post(f"{b.base}/v1/agents", json={"agent_key": "x"}, headers=bearer(credential)).status_code \
                == 401
        time.sleep(SETTLE_SECONDS)
        for credential in (key, context):
            for server in (a, b):
                assert httpx.get(f"{server.base}/v1/agents", headers=bearer(credential)).status_code == 401
    finally:
        db.dispose()

