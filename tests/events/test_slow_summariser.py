"""A model-backed summariser that takes ten seconds, in the default embedded setup (SQLite), while the
application keeps writing: no publish and no API write may fail or wait for it.

Before the summariser ran outside the write transaction, it held SQLite's only write lock for its whole
duration, and a concurrent publish failed after the 5 s busy timeout.  So on SQLite the summariser takes
10 s (twice the busy timeout); on PostgreSQL, where row locks never made writers wait, 6 s is enough to show
the same.  ``AGENTFY_TEST_SUMMARY_SECONDS`` overrides both.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence

import pytest
from fastapi.testclient import TestClient

from agentfy.events.consolidation import ConsolidationSettings, handlers
from agentfy.events.outbox import publish
from agentfy.events.settings import BusSettings
from agentfy.events.worker import Worker
from agentfy.gateway.app import create_app
from agentfy.identity.roles import ROLES
from agentfy.store.db import Database
from agentfy.store.repos.sessions import Session, SessionMessage
from tests.helpers.tenants import make_tenant

SUMMARY_SECONDS = {"sqlite": 10.0, "postgresql": 6.0}
#: Far below both the summariser's duration and SQLite's busy timeout (5 s): a writer that waited for the
#: summariser would take at least that long, or fail.
MAX_WRITE_SECONDS = 2.0


class ModelSummariser:
    """Stands in for a model call: ``seconds`` for the session ``slow``, instant for the others."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.started = threading.Event()
        self.finished = threading.Event()

    def summarise(self, session: Session, messages: Sequence[SessionMessage]) -> str:
        if session.session_key == "slow":
            self.started.set()
            time.sleep(self.seconds)
            self.finished.set()
        return f"{session.session_key}: " + " ".join(m.content for m in messages)


@pytest.mark.slow
def test_a_slow_summariser_makes_no_publish_or_api_write_fail(db: Database) -> None:
    seconds = float(os.environ.get("AGENTFY_TEST_SUMMARY_SECONDS", SUMMARY_SECONDS[db.dialect]))
    acme = make_tenant(db, "acme", keys=ROLES)
    headers = acme.headers()
    summariser = ModelSummariser(seconds)
    # The lease is shorter than the summariser: the heartbeat keeps it, while every write below goes on.
    settings = BusSettings(batch_size=1, lease_seconds=3, poll_seconds=0.05)
    worker = Worker(db, handlers(summariser=summariser, settings=ConsolidationSettings(debounce_seconds=0)),
                    settings=settings)
    stop = threading.Event()
    thread = threading.Thread(target=worker.run_forever, args=(stop,))
    writes: list[tuple[str, float, int]] = []  # (what, seconds, HTTP status or 0 for a direct publish)
    with TestClient(create_app(db, signing_secret=b"s" * 32)) as client:
        assert client.post("/v1/agents", json={"agent_key": "bot"}, headers=headers).status_code == 201

        def api(what: str, path: str, body: dict[str, str] | None = None) -> None:
            started = time.monotonic()
            response = client.post(path, json=body, headers=headers)
            writes.append((what, time.monotonic() - started, response.status_code))
            assert response.status_code in (200, 201), response.text

        api("open", "/v1/sessions", {"session_key": "slow", "agent": "bot"})
        api("append", "/v1/sessions/slow/messages", {"role": "user", "content": "Alice visited Paris."})
        api("complete", "/v1/sessions/slow/complete")
        thread.start()
        try:
            assert summariser.started.wait(10)
            n = 0
            while not summariser.finished.is_set():
                key = f"s-{n}"
                api("open", "/v1/sessions", {"session_key": key, "agent": "bot"})
                api("append", f"/v1/sessions/{key}/messages", {"role": "user", "content": f"Message {n}."})
                api("complete", f"/v1/sessions/{key}/complete")  # publishes session.completed
                started = time.monotonic()
                with db.transaction() as tx:
                    publish(tx, type="app.happened", tenant_id=acme.scope.tenant_id, source_id=f"p-{n}")
                writes.append(("publish", time.monotonic() - started, 0))
                n += 1
            deadline = time.monotonic() + 30
            while _unhandled(db) and time.monotonic() < deadline:
                time.sleep(0.1)
        finally:
            stop.set()
            thread.join()
    during = [w for w in writes[3:]]
    assert len(during) >= 20, f"only {len(during)} writes in {seconds} s"
    slowest = max(during, key=lambda w: w[1])
    assert slowest[1] < MAX_WRITE_SECONDS, f"a write waited {slowest[1]:.2f} s: {slowest}"
    with db.transaction(write=False) as tx:
        summaries = tx.all("SELECT session_key, summary FROM episodic_summaries ORDER BY session_key")
        statuses = tx.all("SELECT DISTINCT status FROM event_outbox WHERE type = 'session.completed'")
    assert ("slow", "slow: Alice visited Paris.") in summaries
    assert len(summaries) == 1 + n  # every session summarised once, the slow one included
    assert statuses == [("done",)]


def _unhandled(db: Database) -> int:
    with db.transaction(write=False) as tx:
        return int(tx.scalar("SELECT count(*) FROM event_outbox WHERE status != 'done' AND type != 'app.happened'"))
