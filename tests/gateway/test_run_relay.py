"""A run event's trip to another gateway process: its broadcast bodies (a long delta split into pieces that
fit a notification and join to its text), what a body that cannot be read does (nothing), and the
receiving broadcaster's choice of subscribers (PostgreSQL)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentfy.gateway.rpc.broadcast import Subscriber, broadcaster_for
from agentfy.gateway.rpc.run_relay import RunEventFormatError, decode_run_event, encode_run_event, split_text
from agentfy.identity import AgentId, AgentKey
from agentfy.identity.keys import TenantSlug
from agentfy.ids import format_id
from agentfy.runtime.events import REPLIED, RUN_DELTA, RUN_STARTED, AgentEvent
from agentfy.store.changefeed import broadcasts
from agentfy.store.changefeed.broadcasts import BODY_LIMIT_BYTES, frame
from agentfy.store.db import Database

TENANT = format_id("org")
USER = format_id("user")
AGENT = AgentId(format_id("agent"))


def delta(text: str, *, scope: str | None = USER) -> AgentEvent:
    return AgentEvent(RUN_DELTA, AGENT, AgentKey("bot"), TenantSlug("acme"), run={"id": "run-1", "text": text},
                      scope_user_id=scope)


def texts(bodies: list[str]) -> list[str]:
    return [decode_run_event(body)[1].run["text"] for body in bodies]  # type: ignore[index]


def test_an_event_round_trips_with_its_tenant_and_scope_which_clients_never_see() -> None:
    event = delta("hello")
    [body] = encode_run_event(TENANT, event)
    assert decode_run_event(body) == (TENANT, event)
    assert "scope_user_id" not in json.dumps(event.message()) and USER not in json.dumps(event.message())
    started = AgentEvent(RUN_STARTED, AGENT, AgentKey("bot"), TenantSlug("acme"), run={"id": "run-1"})
    assert decode_run_event(encode_run_event(TENANT, started)[0]) == (TENANT, started)


def test_a_long_delta_of_many_byte_characters_becomes_pieces_that_fit_and_join_to_it() -> None:
    text = ("Grüße, 世界! \U0001f600 \"quoted\"\n\\ " * 1000)  # far over 8000 bytes, in UTF-8 and escaped
    assert len(text.encode()) > 8000
    bodies = encode_run_event(TENANT, delta(text))
    assert len(bodies) > 1
    assert all(len(body.encode()) <= BODY_LIMIT_BYTES < 8000 for body in bodies)
    assert "".join(texts(bodies)) == text
    assert all(decode_run_event(body)[1].scope_user_id == USER for body in bodies)  # every piece keeps its scope


@given(st.text(max_size=6000), st.integers(min_value=12, max_value=400))
def test_split_then_join_is_the_text_and_every_piece_fits(text: str, room: int) -> None:
    pieces = split_text(text, room)
    assert "".join(pieces) == text
    assert all(len(json.dumps(piece)) - 2 <= room for piece in pieces)


@given(st.text(min_size=1, max_size=3000))
def test_every_body_of_a_delta_fits_one_notification(text: str) -> None:
    bodies = encode_run_event(TENANT, delta(text * 4), limit=2000)
    assert all(len(body.encode()) <= 2000 for body in bodies)
    assert "".join(texts(bodies)) == text * 4


def test_only_a_delta_is_split() -> None:
    event = AgentEvent(REPLIED, AGENT, AgentKey("bot"), TenantSlug("acme"), run={"id": "r" * 9000})
    with pytest.raises(ValueError, match=r"agent\.replied event of \d+ bytes exceeds the 7959-byte broadcast limit"):
        encode_run_event(TENANT, event)


@pytest.mark.parametrize("body", [
    "", "not json", "[]", '{"v": 2}',
    '{"v": 1, "t": "TENANT", "e": "agent.created", "i": "AGENT", "k": "bot", "s": "acme"}',  # not a run event
    '{"v": 1, "t": 5, "e": "agent.replied", "i": "AGENT", "k": "bot", "s": "acme"}',
    '{"v": 1, "t": "TENANT", "e": "agent.replied", "i": "AGENT", "k": "bot", "s": "acme", "r": {"id": 1}}',
    '{"v": 1, "t": "TENANT", "e": "agent.replied", "i": "AGENT", "k": "bot", "s": "acme", "u": 7}',
    '{"v": 1, "t": "team-calm-rivers-k8m4p2d7n9x3", "e": "agent.replied", "i": "AGENT", "k": "bot", "s": "acme"}',
    '{"v": 1, "t": "TENANT", "e": "agent.replied", "i": "AGENT", "k": "AGENT", "s": "acme"}',  # an ID as the key
])
def test_a_body_that_is_not_a_run_event_is_a_format_error(body: str) -> None:
    with pytest.raises(RunEventFormatError):
        decode_run_event(body.replace("TENANT", TENANT).replace("AGENT", AGENT))


@given(st.text(max_size=200))
def test_decoding_anything_gives_a_run_event_or_a_format_error(body: str) -> None:
    with contextlib.suppress(RunEventFormatError):
        decode_run_event(body)


# -- the receiving broadcaster (PostgreSQL) -----------------------------------------------------------------------
@pytest.fixture
def listening(pg_db: Database) -> Iterator[Database]:
    """A handle on the database listening as a gateway process does."""
    db = Database(pg_db.url)
    assert db.changes.start_listening(db.conninfo) and db.changes.wait_listening(10)
    try:
        yield db
    finally:
        db.changes.stop_listening()
        db.dispose()


def notify(db: Database, *bodies: str) -> None:
    """Bodies broadcast as another process would (a foreign origin)."""
    with psycopg.connect(db.conninfo, autocommit=True) as connection:
        for sequence, body in enumerate(bodies, 1):
            connection.execute("SELECT pg_notify(%s, %s)", (broadcasts.CHANNEL, frame("f" * 16, sequence, body)))


def test_another_process_s_run_events_reach_the_tenant_s_subscribers_and_a_delta_only_its_person(
        listening: Database, caplog: pytest.LogCaptureFixture) -> None:
    other_tenant = format_id("org")

    async def scenario() -> dict[str, list[dict[str, Any]]]:
        loop = asyncio.get_running_loop()
        subscribers = {"person": Subscriber(loop), "colleague": Subscriber(loop), "stranger": Subscriber(loop)}
        subscribers["person"].user_id = USER
        subscribers["colleague"].user_id = format_id("user")
        broadcaster = broadcaster_for(listening)
        for name, subscriber in subscribers.items():
            await asyncio.to_thread(broadcaster.subscribe, other_tenant if name == "stranger" else TENANT, "acme",
                                    subscriber)
        deadline = time.monotonic() + 10
        while any(s.marker for s in subscribers.values()) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)  # each subscription starts when its marker comes back through the feed
        started = AgentEvent(RUN_STARTED, AGENT, AgentKey("bot"), TenantSlug("acme"), run={"id": "run-1"})
        bodies = [*encode_run_event(TENANT, started), "garbage", *encode_run_event(TENANT, delta("hi"))]
        await asyncio.to_thread(notify, listening, *bodies)
        seen: dict[str, list[dict[str, Any]]] = {name: [] for name in subscribers}
        while len(seen["person"]) < 2 and time.monotonic() < deadline:
            await asyncio.wait_for(subscribers["person"].wait(), 10)
            seen["person"] += subscribers["person"].take()
        await asyncio.sleep(0.1)
        for name in ("colleague", "stranger"):
            seen[name] += subscribers[name].take()
        for subscriber in subscribers.values():
            broadcaster.unsubscribe(subscriber)
        return seen

    seen = asyncio.run(scenario())
    assert [m["event"] for m in seen["person"]] == [RUN_STARTED, RUN_DELTA]
    assert seen["person"][1]["run"] == {"id": "run-1", "text": "hi"}
    assert [m["event"] for m in seen["colleague"]] == [RUN_STARTED]  # no text of a conversation not theirs
    assert seen["stranger"] == []  # another tenant's subscriber hears nothing
    assert "ws.run_event_undecodable" in caplog.text  # the unreadable body was skipped, nothing else
