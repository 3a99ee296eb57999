"""The listening connection: one per process, ``LISTEN`` on :data:`CHANNEL`, applying each change it hears, and
on the broadcast channel (:mod:`.broadcasts`), handing each broadcast to the feed.

Changes are sent by ``pg_notify`` inside the changing transaction (see ``Tx.commit``), so PostgreSQL delivers
each exactly when it commits and never when it rolls back, to every listening session, in commit order.
What a listener cannot get back is what was sent while it was not connected; so whenever the connection is
lost, and again when it is re-established, the feed is reset (every cache flushed), and until it is
connected nothing is cached.  The connection is re-established with a capped exponential back-off.  A quiet
connection is pinged every :data:`PING_SECONDS` and uses TCP keepalives, so a dead peer is noticed even when
no change is coming.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Final

import psycopg
from psycopg.conninfo import make_conninfo

from agentfy.store.changefeed import broadcasts
from agentfy.store.changefeed.changes import CHANNEL, Change, ChangeFormatError

if TYPE_CHECKING:
    from agentfy.store.changefeed.feed import ChangeFeed

logger: Final = logging.getLogger("agentfy.changefeed")

#: How long one wait for notifications lasts: bounds how long stopping the listener takes.
WAIT_SECONDS: Final = 0.2
PING_SECONDS: Final = 5.0
BACKOFF_FIRST_SECONDS: Final = 0.05
BACKOFF_MAX_SECONDS: Final = 2.0
#: The listening connection's ``application_name`` in ``pg_stat_activity``: operators can tell it apart.
APPLICATION_NAME: Final = "agentfy-changefeed"
_OPTIONS: Final[dict[str, str | int]] = {
    "keepalives": 1, "keepalives_idle": 5, "keepalives_interval": 2, "keepalives_count": 3, "connect_timeout": 5,
    "application_name": APPLICATION_NAME}


class Listener:
    """A daemon thread holding the listening connection of one process for one database."""

    def __init__(self, feed: ChangeFeed, conninfo: str) -> None:
        self._feed = feed
        self._conninfo = make_conninfo(conninfo, **_OPTIONS)
        self._stop = threading.Event()
        self.connected = threading.Event()
        self._thread = threading.Thread(target=self._run, name="agentfy-changefeed", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _run(self) -> None:
        delay = BACKOFF_FIRST_SECONDS
        while not self._stop.is_set():
            try:
                self._listen()
                delay = BACKOFF_FIRST_SECONDS
            except (psycopg.Error, OSError) as error:
                if not self._stop.is_set():
                    logger.warning("changefeed.connection_lost", extra={"error": type(error).__name__,
                                                                        "retry_in_seconds": delay})
            finally:
                if self.connected.is_set():
                    self.connected.clear()
                    self._feed.lost("the listening connection was lost")
            if self._stop.wait(delay):
                break
            delay = min(delay * 2, BACKOFF_MAX_SECONDS)

    def _listen(self) -> None:
        with psycopg.connect(self._conninfo, autocommit=True) as connection:
            connection.execute(f"LISTEN {CHANNEL}")
            connection.execute(f"LISTEN {broadcasts.CHANNEL}")
            self._feed.stats.reconnects += 1
            self.connected.set()
            self._feed.listening("the listening connection was (re-)established")
            pinged = time.monotonic()
            while not self._stop.is_set():
                for notification in connection.notifies(timeout=WAIT_SECONDS):
                    if notification.channel == broadcasts.CHANNEL:
                        self._feed.broadcast_arrived(notification.payload)
                    else:
                        self._apply(notification.payload)
                if time.monotonic() - pinged > PING_SECONDS:
                    connection.execute("SELECT 1")
                    pinged = time.monotonic()

    def _apply(self, payload: str) -> None:
        try:
            change = Change.decode(payload)
        except ChangeFormatError as error:
            self._feed.stats.undecodable += 1
            logger.warning("changefeed.undecodable_change", extra={"reason": str(error)})
            self._feed.lost("a change could not be read")  # unknown effect: flush, and cache again at once
            self._feed.listening("after an unreadable change")
            return
        if change.at is not None:
            self._feed.stats.last_lag_seconds = max(0.0, time.time() - change.at)
        self._feed.arrived(change)
