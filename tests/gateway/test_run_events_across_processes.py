"""Two real ``agentfy serve`` processes on one PostgreSQL database: a WebSocket client connected to one sees
the run events and deltas of a run the other serves — once each, in order — and the tenant and conversation
rules hold there as they do in the serving process."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentfy.gateway.rpc import watches
from agentfy.store.db import Database
from tests.gateway.processes import serving
from tests.gateway.test_observability import _sample
from tests.gateway.test_scale_out import EventLog
from tests.helpers.databases import PgDatabases
from tests.helpers.tenants import make_tenant
from tests.runtime.test_http_chat import Person

pytestmark = pytest.mark.slow
RUN = ["agent.run.started", "agent.run.delta", "agent.replied", "agent.run.finished"]


def wait_finished(log: EventLog, timeout: float = 15) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(e["event"] == "agent.run.finished" for e in log.events):
            return list(log.events)
        time.sleep(0.01)
    raise AssertionError(f"the run did not finish within {timeout} s: {log.events}")


def names(events: list[dict[str, Any]]) -> list[str]:
    """Event names, each run of deltas folded into one ``agent.run.delta``."""
    folded: list[str] = []
    for event in events:
        if not (folded and event["event"] == folded[-1] == "agent.run.delta"):
            folded.append(event["event"])
    return folded


def test_a_run_served_by_one_process_reaches_the_websocket_clients_of_another(pg_databases: PgDatabases,
                                                                              tmp_path: Path) -> None:
    name = pg_databases.create()
    url = pg_databases.url(name)
    logs: list[EventLog] = []
    try:
        with serving(url, 2, tmp_path, env={"AGENTFY_WORKSPACE_ROOT": str(tmp_path / "workspaces")}) as (a, b):
            listening_since = time.monotonic()  # both processes' listeners are connected once they serve
            db = Database(url)
            try:
                acme = make_tenant(db, "acme", agent_key="bot")
                globex = make_tenant(db, "globex", agent_key="bot")
                initech = make_tenant(db, "initech", agent_key="bot")
                unwatched = Person(db, initech.scope, "member")
                ann, bob = Person(db, acme.scope, "member"), Person(db, acme.scope, "member")
                stranger = Person(db, globex.scope, "owner")
            finally:
                db.dispose()
            ann_on_a, bob_on_a, stranger_on_a, ann_on_b = logs[:] = [
                EventLog(a, ann.headers), EventLog(a, bob.headers), EventLog(a, stranger.headers),
                EventLog(b, ann.headers)]

            sent = httpx.post(f"{b.base}/v1/agents/bot/messages", json={"text": "hello from the other side"},
                              headers=ann.headers, timeout=30)
            assert sent.status_code == 200, sent.text
            reply = sent.json()["reply"]

            for log in (ann_on_a, ann_on_b):  # the serving process's own client: also exactly once
                events = wait_finished(log)
                assert names(events) == RUN, events
                deltas = [e["run"]["text"] for e in events if e["event"] == "agent.run.delta"]
                assert len(deltas) > 1 and "".join(deltas) == reply  # word by word, in order
                assert len({e["run"]["id"] for e in events}) == 1
                assert all(e["agent"] == events[0]["agent"] and e["agent"]["agent_key"] == "bot"
                           and e["agent"]["tenant_slug"] == "acme" for e in events)
                assert all(set(e) == {"event", "agent", "run"} for e in events)  # no tenant ID, no scope
            assert names(wait_finished(bob_on_a)) == ["agent.run.started", "agent.replied", "agent.run.finished"]
            time.sleep(0.3)  # what would have come has come
            assert stranger_on_a.events == []
            assert len(ann_on_a.events) == len(ann_on_b.events)  # nothing twice, on either process
            served, heard = httpx.get(f"{b.base}/metrics").text, httpx.get(f"{a.base}/metrics").text
            assert _sample(served, "agentfy_run_event_broadcasts_total", outcome="sent") >= len(ann_on_a.events)
            assert _sample(heard, "agentfy_run_event_broadcasts_total", outcome="received") >= len(ann_on_a.events)
            assert _sample(heard, "agentfy_run_event_broadcasts_total", outcome="dropped") == 0

            # Once the serving process has had time to hear every watcher, a run of a tenant nobody elsewhere
            # subscribes to is not broadcast, and one of a watched tenant still is.
            time.sleep(max(0.0, listening_since + watches.BLIND_SECONDS + 0.5 - time.monotonic()))
            before = _sample(httpx.get(f"{b.base}/metrics").text, "agentfy_run_event_broadcasts_total",
                             outcome="sent")
            alone = httpx.post(f"{b.base}/v1/agents/bot/messages", json={"text": "anyone there?"},
                               headers=unwatched.headers, timeout=30)
            assert alone.status_code == 200, alone.text
            served = httpx.get(f"{b.base}/metrics").text
            assert _sample(served, "agentfy_run_event_broadcasts_total", outcome="sent") == before
            assert _sample(served, "agentfy_run_event_broadcasts_total", outcome="unwatched") >= len(RUN)
            ann_on_a.events.clear()
            again = httpx.post(f"{b.base}/v1/agents/bot/messages", json={"text": "still there?"},
                               headers=ann.headers, timeout=30)
            assert again.status_code == 200, again.text
            assert names(wait_finished(ann_on_a)) == RUN
    finally:
        for log in logs:
            log.close()
        pg_databases.drop(name)
