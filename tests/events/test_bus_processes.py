"""Fault and scale tests across processes: a worker killed between claim and ack, a handler that kills its
worker, Ctrl-C and SIGTERM mid-batch, and two workers on PostgreSQL sharing one outbox (SKIP LOCKED)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentfy.events import counters
from agentfy.events.admin import dead_letters, status_of
from agentfy.events.outbox import publish
from agentfy.store.db import Database
from tests.helpers.databases import truncate_all
from tests.helpers.tenants import make_tenant
from tests.store.helpers import count

ROOT = Path(__file__).resolve().parents[2]


def _worker(url: str, name: str, mode: str, **settings: object) -> subprocess.Popen[str]:
    bus = {f"AGENTFY_EVENTS_{key.upper()}": str(value) for key, value in settings.items()}
    return subprocess.Popen([sys.executable, "-m", "tests.events.proc_worker", url, name, mode], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True, env={**os.environ, **bus, "PYTHONPATH": str(ROOT)})


def _publish_many(db: Database, n: int, sources: list[str] | None = None) -> list[str]:
    scope = make_tenant(db, "acme").scope
    ids = []
    with db.transaction() as tx:
        for source in sources or [f"s{i}" for i in range(n)]:
            event = publish(tx, type="test.happened", tenant_id=scope.tenant_id, source_id=source)
            assert event is not None
            ids.append(event.id)
    return ids


def _statuses(db: Database) -> dict[str, int]:
    with db.transaction(write=False) as tx:
        rows = tx.all("SELECT status, count(*) FROM event_outbox GROUP BY status")
    return {str(status): int(n) for status, n in rows}


@pytest.mark.slow
def test_a_handler_that_kills_its_worker_is_dead_lettered_and_its_batch_mates_are_handled(db_url: str) -> None:
    """The crasher is the oldest of its batch, so it runs first and takes the batch's transaction down with
    the process.  Workers are restarted as a supervisor would; every claim counts as an attempt."""
    db = Database(db_url)
    try:
        ids = _publish_many(db, 10, ["crash", *(f"mate-{i}" for i in range(9))])
        crasher, mates = ids[0], ids[1:]
        exits = []
        deadline = time.monotonic() + 90
        while _statuses(db).keys() - {"done", "dead"} and time.monotonic() < deadline:
            process = _worker(db_url, f"w{len(exits)}", "drain-crashing", lease_seconds=1, max_attempts=3,
                              batch_size=10)
            exits.append(process.wait(timeout=60))
        assert _statuses(db) == {"done": 9, "dead": 1}
        assert exits.count(3) == 3  # the crasher killed a worker once per attempt, and no more
        assert status_of(db, crasher) == ("dead", 3, "worker stopped 3 times while handling it")
        assert {status_of(db, i)[0] for i in mates} == {"done"}  # type: ignore[index]
        with db.transaction(write=False) as tx:
            handled = tx.all("SELECT target_id, count(*) FROM org_audit GROUP BY target_id")
            [(dead_counted,)] = tx.all("SELECT sum(total) FROM event_bus_counters WHERE name = :n",
                                       {"n": counters.DEAD_LETTER})
        assert sorted(handled) == sorted((f"mate-{i}", 1) for i in range(9))  # each once: exactly-once effects
        assert dead_counted == 1
        [letter] = dead_letters(db).letters
        assert letter.event.source_id == "crash" and letter.attempts == 3
    finally:
        db.dispose()


def _wait_for(condition: object, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.mark.slow
@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
def test_ctrl_c_and_sigterm_leave_no_claim(db_url: str, stop_signal: signal.Signals) -> None:
    """A worker stopped mid-batch gives back every event it claimed, at once and without counting the
    attempt: nothing waits for a lease to run out."""
    db = Database(db_url)
    try:
        ids = _publish_many(db, 10)
        process = _worker(db_url, "stopped", "serve-slow", concurrency=2, batch_size=3, lease_seconds=60)
        _wait_for(lambda: _statuses(db).get("processing", 0) == 6, timeout=30)  # two batches, in their 30 s stage
        started = time.monotonic()
        process.send_signal(stop_signal)
        assert process.wait(timeout=10) == 0
        assert time.monotonic() - started < 5
        assert _statuses(db) == {"pending": 10}
        assert {status_of(db, i)[1] for i in ids} == {0}  # type: ignore[index]
        assert count(db, "org_audit") == 0
    finally:
        db.dispose()


@pytest.mark.slow
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
    truncate_all(pg_migrated_url)
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
