"""Agent events for WebSocket clients: per-tenant subscriber sets fed by the change feed and the runtime.

The events themselves — their names and :class:`~agentfy.runtime.events.AgentEvent`, which names the agent by
its display identity (``agent_key`` and the tenant slug, with its ID) — are defined beside the runtime, which
publishes a run's events through :meth:`Broadcaster.publish`; this module delivers them, and makes the
``agent.*`` change events.

Where events come from: every agent change the store records (``create_agent``, ``rename_agent``,
``update_agent``, ``archive_agent``, ``delete_agent``), whichever API or process made it, reaches
:meth:`Broadcaster._on_change` through the database's change feed exactly once, after it committed, in
commit order (on PostgreSQL from the process's listening connection, so a change made through another
gateway process reaches this one's clients too).  A rolled-back change publishes nothing; a rename carries
the new key and ``previous_key``; an archived or deleted agent is ``agent.deleted`` with the key it had.
When the feed may have missed changes (its connection was lost), every subscriber gets ``events.resync``:
re-list what you show.

Only the tenant's own subscribers get an event: subscribers are kept per tenant ID, and a subscriber is
registered under the tenant of its connection's principal, never one a client names.  The broadcaster is
per :class:`~agentfy.store.db.Database` (:func:`broadcaster_for`), so every app on one database shares it.

A subscription starts exactly where :meth:`Broadcaster.subscribe` is in the feed's order: changes committed
before it returns are never delivered, changes committed after it returns always are.  Where the committing
thread delivers (SQLite) that is the moment of the call.  Where a listener delivers (PostgreSQL), a change
committed just before may still be on its way; so ``subscribe`` sends a ``feed.marker`` change through the
feed and the subscriber is *pending* until the marker comes back: the listener hears changes in commit order,
so exactly those committed before the marker are skipped.  If the listening connection is lost meanwhile,
pending subscribers become active with everyone else's ``events.resync``.

Run events cross processes too (PostgreSQL): :meth:`Broadcaster.publish` delivers a run event to this
process's subscribers at once and, when another process has subscribers of the tenant (:mod:`.watches`:
the subscription markers name their tenant), broadcasts it, in the form of :mod:`.run_relay`, through the
change feed (:mod:`agentfy.store.changefeed.broadcasts`: not a change — not transactional, no cache flushed);
every other process's listening connection hears it and its broadcaster delivers it by the same rules
(:meth:`Broadcaster._deliver`: the tenant's subscribers, a delta only to the conversation's person).  The
feed hands a process only the broadcasts of *others*, so nobody gets an event twice, and the serving
process's clients never wait for the database (nor miss their run while the listening connection is down).
A run publishes its events one after another, and the feed keeps their order on every process.

Threads: changes arrive in the committing thread or the feed's listener thread; :meth:`Subscriber.deliver`
hands each event to the subscriber's event loop with ``call_soon_threadsafe``, which keeps their order.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import secrets
import threading
import weakref
from typing import Final

from agentfy.agents.telemetry import agent_log_fields
from agentfy.gateway.rpc.run_relay import RunEventFormatError, decode_run_event, encode_run_event
from agentfy.gateway.rpc.watches import Watches, WatchRefresher
from agentfy.identity import AgentId, AgentKey
from agentfy.identity.keys import TenantSlug, parse_tenant_slug
from agentfy.runtime.events import (
    AGENT_CREATED,
    AGENT_DELETED,
    AGENT_RENAMED,
    AGENT_UPDATED,
    RUN_EVENTS,
    AgentEvent,
    Message,
)
from agentfy.store.changefeed import Change
from agentfy.store.db import Database

logger: Final = logging.getLogger("agentfy.gateway.ws")

#: Sent to a subscriber that fell behind by more than :data:`SUBSCRIBER_LIMIT` events (they were dropped).
EVENTS_DROPPED: Final = "events.dropped"
#: Sent to every subscriber when the change feed may have missed events (its connection was lost).
EVENTS_RESYNC: Final = "events.resync"
_EVENT_OF_OP: Final = {"created": AGENT_CREATED, "updated": AGENT_UPDATED, "renamed": AGENT_RENAMED,
                       "archived": AGENT_DELETED, "deleted": AGENT_DELETED}
SUBSCRIBER_LIMIT: Final = 256


class Subscriber:
    """One connection's inbox, owned by its event loop; :meth:`deliver` may be called from any thread.

    At most :data:`SUBSCRIBER_LIMIT` events wait; beyond that they are dropped and counted, and
    :meth:`take` appends one ``events.dropped`` message so the client knows to re-list.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, *, limit: int = SUBSCRIBER_LIMIT) -> None:
        self._loop = loop
        self._limit = limit
        self._pending: collections.deque[Message] = collections.deque()
        self._ready = asyncio.Event()
        self._dropped = 0
        self.tenant_id: str | None = None  # set by Broadcaster.subscribe
        #: The person the connection acts as (``None``: a key of no person): events that carry a conversation's
        #: text reach the subscriber only when that conversation's scope is this person.
        self.user_id: str | None = None
        self.marker: str | None = None  # while pending: the token of the feed marker it waits for

    def deliver(self, message: Message) -> None:
        """Queue ``message`` (from any thread); a no-op once the loop is closed."""
        with contextlib.suppress(RuntimeError):  # the connection's loop has ended
            self._loop.call_soon_threadsafe(self._offer, message)

    def _offer(self, message: Message) -> None:
        if len(self._pending) >= self._limit:
            self._dropped += 1
        else:
            self._pending.append(message)
        self._ready.set()

    async def wait(self) -> None:
        """Until something is waiting to be taken."""
        await self._ready.wait()

    def take(self) -> list[Message]:
        """Everything waiting, oldest first (call on the subscriber's loop)."""
        self._ready.clear()
        taken = list(self._pending)
        self._pending.clear()
        if self._dropped:
            taken.append({"event": EVENTS_DROPPED, "count": self._dropped})
            self._dropped = 0
        return taken


