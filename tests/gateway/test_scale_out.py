"""Several real ``agentfy serve`` processes on one PostgreSQL database: one truth for all of them.

Each change is made through one process (or by a library user, a process of its own) while every process has
the target cached; then, at once, writes go through the *other* processes — none may land on the stale target
— and, 200 ms later, reads through every process — none may be stale.  WebSocket clients on each process see
every event once, in the same order.  Killing the listening connections, or every connection, loses nothing.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from websockets.sync.client import ClientConnection, connect

from agentfy.identity import Scope
from agentfy.store.db import Database
from agentfy.store.repos import agents
from tests.gateway.processes import Server, serving
from tests.helpers.databases import PgDatabases

pytestmark = pytest.mark.slow
ADMIN_KEY = "agfy_ok_" + "m" * 40
SETTLE_SECONDS = 0.2  # "after 200 ms, reads through every process"


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def new_org(server: Server, slug: str) -> tuple[str, dict[str, str]]:
    """A new organization (through ``server``): its ID and its owner key's headers."""
    created = httpx.post(f"{server.base}/v1/orgs", json={"slug": slug, "name": slug}, headers=bearer(ADMIN_KEY))
    assert created.status_code == 201, created.text
    body = created.json()
    return body["organization"]["id"], bearer(body["api_key"]["key"])


def warm(servers: list[Server], headers: dict[str, str], *refs: str) -> None:
    """Every process reads every ref (so each has it cached, where it caches)."""
    for server in servers:
        for ref in refs:
            assert httpx.get(f"{server.base}/v1/agents/{ref}", headers=headers).status_code == 200


def statuses(servers: list[Server], path: str, headers: dict[str, str]) -> set[int]:
    return {httpx.get(f"{server.base}{path}", headers=headers).status_code for server in servers}


@contextmanager
def direct(url: str) -> Iterator[psycopg.Connection[Any]]:
    conninfo = url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(conninfo, autocommit=True) as connection:
        yield connection


class EventLog:
    """A WebSocket client subscribed to a tenant's agent events, collecting them in a thread."""

    def __init__(self, server: Server, headers: dict[str, str]) -> None:
        # Held open across the test (closed by close()), so not a ``with`` block: ``legacy=True`` is the
        # library's way of saying so.
        connection = connect(server.ws, additional_headers=headers, legacy=True)
        assert isinstance(connection, ClientConnection)
        self.ws = connection
        self.ws.send(json.dumps({"id": 1, "method": "subscribe"}))
        assert json.loads(self.ws.recv(timeout=10))["result"]["subscribed"] is True
        self.events: list[dict[str, Any]] = []
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for text in self.ws:
                message = json.loads(text)
                if "event" in message:
                    self.events.append(message)
        except Exception:
            pass

    def agent_events(self) -> list[tuple[str, str, str]]:
        return [(e["event"], e["agent"]["id"], e["agent"]["agent_key"]) for e in self.events if "agent" in e]

    def wait_for(self, key: str, timeout: float = 10) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(e.get("agent", {}).get("agent_key") == key for e in self.events):
                return
            time.sleep(0.01)
        raise AssertionError(f"no event for {key!r} within {timeout} s: {self.events}")

    def close(self) -> None:
        self.ws.close()


def test_two_processes_never_write_to_a_stale_agent_and_never_serve_one(pg_databases: PgDatabases,
                                                                      tmp_path: Path) -> None:
    name = pg_databases.create()
    url = pg_databases.url(name)
    try:
        with serving(url, 2, tmp_path, env={"AGENTFY_ADMIN_API_KEY": ADMIN_KEY}) as servers:
            run_the_scenarios(url, servers)
    finally:
        pg_databases.drop(name)


