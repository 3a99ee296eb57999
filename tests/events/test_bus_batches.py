"""Batches (both engines): one transaction with a savepoint per event, attempts counted per claim, suspects
claimed alone, staged handlers, lease renewal, handler timeouts and a worker that stops mid-batch."""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

import pytest

from agentfy.events import counters
from agentfy.events import heartbeat as heartbeat_module
from agentfy.events import worker as worker_module
from agentfy.events.admin import status_of
from agentfy.events.event import DomainEvent
from agentfy.events.handlers import DeterministicEventError, fan_out
from agentfy.events.outbox import claim, publish
from agentfy.events.settings import BusSettings
from agentfy.events.worker import Worker
from agentfy.identity import Scope
from agentfy.store.db import Database, Tx
from agentfy.store.errors import StoreError
from agentfy.store.repos import audit
from tests.helpers.tenants import make_tenant
from tests.store.helpers import count

FAST = BusSettings(backoff_base_seconds=0, backoff_max_seconds=0, max_attempts=3, lease_seconds=30, batch_size=10)


def publish_all(db: Database, scope: Scope, sources: list[str]) -> list[str]:
    ids = []
    with db.transaction() as tx:
        for source in sources:
            event = publish(tx, type="test.happened", tenant_id=scope.tenant_id, source_id=source)
            assert event is not None
            ids.append(event.id)
    return ids


def audited(db: Database) -> list[str]:
    with db.transaction(write=False) as tx:
        return sorted(str(row[0]) for row in tx.all("SELECT target_id FROM org_audit"))


def record(tx: Tx, scope: Scope, event: DomainEvent) -> None:
    audit.record_audit(tx, scope, action="handled", target_id=event.source_id)


