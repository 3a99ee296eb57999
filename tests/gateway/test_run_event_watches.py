"""Run events are broadcast to the other gateway processes only while one of them has WebSocket subscribers of
the run's tenant (PostgreSQL): a message nobody elsewhere watches costs no notification, and a subscriber of
another process still gets every run event of its tenant — including after its watch was refreshed, and for
a while after the publishing process (re)connected, when it cannot yet know who watches."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from agentfy.gateway.rpc import watches
from agentfy.gateway.rpc.broadcast import Broadcaster, Subscriber, broadcaster_for
from agentfy.gateway.rpc.watches import Watches
from agentfy.identity import AgentId, AgentKey
from agentfy.identity.keys import TenantSlug
from agentfy.ids import format_id
from agentfy.runtime.events import RUN_STARTED, AgentEvent
from agentfy.store.db import Database
from tests.gateway.test_ws import _Inbox

ORG_A, ORG_B, MINE, NOBODY = (format_id("org") for _ in range(4))


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# -- what one process knows (no database) ------------------------------------------------------------------------
def test_every_run_event_is_broadcast_until_the_watchers_can_have_been_heard() -> None:
    clock = Clock()
    known = Watches(clock=clock)
    assert known.wanted("org-a")  # just started: a watcher's next refresh has not arrived yet
    clock.now += watches.BLIND_SECONDS
    assert not known.wanted("org-a")
    assert known.unwatched == 1
    known.reset()  # the listening connection was lost or is back: markers may have been missed
    assert known.wanted("org-a")
    clock.now += watches.BLIND_SECONDS
    assert not known.wanted("org-a")


def test_another_process_s_marker_makes_its_tenant_wanted_until_the_watch_lapses() -> None:
    clock = Clock()
    known = Watches(clock=clock)
    clock.now += watches.BLIND_SECONDS
    assert known.heard("their-token", "org-a") is False
    assert known.wanted("org-a") and not known.wanted("org-b")
    clock.now += watches.WATCH_SECONDS - 1
    assert known.heard("their-next-token", "org-a") is False  # a refresh
    clock.now += watches.WATCH_SECONDS - 1
    assert known.wanted("org-a")
    assert known.watched() == {"org-a": clock.now + 1}
    clock.now += 1
    assert not known.wanted("org-a") and known.watched() == {}


def test_this_process_s_own_markers_never_make_it_broadcast() -> None:
    clock = Clock()
    known = Watches(clock=clock)
    clock.now += watches.BLIND_SECONDS
    known.mine(["mine", "failed"])
    assert known.heard("mine", "org-a") is True
    assert not known.wanted("org-a")
    known.forget(["failed"])  # its transaction failed: a marker of that token would be another process's
    assert known.heard("failed", "org-a") is False
    assert known.wanted("org-a")


def test_a_marker_without_a_tenant_watches_nothing() -> None:
    """An older process's subscription marker names no tenant: it is only that process's starting point."""
    clock = Clock()
    known = Watches(clock=clock)
    clock.now += watches.BLIND_SECONDS
    assert known.heard("old-token", None) is False
    assert known.watched() == {}


# -- two processes on one PostgreSQL database ----------------------------------------------------------------------
@pytest.fixture
def processes(pg_processes: tuple[Database, Database],
              monkeypatch: pytest.MonkeyPatch) -> tuple[Database, Database]:
    """Two listening handles on one database (two processes), past their blind start, with watches refreshed
    every 0.2 s and lapsing after 1 s (a broadcaster reads these when it is made, on first use in a test)."""
    monkeypatch.setattr(watches, "BLIND_SECONDS", 0.0)
    monkeypatch.setattr(watches, "REFRESH_SECONDS", 0.2)
    monkeypatch.setattr(watches, "WATCH_SECONDS", 1.0)
    return pg_processes


def started(tenant_id: str) -> tuple[str, AgentEvent]:
    event = AgentEvent(RUN_STARTED, AgentId(format_id("agent")), AgentKey("bot"), TenantSlug("acme"),
                       run={"id": "run-1"})
    return tenant_id, event


def until(condition: Callable[[], bool], timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def sent(db: Database) -> int:
    stats = db.changes.broadcast_stats
    assert stats is not None
    return stats.sent


class Heard(_Inbox):
    """A subscriber keeping what it is given, thread-safely (the other process's listener delivers)."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()

    def deliver(self, message: dict[str, Any]) -> None:
        with self.lock:
            self.received.append(message)

    def events(self) -> list[str]:
        with self.lock:
            return [m["event"] for m in self.received]


def subscribed(broadcaster: Broadcaster, tenant_id: str, subscriber: Subscriber) -> None:
    """Subscribe and wait for the subscription's starting point (its marker back through the feed)."""
    broadcaster.subscribe(tenant_id, "acme", subscriber)
    assert until(lambda: broadcaster.subscriber_count(tenant_id) == 1)


def test_a_run_nobody_elsewhere_watches_is_not_broadcast(processes: tuple[Database, Database]) -> None:
    serving, other = processes
    mine = Heard()
    subscribed(broadcaster_for(serving), MINE, mine)  # a subscriber of the serving process only
    publisher = broadcaster_for(serving)
    before = publisher.watches.unwatched
    assert publisher.publish(*started(MINE)) == 1  # its own subscriber has it
    assert publisher.publish(*started(NOBODY)) == 0
    assert publisher.watches.unwatched == before + 2
    assert mine.events() == ["agent.run.started"]
    assert serving.changes.broadcast_stats is None or sent(serving) == 0
    assert other.changes.stats.broadcasts_received == 0


def test_a_subscriber_of_another_process_gets_the_run_events_of_its_tenant_only(
        processes: tuple[Database, Database]) -> None:
    serving, other = processes
    theirs = Heard()
    subscribed(broadcaster_for(other), ORG_A, theirs)
    publisher = broadcaster_for(serving)
    assert until(lambda: ORG_A in publisher.watches.watched())  # the marker reached the serving process
    publisher.publish(*started(ORG_A))
    publisher.publish(*started(ORG_B))  # nobody watches that tenant: not sent
    assert until(lambda: theirs.events() == ["agent.run.started"])
    assert until(lambda: sent(serving) == 1)
    assert ORG_B not in publisher.watches.watched()


def test_a_watch_is_refreshed_while_its_subscriber_stays_and_lapses_after_it_leaves(
        processes: tuple[Database, Database]) -> None:
    serving, other = processes
    theirs = Heard()
    watcher, publisher = broadcaster_for(other), broadcaster_for(serving)
    subscribed(watcher, ORG_A, theirs)
    assert until(lambda: ORG_A in publisher.watches.watched())
    time.sleep(2 * watches.WATCH_SECONDS)  # longer than a watch lasts: only the refreshes keep it
    publisher.publish(*started(ORG_A))
    assert until(lambda: theirs.events() == ["agent.run.started"])
    watcher.unsubscribe(theirs)
    assert until(lambda: ORG_A not in publisher.watches.watched(), timeout=3 * watches.WATCH_SECONDS)
    assert not publisher.watches.wanted(ORG_A)


def test_after_its_listener_reconnects_a_process_broadcasts_everything_for_a_while(
        processes: tuple[Database, Database], monkeypatch: pytest.MonkeyPatch) -> None:
    serving, _other = processes
    publisher = broadcaster_for(serving)
    assert not publisher.watches.wanted(ORG_A)
    monkeypatch.setattr(watches, "BLIND_SECONDS", 60.0)
    serving.changes.lost("the listening connection was lost")  # markers may have been missed meanwhile
    assert publisher.watches.wanted(ORG_A)
