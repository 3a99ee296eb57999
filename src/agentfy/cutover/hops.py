"""The recorded hops of the ID cutover, and how an old ID is followed to its current one.

Every identity the cutover changes gets one row ``(old_id, new_id, entity, run_id, migrated_at)``.  A
fresh legacy database goes straight from a UUID to a canonical ID; a database migrated while the organization
prefixes were still ``organization-…`` goes ``organization-…`` -> ``org-…`` (the tail kept); so an ID issued in
the UUID era may take two hops, in two runs.  :func:`resolve_migrated_id` follows the chain to its end.  The
hops are history: they are never rewritten, and no HTTP alias is made from them (an old address answers 404);
only explicit look-ups such as ``GET /v1/ids/{value}`` follow them.
"""

from __future__ import annotations

from typing import Final

import sqlalchemy as sa

from agentfy.store.db import Tx, now
from agentfy.store.schema import id_migrations
from agentfy.store.sql import insert

#: More hops than any real chain has (UUID -> organization-… -> org-… is two); guards against a cycle.
MAX_HOPS: Final = 8

_NEXT: Final = sa.select(id_migrations.c.new_id).where(id_migrations.c.old_id == sa.bindparam("old_id"))
_INSERT: Final = insert(id_migrations, ["old_id", "new_id", "entity", "run_id", "migrated_at"])


class HopCycleError(RuntimeError):
    """The recorded hops loop or run longer than :data:`MAX_HOPS`: the record is corrupt."""


def record_hops(tx: Tx, hops: list[tuple[str, str, str]], run_id: str) -> None:
    """Record ``(old_id, new_id, entity)`` hops of one run, in the caller's transaction."""
    stamp = now()
    tx.executemany(_INSERT, [{"old_id": old, "new_id": new, "entity": entity, "run_id": run_id,
                              "migrated_at": stamp} for old, new, entity in hops])


def resolve_migrated_id(tx: Tx, old_id: str) -> str | None:
    """The current ID an old one was migrated to, following every recorded hop; ``None`` if it was never
    migrated (it may still be current, or unknown)."""
    current, hops = old_id, 0
    while True:
        row = tx.one(_NEXT, {"old_id": current})
        if row is None:
            return None if hops == 0 else current
        current, hops = str(row[0]), hops + 1
        if hops > MAX_HOPS or current == old_id:
            raise HopCycleError(f"the recorded hops from {old_id!r} do not end within {MAX_HOPS} steps")
