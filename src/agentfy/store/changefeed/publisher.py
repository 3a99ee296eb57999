"""The publisher: one process's broadcasts (:mod:`.broadcasts`) sent from a thread with a connection of its own.

Publishing costs the caller an append to a queue: the thread sends what is queued in one statement
(``pg_notify`` per body, in order, outside any transaction: the connection is in autocommit mode), and what
is queued meanwhile goes in the next one — so a burst of deltas costs a few statements, not one each, and the
run never waits for the database.  At most :data:`PENDING_LIMIT` wait; beyond that new ones are dropped.
A batch whose statement fails on a connection that was open already is sent again once on a new one (the
server most likely closed the idle connection: a restart, an idle timeout — only if it died between
running the statement and answering would the batch arrive twice); one that fails on a new connection is
dropped, counted in :class:`PublisherStats` and logged.  Order is kept: one thread, one statement at a
time, each statement's notifications in their order, and PostgreSQL delivers notifications in commit order.
"""

from __future__ import annotations

import collections
import logging
import threading
from typing import Final

import psycopg
from psycopg.conninfo import make_conninfo

from agentfy.store.changefeed.broadcasts import CHANNEL, check_body, frame
from agentfy.store.changefeed.changes import NOTIFY_SQL

logger: Final = logging.getLogger("agentfy.changefeed")

#: Broadcasts waiting to be sent, at most; beyond that new ones are dropped (the database is not keeping up).
PENDING_LIMIT: Final = 10_000
#: Payloads sent in one statement, at most (about 80 KB of typical deltas, 8 MB at worst).
BATCH_LIMIT: Final = 1_000
#: The publishing connection's ``application_name`` in ``pg_stat_activity`` (not the listening one's).
APPLICATION_NAME: Final = "agentfy-broadcasts"
RETRY_SECONDS: Final = 0.2
_OPTIONS: Final[dict[str, str | int]] = {
    "keepalives": 1, "keepalives_idle": 5, "keepalives_interval": 2, "keepalives_count": 3, "connect_timeout": 5,
    "application_name": APPLICATION_NAME}


class PublisherStats:
    """Counters for operators and tests (plain attributes)."""

    __slots__ = ("dropped", "sent", "statements")

    def __init__(self) -> None:
        self.sent = 0
        self.statements = 0
        self.dropped = 0


class Publisher:
    """Sends one process's broadcasts, in the order given, from a daemon thread with its own connection.

    The thread and its connection start with the first broadcast (a process that never broadcasts holds no
    extra connection), and a lost connection is opened again for the next batch.
    """

    def __init__(self, conninfo: str, origin: str) -> None:
        self._conninfo = make_conninfo(conninfo, **_OPTIONS)
        self._origin = origin
        self._sequence = 0
        self._pending: collections.deque[str] = collections.deque()
        self._wake = threading.Condition()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self.stats = PublisherStats()

    def send(self, body: str) -> bool:
        """Queue ``body`` for the other processes (never blocks on the database).  ``False`` when it was
        dropped: too many are waiting, or the publisher is stopped.  :class:`ValueError` if it is too long."""
        check_body(body)
        with self._wake:
            if self._stopping or len(self._pending) >= PENDING_LIMIT:
                self.stats.dropped += 1
                if self.stats.dropped & (self.stats.dropped - 1) == 0:  # 1, 2, 4, 8…: the log stays readable
                    logger.warning("changefeed.broadcast_dropped", extra={"dropped": self.stats.dropped})
                return False
            self._sequence += 1
            self._pending.append(frame(self._origin, self._sequence, body))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="agentfy-broadcasts", daemon=True)
                self._thread.start()
            self._wake.notify()
        return True

    def stop(self, timeout: float) -> None:
        """Send what is queued (within ``timeout`` seconds), then close the connection."""
        with self._wake:
            self._stopping = True
            self._wake.notify()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _take(self) -> list[str] | None:
        """The next batch, waiting for one; ``None`` when stopped and nothing is left."""
        with self._wake:
            while not self._pending and not self._stopping:
                self._wake.wait()
            if not self._pending:
                return None
            count = min(len(self._pending), BATCH_LIMIT)
            return [self._pending.popleft() for _ in range(count)]

    def _run(self) -> None:
        connection: psycopg.Connection[tuple[object, ...]] | None = None
        try:
            while (batch := self._take()) is not None:
                connection = self._send(connection, batch)
        finally:
            if connection is not None:
                connection.close()

    def _send(self, connection: psycopg.Connection[tuple[object, ...]] | None,
              batch: list[str]) -> psycopg.Connection[tuple[object, ...]] | None:
        """Send ``batch``; the connection to use next (``None``: open a new one).  A connection that was
        open already and fails is most likely one the server closed while it was idle (a restart, an idle
        timeout): the batch is sent again once on a new connection."""
        retry = connection is not None and not connection.closed
        while True:
            try:
                if connection is None or connection.closed:
                    connection = psycopg.connect(self._conninfo, autocommit=True)
                connection.execute(NOTIFY_SQL, (CHANNEL, batch))
            except (psycopg.Error, OSError) as error:
                if connection is not None:
                    connection.close()
                connection = None
                if retry:
                    retry = False
                    continue
                self.stats.dropped += len(batch)
                logger.warning("changefeed.broadcast_failed", extra={"error": type(error).__name__,
                                                                      "dropped": len(batch)})
                with self._wake:  # do not spin on a database that is down
                    if not self._stopping:
                        self._wake.wait(RETRY_SECONDS)
                return None
            self.stats.sent += len(batch)
            self.stats.statements += 1
            return connection
