"""One database's change feed in this process: who is told about committed changes, and when.

Three kinds of subscriber, for three needs:

* :meth:`ChangeFeed.on_stale` — caches.  Told as soon as this process knows of a change: inside the changing
  transaction (so it stops serving the old view at once), again after its commit (a reader may have re-cached
  the old committed row in between), and when the change arrives from another process.  Handlers must be
  idempotent: they may hear of one change several times.
* :meth:`ChangeFeed.on_committed` — notifications (WebSocket events).  Told exactly once per committed change,
  in commit order: on PostgreSQL from the listening connection (so every process, the changing one included,
  sees every change in the same order), on SQLite — one process — by the committing thread, under a lock
  held across ``COMMIT`` so two commits cannot be told in the opposite order.
* :meth:`ChangeFeed.on_reset` — told when changes may have been missed (the listening connection was lost or
  re-established, or a payload could not be read): flush everything.

Beside changes the feed carries *broadcasts* (:mod:`.broadcasts`): bodies a process sends with
:meth:`ChangeFeed.broadcast` for the :meth:`ChangeFeed.on_broadcast` handlers of every *other* process — not
transactional, no effect on caches (a run's events: the sender delivers them to its own subscribers itself).
They travel on PostgreSQL only, where several gateway processes share a database.

Other processes: on PostgreSQL every process's listening connection hears every change; on SQLite each
change is also written to the ``change_log`` table in its transaction, and a process that listens
(:meth:`ChangeFeed.start_listening`: the gateway does) tails it for changes made by others — a CLI command
beside ``agentfy serve`` — within :data:`~agentfy.store.changefeed.tail.POLL_SECONDS`.

While a started listener is not connected, :attr:`ChangeFeed.cacheable` is ``False``: caches must not fill,
since nothing would tell them that what they hold went stale.  Handlers never raise into the feed: a failure
is logged and the other handlers still run.
"""

from __future__ import annotations

import logging
import secrets
import threading
import weakref
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Final

from agentfy.store.changefeed.broadcasts import BroadcastFormatError, unframe
from agentfy.store.changefeed.changes import Change
from agentfy.store.changefeed.tail import LogTail

if TYPE_CHECKING:
    from agentfy.store.changefeed.listener import Listener
    from agentfy.store.changefeed.publisher import Publisher, PublisherStats
    from agentfy.store.changefeed.tail import LogTail

logger: Final = logging.getLogger("agentfy.changefeed")

ChangeHandler = Callable[[Change], None]
ResetHandler = Callable[[str], None]
BroadcastHandler = Callable[[str], None]
_Ref = Callable[[], Any]


def _weak(handler: Callable[..., None]) -> _Ref:
    """Bound methods are held weakly (a cache's feed must not keep the cache alive); functions strongly."""
    if hasattr(handler, "__self__"):
        return weakref.WeakMethod(handler)
    return lambda: handler


class FeedStats:
    """Counters for operators and benchmarks (plain attributes: read them, never rely on atomicity)."""

    __slots__ = ("broadcasts_received", "changes_received", "connected", "last_lag_seconds", "reconnects",
                 "undecodable", "undecodable_broadcasts")

    def __init__(self) -> None:
        self.changes_received = 0
        self.undecodable = 0
        self.broadcasts_received = 0  # from other processes
        self.undecodable_broadcasts = 0
        self.reconnects = 0
        self.connected = False
        self.last_lag_seconds: float | None = None