def run_the_scenarios(url: str, servers: list[Server]) -> None:
    a, b = servers
    acme_id, acme = new_org(a, "acme")
    logs = [EventLog(server, acme) for server in servers]
    expected: list[tuple[str, str, str]] = []
    db = Database(url)
    try:
        # -- delete: the other process must refuse writes at once and stop serving it within 200 ms -------------
        doomed = httpx.post(f"{a.base}/v1/agents", json={"agent_key": "doomed"}, headers=acme).json()
        expected.append(("agent.created", doomed["id"], "doomed"))
        warm(servers, acme, "doomed", doomed["id"])
        assert httpx.delete(f"{a.base}/v1/agents/doomed", headers=acme).status_code == 204
        expected.append(("agent.deleted", doomed["id"], "doomed"))
        assert httpx.patch(f"{b.base}/v1/agents/doomed", json={"display_name": "x"}, headers=acme).status_code == 404
        opened = httpx.post(f"{b.base}/v1/sessions", json={"session_key": "s-doomed", "agent": "doomed"},
                            headers=acme)
        assert opened.status_code == 404, opened.text
        time.sleep(SETTLE_SECONDS)
        for ref in ("doomed", doomed["id"]):
            assert statuses(servers, f"/v1/agents/{ref}", acme) == {404}
        for server in servers:
            assert httpx.post(f"{server.base}/v1/agents/doomed/heartbeat", headers=acme).status_code == 404

        # -- rename and re-use of the key: bot-a now names a new agent everywhere ----------------------------
        old = httpx.post(f"{a.base}/v1/agents", json={"agent_key": "bot-a"}, headers=acme).json()
        expected.append(("agent.created", old["id"], "bot-a"))
        warm(servers, acme, "bot-a", old["id"])
        assert httpx.patch(f"{a.base}/v1/agents/bot-a", json={"agent_key": "bot-b"}, headers=acme).status_code == 200
        new = httpx.post(f"{a.base}/v1/agents", json={"agent_key": "bot-a"}, headers=acme).json()
        expected += [("agent.renamed", old["id"], "bot-b"), ("agent.updated", old["id"], "bot-b"),
                     ("agent.created", new["id"], "bot-a")]
        session = httpx.post(f"{b.base}/v1/sessions", json={"session_key": "s-bot-a", "agent": "bot-a"},
                             headers=acme).json()
        assert session["agent_id"] == new["id"]
        patched = httpx.patch(f"{b.base}/v1/agents/bot-a", json={"display_name": "The new bot-a"}, headers=acme)
        assert patched.json()["id"] == new["id"]
        expected.append(("agent.updated", new["id"], "bot-a"))
        time.sleep(SETTLE_SECONDS)
        for server in servers:
            assert httpx.get(f"{server.base}/v1/agents/bot-a", headers=acme).json()["id"] == new["id"]
            assert httpx.get(f"{server.base}/v1/agents/bot-b", headers=acme).json()["id"] == old["id"]
            assert httpx.get(f"{server.base}/v1/agents/{old['id']}", headers=acme).json()["agent_key"] == "bot-b"
        assert httpx.delete(f"{b.base}/v1/agents/bot-a", headers=acme).status_code == 204
        expected.append(("agent.deleted", new["id"], "bot-a"))
        with db.transaction(write=False) as tx:  # the old agent was never the target of any of those writes
            survivor = agents.get_agent(tx, Scope(acme_id), old["id"])
        assert (survivor.agent_key, survivor.display_name) == ("bot-b", "bot-a")
        with direct(url) as connection:
            rows = connection.execute("SELECT agent_id FROM sessions WHERE session_key = 's-bot-a'").fetchall()
        assert rows == []  # the session went with the new bot-a it belonged to

        # -- archive by a library user (a process of its own) ----------------------------------------------------
        archived = httpx.post(f"{a.base}/v1/agents", json={"agent_key": "shelved"}, headers=acme).json()
        expected.append(("agent.created", archived["id"], "shelved"))
        warm(servers, acme, "shelved", archived["id"])
        with db.transaction() as tx:
            agents.archive_agent(tx, Scope(acme_id), archived["id"])
        expected.append(("agent.deleted", archived["id"], "shelved"))
        for server in servers:
            patch = httpx.patch(f"{server.base}/v1/agents/shelved", json={"display_name": "x"}, headers=acme)
            assert patch.status_code == 404
        time.sleep(SETTLE_SECONDS)
        assert statuses(servers, "/v1/agents/shelved", acme) == {404}
        assert statuses(servers, f"/v1/agents/{archived['id']}", acme) == {404}

        # -- a revoked key and a deleted organization stop working everywhere --------------------------------
        issued = httpx.post(f"{a.base}/v1/org/api-keys", json={"name": "ops", "role": "operator"}, headers=acme).json()
        ops = bearer(issued["key"])
        assert statuses(servers, "/v1/agents", ops) == {200}
        assert httpx.delete(f"{a.base}/v1/org/api-keys/{issued['api_key']['id']}", headers=acme).status_code == 204
        assert httpx.post(f"{b.base}/v1/agents", json={"agent_key": "by-revoked"}, headers=ops).status_code == 401
        time.sleep(SETTLE_SECONDS)
        assert statuses(servers, "/v1/agents", ops) == {401}

        globex_id, globex = new_org(a, "globex")
        httpx.post(f"{a.base}/v1/agents", json={"agent_key": "theirs"}, headers=globex)
        warm(servers, globex, "theirs")
        assert httpx.delete(f"{a.base}/v1/orgs/{globex_id}", headers=bearer(ADMIN_KEY)).status_code == 204
        assert httpx.post(f"{b.base}/v1/agents", json={"agent_key": "late"}, headers=globex).status_code == 401
        time.sleep(SETTLE_SECONDS)
        assert statuses(servers, "/v1/agents/theirs", globex) == {401}
        with direct(url) as connection:
            assert connection.execute("SELECT count(*) FROM agents WHERE tenant_id = %s", (globex_id,)).fetchone() \
                == (0,)

        # -- the listening connections are killed: they come back, flush, and nothing stale is served ----------
        kept = httpx.post(f"{a.base}/v1/agents", json={"agent_key": "bot-k"}, headers=acme).json()
        expected.append(("agent.created", kept["id"], "bot-k"))
        warm(servers, acme, "bot-k")
        with direct(url) as connection:
            killed = connection.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = current_database() AND application_name = 'agentfy-changefeed'").fetchone()
        assert killed == (2,)
        with db.transaction() as tx:  # made while the processes may not be listening: its event may be missed
            agents.rename_agent(tx, Scope(acme_id), kept["id"], "bot-k2")
        maybe_missed = ("agent.renamed", kept["id"], "bot-k2")
        wait_for_listeners(url, 2)
        time.sleep(SETTLE_SECONDS)
        assert statuses(servers, "/v1/agents/bot-k", acme) == {404}
        for server in servers:
            assert httpx.get(f"{server.base}/v1/agents/bot-k2", headers=acme).json()["id"] == kept["id"]
            assert httpx.get(f"{server.base}/readyz").status_code == 200

        # -- every connection is killed: no request that starts afterwards fails -------------------------------
        with direct(url) as connection:
            connection.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                               "WHERE datname = current_database() AND pid <> pg_backend_pid()")
        for server in servers:
            for _ in range(5):
                assert httpx.get(f"{server.base}/v1/agents/bot-k2", headers=acme).status_code == 200
                assert httpx.get(f"{server.base}/v1/agents", headers=acme).status_code == 200
        made = httpx.post(f"{b.base}/v1/agents", json={"agent_key": "after-the-kill"}, headers=acme)
        assert made.status_code == 201, made.text
        expected.append(("agent.created", made.json()["id"], "after-the-kill"))
        wait_for_listeners(url, 2)

        # -- every WebSocket client saw every event of its tenant once, in commit order --------------------------
        marker = httpx.post(f"{a.base}/v1/agents", json={"agent_key": "zz-marker"}, headers=acme).json()
        expected.append(("agent.created", marker["id"], "zz-marker"))
        for log in logs:
            log.wait_for("zz-marker")
            seen = log.agent_events()
            assert seen.count(maybe_missed) <= 1
            assert [e for e in seen if e != maybe_missed] == expected
            resyncs = [e for e in log.events if e["event"] == "events.resync"]
            assert resyncs, "a lost listening connection tells subscribers to re-list"
    finally:
        for log in logs:
            log.close()
        db.dispose()


