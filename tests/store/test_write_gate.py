"""SQLite's writers of one process take the write lock in turn (first come, first served), never sleep in
SQLite's busy handler after it came free, and a writer that could never get it fails instead of hanging."""

from __future__ import annotations

import os
import threading
import time

import pytest

from agentfy.store import db as db_module
from agentfy.store.db import Database
from agentfy.store.errors import UnavailableError
from agentfy.store.pool import PoolSettings
from agentfy.store.write_gate import GateTimeout, WriteGate


def test_waiting_writers_are_let_in_in_the_order_they_came() -> None:
    gate = WriteGate()
    gate.acquire(1)
    order: list[int] = []
    threads = []
    for number in range(5):
        thread = threading.Thread(target=lambda n=number: (gate.acquire(5), order.append(n), gate.release()))
        thread.start()
        threads.append(thread)
        deadline = time.monotonic() + 5
        while len(gate._waiting) < number + 1 and time.monotonic() < deadline:  # queued before the next comes
            time.sleep(0.001)
    gate.release()
    for thread in threads:
        thread.join(5)
    assert order == [0, 1, 2, 3, 4]
    gate.acquire(0.01)  # and it is free again
    gate.release()


def test_a_writer_that_is_never_let_in_gives_up_after_the_timeout_and_leaves_the_queue() -> None:
    gate = WriteGate()
    gate.acquire(1)
    started = time.monotonic()
    with pytest.raises(GateTimeout):
        gate.acquire(0.1)
    assert 0.09 < time.monotonic() - started < 3
    assert not gate._waiting  # a writer that gave up is not handed the gate later
    gate.release()
    gate.acquire(0.01)


def test_a_hand_over_that_races_the_timeout_is_kept_not_lost() -> None:
    gate = WriteGate()
    gate.acquire(1)
    turn = threading.Lock()
    turn.acquire()
    gate._waiting.append(turn)
    gate.release()  # handed to the queued writer: the gate stays held
    assert gate._held and not gate._waiting
    with pytest.raises(GateTimeout):  # nobody else gets it meanwhile
        gate.acquire(0.05)


def test_concurrent_sqlite_writers_never_meet_the_lock_held(sqlite_db: Database) -> None:
    """Every pooled connection is told not to wait at all for a held lock (busy timeout 0): any two writers of
    the process that met at SQLite would fail.  In turn, all of them commit."""
    database = Database(sqlite_db.url, pool=PoolSettings(pool_size=8, max_overflow=0))
    try:
        with database.transaction() as tx:
            tx.execute("CREATE TABLE gate_probe (n INTEGER NOT NULL)")
        opened = threading.Barrier(8)

        def impatient() -> None:
            with database.transaction(write=False) as tx:
                tx.execute("PRAGMA busy_timeout = 0")
                opened.wait(10)  # all eight connections open at once: each is one of the pool's

        each = [threading.Thread(target=impatient) for _ in range(8)]
        for thread in each:
            thread.start()
        for thread in each:
            thread.join(10)
        assert database.pool.idle == 8
        failures: list[BaseException] = []

        def write(number: int) -> None:
            try:
                for _ in range(40):
                    with database.transaction() as tx:
                        tx.execute("INSERT INTO gate_probe (n) VALUES (:n)", {"n": number})
                        tx.scalar("SELECT count(*) FROM gate_probe")
            except BaseException as error:
                failures.append(error)

        writers = [threading.Thread(target=write, args=(n,)) for n in range(8)]
        for thread in writers:
            thread.start()
        for thread in writers:
            thread.join(60)
        assert not failures
        with database.transaction(write=False) as tx:
            assert tx.scalar("SELECT count(*) FROM gate_probe") == 320
        assert database._write_gate._held is False
    finally:
        database.dispose()


def test_a_failed_or_rolled_back_write_lets_the_next_writer_in_at_once(sqlite_db: Database) -> None:
    with pytest.raises(RuntimeError), sqlite_db.transaction() as tx:
        tx.scalar("SELECT 1")
        raise RuntimeError("the block failed")
    with sqlite_db.transaction() as tx:
        tx.scalar("SELECT 1")
        tx.rollback()
    started = time.monotonic()
    with sqlite_db.transaction() as tx:
        assert tx.scalar("SELECT 1") == 1
    assert time.monotonic() - started < 1
    assert sqlite_db._write_gate._held is False


def test_a_write_committed_callback_may_write_again(sqlite_db: Database) -> None:
    written: list[int] = []

    def again() -> None:
        with sqlite_db.transaction() as tx:
            written.append(tx.scalar("SELECT 2"))

    with sqlite_db.transaction() as tx:
        tx.after_commit(again)
    assert written == [2]


def test_a_write_begun_inside_another_of_the_same_thread_fails_after_the_busy_timeout_never_hangs(
        sqlite_db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(db_module, "SQLITE_BUSY_TIMEOUT_MS", 200)
    started = time.monotonic()
    with sqlite_db.transaction() as outer:
        outer.scalar("SELECT 1")
        with pytest.raises(UnavailableError, match="locked by another writer"), sqlite_db.transaction():
            pass
    assert 0.15 < time.monotonic() - started < 5
    with sqlite_db.transaction() as tx:  # nothing was left held
        assert tx.scalar("SELECT 1") == 1


def test_postgresql_writers_do_not_queue_in_the_process(pg_db: Database) -> None:
    """PostgreSQL's writers lock rows, not the database: two at once in one thread is fine there."""
    with pg_db.transaction() as first, pg_db.transaction() as second:  # two writers at once, one thread
        assert first.scalar("SELECT 1") == second.scalar("SELECT 1") == 1


def test_a_forked_child_starts_with_the_gate_free() -> None:
    gate = WriteGate()
    gate.acquire(1)  # held by this (the parent's) thread at the fork
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports by its exit status
        try:
            gate.acquire(0.5)
            os._exit(0)
        except BaseException:
            os._exit(1)
    _, status = os.waitpid(child, 0)
    gate.release()
    assert os.waitstatus_to_exitcode(status) == 0


def test_two_handles_on_one_file_share_the_gate(sqlite_db: Database) -> None:
    other = Database(sqlite_db.url)
    try:
        assert other._write_gate is sqlite_db._write_gate
    finally:
        other.dispose()