class ChangeFeed:
    """The change feed of one :class:`~agentfy.store.db.Database` in this process."""

    def __init__(self, dialect: str) -> None:
        self.dialect = dialect
        #: Marks this feed's own changes in the SQLite change log and, on PostgreSQL, its own broadcasts
        #: (random, per database handle; drawn again when listening starts, so a process forked with the
        #: handle never takes another process's broadcasts for its own).
        self.origin = secrets.token_hex(8)
        #: Held across COMMIT and the in-process delivery of its changes, so deliveries follow commit order.
        self.order_lock = threading.Lock()
        self.cacheable = True
        self.stats = FeedStats()
        self._stale: list[_Ref] = []
        self._committed: list[_Ref] = []
        self._reset: list[_Ref] = []
        self._broadcast: list[_Ref] = []
        self._listener: Listener | None = None
        self._publisher: Publisher | None = None
        self._tail: LogTail | None = None

    # -- subscriptions ---------------------------------------------------------------------------------------
    def on_stale(self, handler: ChangeHandler) -> None:
        self._stale.append(_weak(handler))

    def on_committed(self, handler: ChangeHandler) -> None:
        self._committed.append(_weak(handler))

    def on_reset(self, handler: ResetHandler) -> None:
        self._reset.append(_weak(handler))

    def on_broadcast(self, handler: BroadcastHandler) -> None:
        """``handler(body)`` for each broadcast of another process, in the order it sent them (listener thread)."""
        self._broadcast.append(_weak(handler))

    @property
    def delivers_in_process(self) -> bool:
        """Whether this process tells ``on_committed`` subscribers itself (no listener is running)."""
        return self._listener is None

    # -- from transactions -----------------------------------------------------------------------------------
    def noticed(self, change: Change) -> None:
        """A transaction of this process made ``change`` (not committed yet): caches stop serving it."""
        self._call(self._stale, change)

    def committed_here(self, changes: Iterable[Change]) -> None:
        """Changes of this process just committed.  Called with :attr:`order_lock` held when
        :attr:`delivers_in_process`, so ``on_committed`` subscribers hear them in commit order."""
        in_process = self.delivers_in_process
        for change in changes:
            self._call(self._stale, change)
            if in_process:
                self._call(self._committed, change)

    # -- broadcasts ------------------------------------------------------------------------------------------
    @property
    def broadcasts(self) -> bool:
        """Whether :meth:`broadcast` sends anything: other processes may be listening (PostgreSQL, listening)."""
        return self._publisher is not None

    @property
    def broadcast_stats(self) -> PublisherStats | None:
        """What this process's broadcasts came to (sent, statements, dropped); ``None`` if it sends none."""
        return self._publisher.stats if self._publisher is not None else None

    def broadcast(self, body: str) -> bool:
        """Send ``body`` to the other processes' ``on_broadcast`` handlers without waiting for the database;
        ``False`` if it was not sent (nobody else can listen, or too many are waiting).  :class:`ValueError`
        for a body over :data:`~agentfy.store.changefeed.broadcasts.BODY_LIMIT_BYTES`."""
        publisher = self._publisher
        return publisher is not None and publisher.send(body)

    def broadcast_arrived(self, payload: str) -> None:
        """A payload arrived on the broadcast channel: its body goes to the handlers unless this feed sent it.
        An unreadable payload is logged and skipped (it cannot stale a cache: nothing is flushed)."""
        try:
            received = unframe(payload)
        except BroadcastFormatError as error:
            self.stats.undecodable_broadcasts += 1
            logger.warning("changefeed.undecodable_broadcast", extra={"reason": str(error)})
            return
        if received.origin == self.origin:  # this process delivered it already
            return
        self.stats.broadcasts_received += 1
        for ref in list(self._broadcast):
            handler = ref()
            if handler is None:
                self._broadcast.remove(ref)
                continue
            try:
                handler(received.body)
            except Exception:
                logger.exception("changefeed.broadcast_handler_failed")

    # -- from the listener -----------------------------------------------------------------------------------
    def arrived(self, change: Change) -> None:
        """A committed change (of any process) arrived on the listening connection."""
        self.stats.changes_received += 1
        self._call(self._stale, change)
        self._call(self._committed, change)

    def lost(self, reason: str) -> None:
        """Changes may have been missed: stop caching, flush."""
        self.cacheable = False
        self.stats.connected = False
        self._flush(reason)

    def listening(self, reason: str) -> None:
        """The listening connection is (re-)established: flush what may have been missed, then cache again."""
        self.stats.connected = True
        self._flush(reason)
        self.cacheable = True

    def _flush(self, reason: str) -> None:
        for ref in list(self._reset):
            handler = ref()
            if handler is None:
                self._reset.remove(ref)
                continue
            try:
                handler(reason)
            except Exception:
                logger.exception("changefeed.reset_handler_failed", extra={"reason": reason})

    def _call(self, handlers: list[_Ref], change: Change) -> None:
        for ref in list(handlers):
            handler = ref()
            if handler is None:
                handlers.remove(ref)
                continue
            try:
                handler(change)
            except Exception:
                logger.exception("changefeed.handler_failed",
                                 extra={"change_kind": change.kind, "change_op": change.op})

    # -- the listener ----------------------------------------------------------------------------------------
    def start_listening(self, conninfo: str) -> bool:
        """Hear other processes' changes: on PostgreSQL this process's listening connection (until it connects,
        nothing is cached); on SQLite a thread tailing the change log.  ``True`` if something was started."""
        if self._listener is not None or self._tail is not None:
            return False
        if self.dialect == "sqlite":
            if not LogTail.tails(conninfo):  # an in-memory database has one process
                return False
            self._tail = LogTail(self, conninfo)
            self._tail.start()
            return True
        from agentfy.store.changefeed.listener import Listener  # noqa: PLC0415 - psycopg only when listening
        from agentfy.store.changefeed.publisher import Publisher  # noqa: PLC0415

        self.cacheable = False
        self.origin = secrets.token_hex(8)
        self._publisher = Publisher(conninfo, self.origin)
        self._listener = Listener(self, conninfo)
        self._listener.start()
        return True

    def wait_listening(self, timeout: float) -> bool:
        """Until the listener is connected (``True``), or ``timeout`` seconds pass (``False``)."""
        return self._listener is None or self._listener.connected.wait(timeout)

    def stop_listening(self, timeout: float = 5.0) -> None:
        listener, self._listener = self._listener, None
        tail, self._tail = self._tail, None
        publisher, self._publisher = self._publisher, None
        if publisher is not None:
            publisher.stop(timeout)
        if listener is not None:
            listener.stop(timeout)
        if tail is not None:
            tail.stop(timeout)
        self.cacheable = True
