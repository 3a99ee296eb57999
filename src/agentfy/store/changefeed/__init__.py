"""The change feed: committed changes reach every process's caches and WebSocket clients.

A change that can stale a cache (an agent renamed, a key revoked, an organization deleted…) is recorded in
the changing transaction (:meth:`agentfy.store.db.Tx.record_change`).  On PostgreSQL the transaction sends it
with ``pg_notify`` just before ``COMMIT``, and each process's listening connection applies it; on SQLite (one
process) the committing thread delivers it.  See :mod:`.feed` for who is told what, and when.
"""

from agentfy.store.changefeed.changes import KINDS, Change, ChangeFormatError
from agentfy.store.changefeed.feed import ChangeFeed, FeedStats

__all__ = ["KINDS", "Change", "ChangeFeed", "ChangeFormatError", "FeedStats"]
