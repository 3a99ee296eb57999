"""Fault and scale tests across processes: a worker killed between claim and ack, and two workers on
PostgreSQL sharing one outbox (FOR UPDATE SKIP LOCKED)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from agentfy.events.admin import status_of
from agentfy.events.outbox import publish
from agentfy.store.db import Database
from tests.conftest import _truncate_all
from tests.store.helpers import count, new_tenant

ROOT = Path(__file__).resolve().parents[2]


def _worker(url: str, name: str, mode: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "tests.events.proc_worker", url, name, mode], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})


def _publish_many(db: Database, n: int) -> list[str]:
    scope = new_tenant(db, "acme")
    ids = []
    with db.transaction() as tx:
        for i in range(n):
            event = publish(tx, type="test.happened", tenant_id=scope.tenant_id, source_id=f"s{i}")
            assert event is not None
            ids.append(event.id)
    return ids


def test_a_worker_killed_between_claim_and_ack_loses_nothing(db_url: str) -> None:
    db = Database(db_url)
    try:
        ids = _publish_many(db, 3)
        doomed = _worker(db_url, "doomed", "claim-and-die")
        assert doomed.stdout is not None and doomed.stdout.readline().strip() == "claimed 3"
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(timeout=10)
        assert {status_of(db, i)[0] for i in ids} == {"processing"}  # type: ignore[index]
        time.sleep(1.2)  # the dead worker's lease runs out
        survivor = _worker(db_url, "survivor", "drain")
        assert survivor.wait(timeout=60) == 0
        assert {status_of(db, i)[:2] for i in ids} == {("done", 2)}  # type: ignore[index]
        assert count(db, "org_audit") == 3
    finally:
        db.dispose()


def test_two_worker_processes_on_postgresql_handle_each_event_once(pg_migrated_url: str) -> None:
    _truncate_all(pg_migrated_url)
    db = Database(pg_migrated_url)
    try:
        ids = _publish_many(db, 200)
        workers = [_worker(pg_migrated_url, f"w{n}", "drain") for n in range(2)]
        assert [w.wait(timeout=120) for w in workers] == [0, 0]
        with db.transaction(write=False) as tx:
            handled = tx.all("SELECT target_id, count(*) FROM org_audit GROUP BY target_id")
            by_worker = tx.all("SELECT count(*) FROM event_outbox WHERE status = 'done' GROUP BY attempts")
        assert len(handled) == 200 and {n for _, n in handled} == {1}
        assert {status_of(db, i)[0] for i in ids} == {"done"}  # type: ignore[index]
        assert sum(n for (n,) in by_worker) == 200
    finally:
        db.dispose()
