"""Serialising the read-modify-write workers per agent (and memory scope) across processes.

The dreaming worker reads the unpromoted summaries and the dream document, then rewrites the document; the
dedup worker reads the agent's entities, then merges.  Two workers doing that for the same agent at the same
time on PostgreSQL (claims are concurrent there) would each work from what they read before the other
committed: a dream section could be lost, or a merge could find its duplicates already deleted by the other
(a ``NotFoundError``, which dead-letters the event).  :func:`serialise` takes a transaction-scoped advisory
lock on PostgreSQL, released at commit or rollback, so the second waits and then reads the first's result.
On SQLite nothing is needed: a write transaction (``BEGIN IMMEDIATE``) already excludes every other writer.

The key is a 64-bit hash of the parts; two unrelated keys sharing a hash only wait for each other.
"""

from __future__ import annotations

import hashlib
from typing import Final

from agentfy.store.db import Tx

_ADVISORY_LOCK: Final = "SELECT pg_advisory_xact_lock(:key)"


def lock_key(*parts: str) -> int:
    """A stable signed 64-bit key for ``parts`` (PostgreSQL's advisory lock space)."""
    digest = hashlib.blake2b("\x1f".join(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def serialise(tx: Tx, *parts: str) -> None:
    """Hold a lock on ``parts`` until ``tx`` ends (PostgreSQL); a no-op on SQLite (see the module docstring)."""
    if tx.db.dialect == "postgresql":
        tx.execute(_ADVISORY_LOCK, {"key": lock_key("agentfy.consolidation", *parts)})
