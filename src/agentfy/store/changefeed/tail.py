"""Tailing the SQLite change log: how a process on a SQLite file hears changes made by other processes.

SQLite has no ``LISTEN``; every transaction that records changes also writes them to ``change_log`` (see
``Tx.commit``), and a process that serves (the gateway) runs this thread: every :data:`POLL_SECONDS` it reads
the log past the last row it saw and applies each change made by another process (its own were delivered
in-process when they committed).  On start it begins at the end of the log, after a flush, since anything
before was never cached.  Rows older than :data:`KEEP_SECONDS` are pruned now and then.  A read that fails
(the file locked past the busy timeout, say) flushes and stops caching until a read succeeds again.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Final

from agentfy.store.changefeed.changes import Change, ChangeFormatError
from agentfy.store.urls import sqlite_file

if TYPE_CHECKING:
    from agentfy.store.changefeed.feed import ChangeFeed

logger: Final = logging.getLogger("agentfy.changefeed")

POLL_SECONDS: Final = 0.1
KEEP_SECONDS: Final = 3600.0
PRUNE_EVERY_SECONDS: Final = 600.0


def _cutoff(seconds: float) -> str:
    stamp = datetime.now(UTC).replace(tzinfo=None) - timedelta(seconds=seconds)
    return stamp.isoformat(timespec="microseconds") + "Z"


class LogTail:
    """A daemon thread following one SQLite file's change log for one :class:`ChangeFeed`."""

    def __init__(self, feed: ChangeFeed, conninfo: str) -> None:
        self._feed = feed
        self._path = conninfo.removeprefix("sqlite:///")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="agentfy-changelog", daemon=True)

    @staticmethod
    def tails(conninfo: str) -> bool:
        """Whether ``conninfo`` names a file other processes can share (not an in-memory database)."""
        return sqlite_file(conninfo) is not None

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _run(self) -> None:
        connection = sqlite3.connect(self._path, timeout=5, isolation_level=None, check_same_thread=False)
        try:
            last = connection.execute("SELECT coalesce(max(seq), 0) FROM change_log").fetchone()[0]
            pruned = time.monotonic()
            healthy = True
            while not self._stop.wait(POLL_SECONDS):
                try:
                    rows = connection.execute("SELECT seq, origin, payload FROM change_log WHERE seq > ? "
                                              "ORDER BY seq", (last,)).fetchall()
                    if time.monotonic() - pruned > PRUNE_EVERY_SECONDS:
                        connection.execute("DELETE FROM change_log WHERE created_at < ?", (_cutoff(KEEP_SECONDS),))
                        pruned = time.monotonic()
                except sqlite3.Error as error:
                    if healthy:
                        logger.warning("changefeed.log_unreadable", extra={"error": type(error).__name__})
                        self._feed.lost("the change log could not be read")
                        healthy = False
                    continue
                if not healthy:
                    self._feed.listening("the change log is readable again")
                    healthy = True
                for seq, origin, payload in rows:
                    last = seq
                    if origin != self._feed.origin:
                        self._apply(payload)
        finally:
            connection.close()

    def _apply(self, payload: str) -> None:
        try:
            change = Change.decode(payload)
        except ChangeFormatError as error:
            logger.warning("changefeed.undecodable_change", extra={"reason": str(error)})
            self._feed.lost("a change could not be read")
            self._feed.listening("after an unreadable change")
            return
        self._feed.arrived(change)