def test_a_failing_event_rolls_back_alone_and_its_batch_is_acknowledged(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    ids = publish_all(db, acme, ["a", "flaky", "b", "refused", "c"])

    def handler(tx: Tx, scope: Scope, event: DomainEvent) -> None:
        record(tx, scope, event)  # written, then rolled back with the event's savepoint when it fails
        if event.source_id == "flaky":
            raise ConnectionError("the model timed out")
        if event.source_id == "refused":
            raise DeterministicEventError("payload has no session_key")

    worker = Worker(db, {"test.happened": handler}, settings=FAST)
    outcomes = worker.handle_batch(claim(db, worker.name, ["test.happened"], settings=FAST))
    assert [o.status for o in outcomes] == ["done", "pending", "done", "dead", "done"]
    assert audited(db) == ["a", "b", "c"]
    assert [status_of(db, i) for i in ids] == [
        ("done", 1, None), ("pending", 1, "ConnectionError: the model timed out"), ("done", 1, None),
        ("dead", 1, "DeterministicEventError: payload has no session_key"), ("done", 1, None)]
    assert worker.run_once() == 1 and audited(db) == ["a", "b", "c"]  # the retry fails again: still no effect


def test_every_claim_is_an_attempt_and_a_stopped_worker_makes_its_events_suspects(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    ids = publish_all(db, acme, ["first", "second", "third"])
    short = FAST.model_copy(update={"lease_seconds": 0.2})
    assert [c.attempt for c in claim(db, "dies", ["test.happened"], settings=short)] == [1, 1, 1]
    time.sleep(0.3)  # the worker died: its leases run out
    singles = [claim(db, "next", ["test.happened"], settings=short) for _ in range(3)]
    assert [[(c.event.id, c.attempt, c.stops) for c in batch] for batch in singles] == [
        [(ids[0], 2, 1)], [(ids[1], 2, 1)], [(ids[2], 2, 1)]]  # suspects: one at a time, oldest first


def test_a_repeat_crasher_waits_behind_its_batch_mates_and_is_dead_lettered_at_its_limit(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    crasher, mate = publish_all(db, acme, ["crash", "mate"])
    short = FAST.model_copy(update={"lease_seconds": 0.1, "max_attempts": 3})

    def lapse() -> list[tuple[str, int]]:  # a claim whose worker dies, then the lease runs out
        held = claim(db, "dies", ["test.happened"], settings=short)
        time.sleep(0.15)
        return [(c.event.id, c.attempt) for c in held]

    assert lapse() == [(crasher, 1), (mate, 1)]
    assert lapse() == [(crasher, 2)]  # suspects alone; the crasher is the oldest
    assert lapse() == [(mate, 2)]  # fewer stops first: the batch-mate gets its turn
    assert lapse() == [(crasher, 3)]
    # the next claim's sweep dead-letters the crasher (3 deliveries, all ended by a stopped worker)
    assert [(c.event.id, c.attempt) for c in claim(db, "next", ["test.happened"], settings=short)] == [(mate, 3)]
    assert status_of(db, crasher) == ("dead", 3, "worker stopped 3 times while handling it")
    with db.transaction(write=False) as tx:
        assert tx.scalar("SELECT total FROM event_bus_counters WHERE name = :n", {"n": counters.DEAD_LETTER}) == 1


def test_a_worker_stopping_mid_batch_writes_what_it_finished_and_gives_back_the_rest(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    ids = publish_all(db, acme, ["a", "b", "c"])
    worker = Worker(db, {}, settings=FAST)

    class StopsTheWorker:
        def read(self, tx: Tx, scope: Scope, event: DomainEvent) -> str:
            return event.source_id

        def compute(self, source: str) -> str:
            if source == "b":
                worker.stop.set()  # SIGINT arrives while "b" is computed
                time.sleep(5)
            return source

        def write(self, tx: Tx, scope: Scope, event: DomainEvent, inputs: str, result: str) -> None:
            record(tx, scope, event)

    worker.__init__(db, {"test.happened": StopsTheWorker()}, name=worker.name, settings=FAST)  # type: ignore[misc]
    started = time.monotonic()
    outcomes = worker.handle_batch(claim(db, worker.name, ["test.happened"], settings=FAST))
    assert time.monotonic() - started < 2  # the 5 s stage was abandoned, not waited for
    assert [o.status for o in outcomes] == ["done", "released", "released"]
    assert audited(db) == ["a"]
    assert [status_of(db, i) for i in ids] == [("done", 1, None), ("pending", 0, None), ("pending", 0, None)]


class SlowStage:
    """A staged handler whose computation takes ``seconds`` with no transaction open."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.runs: list[str] = []

    def read(self, tx: Tx, scope: Scope, event: DomainEvent) -> str:
        return event.source_id

    def compute(self, source: str) -> str:
        self.runs.append(source)
        time.sleep(self.seconds)
        return source.upper()

    def write(self, tx: Tx, scope: Scope, event: DomainEvent, inputs: str, result: str) -> None:
        audit.record_audit(tx, scope, action="handled", target_id=result)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["staged", "plain"])
def test_a_handler_slower_than_the_lease_runs_once_thanks_to_renewal(db: Database, kind: str) -> None:
    """The lease is 1 s, the handler takes 2.5 s, and a second worker claims all along."""
    acme = make_tenant(db, "acme").scope
    [event_id] = publish_all(db, acme, ["slow"])
    settings = FAST.model_copy(update={"lease_seconds": 1.0, "renew_seconds": 0.25, "poll_seconds": 0.05})
    stage = SlowStage(2.5)
    runs: list[str] = []

    def slow_plain(tx: Tx, scope: Scope, event: DomainEvent) -> None:  # holds the write transaction
        runs.append(event.source_id)
        time.sleep(2.5)
        audit.record_audit(tx, scope, action="handled", target_id="SLOW")

    handler: Any = stage if kind == "staged" else slow_plain
    stop = threading.Event()
    workers = [Worker(db, {"test.happened": handler}, settings=settings) for _ in range(2)]
    first = threading.Thread(target=workers[0].run_once)
    first.start()
    time.sleep(0.1)  # the first worker holds the event; the second keeps trying
    second = threading.Thread(target=workers[1].run_forever, args=(stop,))
    second.start()
    first.join()
    time.sleep(0.3)
    stop.set()
    second.join()
    assert (stage.runs if kind == "staged" else runs) == ["slow"]
    assert status_of(db, event_id) == ("done", 1, None)
    assert audited(db) == ["SLOW"]


def test_a_renewal_in_flight_when_the_batch_writes_holds_up_no_writer(
        db: Database, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """The heartbeat's renewal starts just as the batch's write transaction has locked its events: on SQLite
    the renewal queues for the write lock that transaction holds.  The batch must not wait for it (it did, for
    the busy timeout, 5 s, and every writer of the process with it), and the late renewal changes nothing."""
    acme = make_tenant(db, "acme").scope
    [event_id] = publish_all(db, acme, ["x"])
    renewing = threading.Event()
    real_renew, real_acknowledge = heartbeat_module.renew, worker_module.acknowledge

    def renew(*args: Any, **kwargs: Any) -> int:
        renewing.set()
        return real_renew(*args, **kwargs)

    def acknowledge(tx: Tx, worker: str, event_ids: Any) -> set[str]:
        assert renewing.wait(5)  # a renewal has started: on SQLite it now waits for this transaction
        time.sleep(0.2)
        return real_acknowledge(tx, worker, event_ids)

    monkeypatch.setattr(heartbeat_module, "renew", renew)
    monkeypatch.setattr(worker_module, "acknowledge", acknowledge)
    settings = FAST.model_copy(update={"renew_seconds": 0.05})
    started = time.monotonic()
    Worker(db, {"test.happened": fan_out(SlowStage(0.1), record)}, settings=settings).run_once()
    assert time.monotonic() - started < 2.5  # not the 5 s busy timeout
    assert status_of(db, event_id) == ("done", 1, None)
    assert audited(db) == ["X", "x"]
    assert "eventbus.renew_failed" not in caplog.text


def test_a_staged_handler_past_its_timeout_fails_the_attempt_and_writes_nothing(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    [event_id] = publish_all(db, acme, ["slow"])
    settings = FAST.model_copy(update={"handler_timeout_seconds": 0.2})
    started = time.monotonic()
    Worker(db, {"test.happened": SlowStage(3)}, settings=settings).run_once()
    assert time.monotonic() - started < 1.5
    status, attempts, error = status_of(db, event_id) or ("missing", 0, None)
    assert (status, attempts) == ("pending", 1) and "did not finish within 0.2 s" in (error or "")
    assert count(db, "org_audit") == 0


def test_a_plain_handler_past_its_timeout_has_its_writes_rolled_back(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    [event_id] = publish_all(db, acme, ["slow"])

    def slow(tx: Tx, scope: Scope, event: DomainEvent) -> None:
        record(tx, scope, event)
        time.sleep(0.3)

    Worker(db, {"test.happened": slow}, settings=FAST.model_copy(update={"handler_timeout_seconds": 0.1})).run_once()
    assert status_of(db, event_id)[:2] == ("pending", 1)  # type: ignore[index]
    assert count(db, "org_audit") == 0


def test_a_staged_computation_runs_with_no_transaction_open(db: Database) -> None:
    """While ``compute`` runs, another writer gets through at once (on SQLite a held write lock would make it
    wait for the busy timeout, then fail)."""
    acme = make_tenant(db, "acme").scope
    publish_all(db, acme, ["x"])
    seen: list[str] = []

    class Probe:
        def read(self, tx: Tx, scope: Scope, event: DomainEvent) -> str:
            seen.append("read")
            return "inputs"

        def compute(self, inputs: str) -> str:
            started = time.monotonic()
            with db.transaction() as tx:
                publish(tx, type="other.happened", tenant_id=acme.tenant_id, source_id="meanwhile")
            thread = "a handler thread" if threading.current_thread().name.startswith("agentfy-handler") else "?"
            seen.append(f"compute {inputs} in {thread}, a write took "
                        f"{'under' if time.monotonic() - started < 1 else 'over'} 1 s")
            return "result"

        def write(self, tx: Tx, scope: Scope, event: DomainEvent, inputs: str, result: str) -> None:
            seen.append(f"write {inputs} {result}")

    Worker(db, {"test.happened": fan_out(Probe(), record)}, settings=FAST).run_once()
    assert seen == ["read", "compute inputs in a handler thread, a write took under 1 s", "write inputs result"]
    assert audited(db) == ["x"]


def test_a_handler_that_breaks_the_transaction_fails_alone_in_the_end(db: Database) -> None:
    """A handler that swallows a database error leaves the transaction unusable (PostgreSQL) or
    uncommittable (SQLite): the whole batch fails, each event counts the attempt and is retried alone, so
    the batch-mates get through and the culprit is dead-lettered at its limit."""
    acme = make_tenant(db, "acme").scope
    ids = publish_all(db, acme, ["a", "swallow", "b"])

    def handler(tx: Tx, scope: Scope, event: DomainEvent) -> None:
        if event.source_id == "swallow":
            with contextlib.suppress(StoreError):  # the bug: the transaction is broken all the same
                tx.execute("SELECT * FROM no_such_table")
        record(tx, scope, event)

    worker = Worker(db, {"test.happened": handler}, settings=FAST)
    for _ in range(10):
        try:
            if not worker.run_once():
                break
        except StoreError:
            continue  # the batch failed as a whole (run_forever logs and goes on)
    assert audited(db) == ["a", "b"]
    assert [status_of(db, i)[0] for i in ids] == ["done", "dead", "done"]  # type: ignore[index]
    assert status_of(db, ids[1])[1] == 3  # type: ignore[index]
