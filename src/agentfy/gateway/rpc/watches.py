"""Which tenants' run events the other gateway processes want, so that a run nobody elsewhere watches is not
broadcast (PostgreSQL; on SQLite nothing is broadcast at all).

Why: a broadcast run event is a notification through the database — a statement on the publishing thread, the
server's work, every other process's listener woken for it — sent for each event of every run (several per
message, one per streamed delta).  Measured on the message route of one gateway process on PostgreSQL, sending
them cost a third of its throughput, while in most deployments, most of the time, no WebSocket client of
another process is subscribed to the tenant.  So a process broadcasts a tenant's run events only while
another process has said it has subscribers of that tenant.

How a process says so: a WebSocket subscription already commits a ``feed.marker`` change (its starting point
in the feed's order, see :mod:`.broadcast`); the marker carries the subscriber's tenant, and every process
hears every change.  A process that hears another process's marker for a tenant broadcasts that tenant's run
events for :data:`WATCH_SECONDS` after it, and a process that has subscribers of a tenant commits a fresh
marker for it every :data:`REFRESH_SECONDS` while it has any (:class:`WatchRefresher`; one transaction for
all its tenants).  A process's own markers are told apart by their random tokens: its own subscribers get its
events directly, so they never make it broadcast.  Every version ignores a marker unless it waits for that
very token, so an older process reads these markers as it always did; but its own markers name no tenant, so
during a rolling upgrade its WebSocket clients miss the run events of upgraded processes (after their first
:data:`BLIND_SECONDS`) until it is upgraded too.

What a process cannot know is the subscribers that came before it heard the feed: for :data:`BLIND_SECONDS`
after its listening connection (re)connects — longer than one refresh, so every watcher's next marker has
arrived — and until then from its start, it broadcasts every run event, as all processes used to.

What is given up: a subscriber starts receiving its own process's run events when its marker comes back to
its process, and another process starts broadcasting to it when its marker reaches that process — the same
point of the feed, heard by both at about the same time.  A run event another process publishes in the
moment between (a message sent there the very instant the subscription was answered) is not delivered; run
events between processes were best-effort before too (a process whose listening connection is down misses
them, and its clients are told ``events.resync``).
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
import weakref
from collections.abc import Callable, Iterable
from typing import Final

from agentfy.store.changefeed import Change
from agentfy.store.db import Database

logger: Final = logging.getLogger("agentfy.gateway.ws")

#: How often a process with subscribers of a tenant says so again (a marker per tenant, in one transaction).
REFRESH_SECONDS: Final = 5.0
#: How long after another process's last marker for a tenant its run events are still broadcast (three
#: refreshes may be late or lost before the watch lapses).
WATCH_SECONDS: Final = 20.0
#: How long after its listener (re)connects a process broadcasts every run event (it has not yet heard every
#: watcher's refresh).
BLIND_SECONDS: Final = 2 * REFRESH_SECONDS


class Watches:
    """What this process knows of the other processes' subscribers, by tenant; thread-safe.

    ``clock`` is injectable for tests (monotonic seconds).
    """

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._until: dict[str, float] = {}
        self._own: set[str] = set()
        self._blind_until = clock() + BLIND_SECONDS
        #: Run events not broadcast because no other process watched their tenant (a metric).
        self.unwatched = 0

    def wanted(self, tenant_id: str) -> bool:
        """Whether a run event of ``tenant_id`` should be broadcast now; counts the ones that should not."""
        now = self._clock()
        with self._lock:
            if now < self._blind_until:
                return True
            until = self._until.get(tenant_id)
            if until is not None:
                if now < until:
                    return True
                del self._until[tenant_id]
            self.unwatched += 1
            return False

    def mine(self, tokens: Iterable[str]) -> None:
        """Markers this process is about to commit: hearing them back makes it broadcast nothing."""
        with self._lock:
            self._own.update(tokens)

    def forget(self, tokens: Iterable[str]) -> None:
        """Markers of this process that were not committed after all (their transaction failed)."""
        with self._lock:
            self._own.difference_update(tokens)

    def heard(self, token: str, tenant_id: str | None) -> bool:
        """A marker arrived through the feed; ``True`` if it was this process's own."""
        with self._lock:
            if token in self._own:
                self._own.discard(token)
                return True
            if tenant_id is not None:
                self._until[tenant_id] = self._clock() + WATCH_SECONDS
            return False

    def reset(self) -> None:
        """The feed may have missed markers (its listening connection was lost or is back): broadcast every
        run event until the watchers have been heard again.  Own markers in flight may never come back."""
        with self._lock:
            self._blind_until = self._clock() + BLIND_SECONDS
            self._own.clear()

    def watched(self) -> dict[str, float]:
        """Each tenant another process watches, with the monotonic time its watch lapses (a copy)."""
        now = self._clock()
        with self._lock:
            return {tenant: until for tenant, until in self._until.items() if until > now}


class WatchRefresher:
    """A daemon thread that commits a marker for each tenant this process has subscribers of, every
    :data:`REFRESH_SECONDS`, so the other processes keep broadcasting that tenant's run events here.

    Started with the first subscription (PostgreSQL only); it holds the database weakly and ends once the
    database is gone.  A refresh that fails (the database unreachable) is logged; the next one may succeed,
    and until a watch lapses nothing is lost."""

    def __init__(self, db: Database, tenants: Callable[[], set[str]], watches: Watches) -> None:
        self._db = weakref.ref(db)
        self._tenants = tenants
        self._watches = watches
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the thread unless it runs already (safe to call on every subscription)."""
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="agentfy-ws-watches", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            time.sleep(REFRESH_SECONDS)
            db = self._db()
            if db is None:
                return
            self.refresh(db)
            del db  # never held while asleep: the database must be collectable

    def refresh(self, db: Database) -> None:
        """Commit one marker per tenant this process has subscribers of (nothing if it has none)."""
        tenants = self._tenants()
        if not tenants:
            return
        markers = [Change("feed", "marker", tenant, secrets.token_hex(16)) for tenant in sorted(tenants)]
        tokens = [marker.id for marker in markers if marker.id is not None]
        self._watches.mine(tokens)
        try:
            with db.transaction() as tx:
                for marker in markers:
                    tx.record_change(marker)
        except Exception:
            self._watches.forget(tokens)
            logger.warning("ws.watch_refresh_failed", exc_info=True, extra={"tenants": len(markers)})