class Broadcaster:
    """Per-tenant subscriber sets for one database; thread-safe."""

    def __init__(self, db: Database) -> None:
        self._db = weakref.ref(db)  # the registry maps db -> broadcaster: a strong ref would keep db alive
        self._lock = threading.Lock()
        self._subscribers: dict[str, set[Subscriber]] = {}
        self._slugs: dict[str, TenantSlug] = {}
        #: Subscribers waiting for their feed marker: token -> (tenant ID, slug, subscriber).
        self._pending: dict[str, tuple[str, TenantSlug, Subscriber]] = {}
        #: Which tenants the other processes have subscribers of (their run events are broadcast only then).
        self.watches = Watches()
        self._refresher = WatchRefresher(db, self._watched_here, self.watches)
        db.changes.on_committed(self._on_change)  # held weakly by the feed
        db.changes.on_reset(self._on_reset)
        db.changes.on_broadcast(self._on_broadcast)

    # -- subscriptions ---------------------------------------------------------------------------------------
    def subscribe(self, tenant_id: str, tenant_slug: str, subscriber: Subscriber) -> None:
        """Add ``subscriber`` to the tenant's set (moving it out of any other tenant's set first), from this
        point of the feed on (see the module docstring).  Where a listener delivers, this commits a
        ``feed.marker`` change, so it can raise what a transaction raises (the database unreachable)."""
        slug = parse_tenant_slug(tenant_slug)
        db = self._db()
        with self._lock:
            self._remove(subscriber)
            if db is None or db.changes.delivers_in_process:
                self._add(tenant_id, slug, subscriber)
                return
            token = subscriber.marker = secrets.token_hex(16)
            self._pending[token] = (tenant_id, slug, subscriber)
        self.watches.mine((token,))
        try:
            with db.transaction() as tx:  # the marker names the tenant: the others broadcast its run events
                tx.record_change(Change("feed", "marker", tenant_id, token))
        except BaseException:
            self.watches.forget((token,))
            with self._lock:
                if subscriber.marker == token:
                    self._remove(subscriber)
            raise
        self._refresher.start()

    def unsubscribe(self, subscriber: Subscriber) -> None:
        with self._lock:
            self._remove(subscriber)

    def _add(self, tenant_id: str, slug: TenantSlug, subscriber: Subscriber) -> None:
        self._subscribers.setdefault(tenant_id, set()).add(subscriber)
        self._slugs[tenant_id] = slug
        subscriber.tenant_id = tenant_id

    def _activate(self, token: str) -> None:
        """The marker ``token`` came back through the feed: its subscriber hears every change from here on."""
        pending = self._pending.pop(token, None)
        if pending is not None:
            tenant_id, slug, subscriber = pending
            subscriber.marker = None
            self._add(tenant_id, slug, subscriber)

    def _remove(self, subscriber: Subscriber) -> None:
        if subscriber.marker is not None:
            self._pending.pop(subscriber.marker, None)
            subscriber.marker = None
        if subscriber.tenant_id is None:
            return
        members = self._subscribers.get(subscriber.tenant_id)
        if members is not None:
            members.discard(subscriber)
            if not members:
                del self._subscribers[subscriber.tenant_id]
                self._slugs.pop(subscriber.tenant_id, None)
        subscriber.tenant_id = None

    def _watched_here(self) -> set[str]:
        """The tenants this process has subscribers of, active or waiting for their starting point."""
        with self._lock:
            return set(self._subscribers) | {tenant_id for tenant_id, _slug, _subscriber in self._pending.values()}

    def subscriber_count(self, tenant_id: str) -> int:
        with self._lock:
            return len(self._subscribers.get(tenant_id, ()))

    # -- publishing ------------------------------------------------------------------------------------------
    def publish(self, tenant_id: str, event: AgentEvent) -> int:
        """Deliver a run event to the subscribers of ``tenant_id`` only, here and (PostgreSQL) on every other
        process that has subscribers of the tenant (:mod:`.watches`); returns how many there were here."""
        delivered = self._deliver(tenant_id, event)
        db = self._db()
        if (db is not None and db.changes.broadcasts and event.name in RUN_EVENTS
                and self.watches.wanted(tenant_id)):
            try:
                bodies = encode_run_event(tenant_id, event)
            except ValueError:  # delivered here; the other processes' clients go without it
                logger.exception("ws.run_event_not_broadcast", extra={"agent_event": event.name})
                return delivered
            for body in bodies:
                db.changes.broadcast(body)
        return delivered

    def _deliver(self, tenant_id: str, event: AgentEvent) -> int:
        """Give ``event`` to this process's subscribers of ``tenant_id`` (a delta: only to its person's)."""
        with self._lock:
            members = tuple(self._subscribers.get(tenant_id, ()))
        if event.scope_user_id is not None:  # conversation text: only for whom the conversation is
            members = tuple(s for s in members if s.user_id == event.scope_user_id)
        if members:
            message = event.message()
            for subscriber in members:
                subscriber.deliver(message)
            logger.debug("ws.agent_event", extra={**agent_log_fields(event.agent_key, event.tenant_slug),
                                                  "agent_event": event.name, "subscribers": len(members)})
        return len(members)

    def _on_change(self, change: Change) -> None:
        """The feed's committed changes: agent changes become events for the tenant's subscribers.  Never
        raises into the feed (a bad change is logged and skipped)."""
        if change.kind == "feed":
            if change.id is not None:  # a marker: a pending subscriber's starting point, or another process's
                if not self.watches.heard(change.id, change.tenant_id):  # subscribers of its tenant there
                    return
                with self._lock:
                    self._activate(change.id)
            return
        name = _EVENT_OF_OP.get(change.op) if change.kind == "agent" else None
        if name is None or change.tenant_id is None:
            return
        with self._lock:
            slug = self._slugs.get(change.tenant_id)
        if slug is None:  # nobody of that tenant listens here
            return
        try:
            previous = change.previous_key if name == AGENT_RENAMED else None
            event = AgentEvent(name, AgentId(change.id or ""), AgentKey(change.key or ""), slug,
                               AgentKey(previous) if previous else None)
        except ValueError:
            logger.exception("ws.agent_event_invalid", extra={"change_kind": change.kind, "change_op": change.op})
            return
        self._deliver(change.tenant_id, event)  # every process hears the change itself

    def _on_broadcast(self, body: str) -> None:
        """Another process's run event (listener thread): delivered here as that process delivered it.  An
        unreadable one is logged and skipped."""
        try:
            tenant_id, event = decode_run_event(body)
        except RunEventFormatError as error:
            logger.warning("ws.run_event_undecodable", extra={"reason": str(error)})
            return
        self._deliver(tenant_id, event)

    def _on_reset(self, reason: str) -> None:
        self.watches.reset()
        with self._lock:
            for token in list(self._pending):  # a marker sent while disconnected never comes back
                self._activate(token)
            members = [s for group in self._subscribers.values() for s in group]
        for subscriber in members:
            subscriber.deliver({"event": EVENTS_RESYNC, "reason": reason})


_registry: weakref.WeakKeyDictionary[Database, Broadcaster] = weakref.WeakKeyDictionary()
_registry_lock: Final = threading.Lock()


def broadcaster_for(db: Database) -> Broadcaster:
    """The broadcaster of ``db`` (created on first use; lives as long as ``db``)."""
    with _registry_lock:
        found = _registry.get(db)
        if found is None:
            found = _registry[db] = Broadcaster(db)
        return found
