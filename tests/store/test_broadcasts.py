"""Broadcasts: bodies one process sends reach every other process's handlers once, in order, never its own;
outside any transaction, without flushing a cache, on the same one listening connection (PostgreSQL)."""

from __future__ import annotations

import contextlib
import threading
import time

import psycopg
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentfy.store.changefeed import broadcasts, publisher
from agentfy.store.changefeed.broadcasts import BODY_LIMIT_BYTES, Broadcast, BroadcastFormatError, frame, unframe
from agentfy.store.changefeed.listener import APPLICATION_NAME
from agentfy.store.db import Database

ORIGIN = "0123456789abcdef"


class Heard:
    """The broadcasts a feed hands over, and its resets (bound methods: the feed holds them weakly)."""

    def __init__(self, db: Database) -> None:
        self.bodies: list[str] = []
        self.resets: list[str] = []
        self.arrived = threading.Condition()
        db.changes.on_broadcast(self.on_broadcast)
        db.changes.on_reset(self.on_reset)

    def on_broadcast(self, body: str) -> None:
        with self.arrived:
            self.bodies.append(body)
            self.arrived.notify_all()

    def on_reset(self, reason: str) -> None:
        self.resets.append(reason)

    def wait(self, count: int, timeout: float = 10) -> list[str]:
        with self.arrived:
            self.arrived.wait_for(lambda: len(self.bodies) >= count, timeout)
        return list(self.bodies)


# -- the frame ----------------------------------------------------------------------------------------------------
def test_a_frame_round_trips_whatever_the_body() -> None:
    for body in ("", "{}", "a:b:c", "é\U0001f600"):
        assert unframe(frame(ORIGIN, 42, body)) == Broadcast(ORIGIN, body)


@pytest.mark.parametrize("payload", ["", "no-colons", f"{ORIGIN}:1", f"{ORIGIN[:-1]}:1:x", f"{ORIGIN}:x:body",
                                     f"{ORIGIN.upper()}:1:body", f"{ORIGIN}:-1:body",
                                     f"{ORIGIN}:\u0661:body"])  # a digit, but not an ASCII one
def test_a_payload_that_is_not_a_frame_is_a_format_error(payload: str) -> None:
    with pytest.raises(BroadcastFormatError, match="not a broadcast"):
        unframe(payload)


@given(st.text(max_size=100))
def test_unframing_anything_gives_a_broadcast_or_a_format_error(payload: str) -> None:
    with contextlib.suppress(BroadcastFormatError):
        unframe(payload)


def test_on_sqlite_nothing_is_sent_and_a_body_over_the_limit_is_refused(sqlite_db: Database) -> None:
    assert not sqlite_db.changes.broadcasts
    assert sqlite_db.changes.broadcast("{}") is False
    with pytest.raises(ValueError, match=f"exceeds the {BODY_LIMIT_BYTES}-byte limit"):
        broadcasts.check_body("é" * BODY_LIMIT_BYTES)


# -- between processes (PostgreSQL; the pg_processes fixture: two listening handles) ---------------------------
def test_broadcasts_reach_the_other_process_once_in_order_and_never_the_sender(
        pg_processes: tuple[Database, Database]) -> None:
    sender, other = pg_processes
    mine, theirs = Heard(sender), Heard(other)
    bodies = [f"piece {n % 7}" for n in range(2000)]  # equal bodies too: each one arrives
    bodies.append("é" * (BODY_LIMIT_BYTES // 2))  # the longest a body may be
    for body in bodies:
        assert sender.changes.broadcast(body)
    assert theirs.wait(len(bodies)) == bodies
    time.sleep(0.1)
    assert mine.bodies == [] and len(theirs.bodies) == len(bodies)
    assert mine.resets == [] and theirs.resets == []  # a broadcast is no change: nothing is flushed
    assert other.changes.stats.broadcasts_received == len(bodies)


def test_an_unreadable_broadcast_is_logged_and_skipped_and_the_next_one_arrives(
        pg_processes: tuple[Database, Database], caplog: pytest.LogCaptureFixture) -> None:
    sender, other = pg_processes
    heard = Heard(other)
    with psycopg.connect(sender.conninfo, autocommit=True) as connection:
        connection.execute("SELECT pg_notify(%s, %s)", (broadcasts.CHANNEL, "garbage"))
    sender.changes.broadcast("after")
    assert heard.wait(1) == ["after"]
    assert other.changes.stats.undecodable_broadcasts == 1
    assert heard.resets == [] and other.changes.cacheable
    assert "changefeed.undecodable_broadcast" in caplog.text


def test_broadcasting_keeps_one_listening_connection_per_process(pg_processes: tuple[Database, Database]) -> None:
    sender, other = pg_processes
    heard = Heard(other)
    sender.changes.broadcast("x")
    heard.wait(1)
    with psycopg.connect(sender.conninfo, autocommit=True) as connection:
        row = connection.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s "
                                 "AND datname = current_database()", (APPLICATION_NAME,)).fetchone()
    assert row == (2,)


def test_a_broadcast_costs_the_sender_no_round_trip(pg_processes: tuple[Database, Database]) -> None:
    """Publishing is a queue append: a thousand sends take far less than one statement each would."""
    sender, other = pg_processes
    heard = Heard(other)
    sender.changes.broadcast("warm-up")  # the publishing connection is opened by the first broadcast
    heard.wait(1)
    started = time.perf_counter()
    for n in range(1000):
        sender.changes.broadcast(f"delta {n}")
    elapsed = time.perf_counter() - started
    assert len(heard.wait(1001)) == 1001
    assert elapsed < 0.1, f"1000 broadcasts took {elapsed * 1000:.1f} ms to send"


def test_a_publishing_connection_the_server_closed_is_replaced_without_losing_a_broadcast(
        pg_processes: tuple[Database, Database]) -> None:
    sender, other = pg_processes
    heard = Heard(other)
    sender.changes.broadcast("before")
    assert heard.wait(1) == ["before"]
    with psycopg.connect(sender.conninfo, autocommit=True) as connection:  # a restart, an idle timeout
        killed = connection.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                    "WHERE application_name = %s AND datname = current_database()",
                                    (publisher.APPLICATION_NAME,)).fetchone()
    assert killed == (1,)
    sender.changes.broadcast("after")
    assert heard.wait(2) == ["before", "after"]
    stats = sender.changes.broadcast_stats
    # the publisher counts a batch once its statement has returned, which may be just after it was heard
    deadline = time.monotonic() + 2
    while stats is not None and stats.sent < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert stats is not None and (stats.sent, stats.dropped) == (2, 0)