def wait_for_listeners(url: str, count: int, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with direct(url) as connection:
            row = connection.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                                     "AND application_name = 'agentfy-changefeed'").fetchone()
        if row == (count,):
            return
        time.sleep(0.05)
    raise AssertionError(f"{count} listening connections did not come back within {timeout} s")


def test_three_processes_start_together_on_an_empty_database_and_agree(pg_databases: PgDatabases,
                                                                     tmp_path: Path) -> None:
    name = pg_databases.create()
    url = pg_databases.url(name)
    try:
        with serving(url, 3, tmp_path) as servers:  # migrate at once: one migrates, the others wait
            keys = [line for s in servers for line in [_printed_key(s.output())] if line]
            assert len(keys) == 1, "exactly one process issues (and prints) the first admin key"
            with direct(url) as connection:
                assert connection.execute("SELECT count(*) FROM alembic_version").fetchone() == (1,)
            first, second, third = servers
            created = httpx.post(f"{first.base}/v1/orgs", json={"slug": "acme", "name": "Acme"},
                                 headers=bearer(keys[0])).json()
            acme = bearer(created["api_key"]["key"])
            old = httpx.post(f"{first.base}/v1/agents", json={"agent_key": "beta"}, headers=acme).json()
            warm(servers, acme, "beta")
            httpx.patch(f"{first.base}/v1/agents/beta", json={"agent_key": "beta-archive"}, headers=acme)
            new = httpx.post(f"{first.base}/v1/agents", json={"agent_key": "beta"}, headers=acme).json()
            assert httpx.patch(f"{second.base}/v1/agents/beta", json={"display_name": "B"},
                               headers=acme).json()["id"] == new["id"]
            assert httpx.delete(f"{third.base}/v1/agents/beta", headers=acme).status_code == 204
            time.sleep(SETTLE_SECONDS)
            for server in servers:
                assert httpx.get(f"{server.base}/v1/agents/beta-archive", headers=acme).json()["id"] == old["id"]
                assert httpx.get(f"{server.base}/v1/agents/beta", headers=acme).status_code == 404
    finally:
        pg_databases.drop(name)


def _printed_key(output: str) -> str | None:
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if "shown once" in line:
            return lines[i + 1].strip()
    return None
