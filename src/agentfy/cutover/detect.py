"""Finding identities that still need the cutover: primary keys that are not canonical IDs.

A legacy identity is a bare UUID, an ID with a prefix AGNT2-588 retired (``organization-…`` and the other
three), or anything else that is not canonical for its table.  Agentfy's other legacy format (three words
and a 20-character suffix) is accepted and stays, so it is not counted.  Values are streamed, never loaded
whole.
"""

from __future__ import annotations

import sqlalchemy as sa

from agentfy.ids import AGENTFY_WORDS_LEGACY, is_canonical_id
from agentfy.store.db import Database
from agentfy.store.errors import StoreError
from agentfy.store.schema import metadata

PAGE: int = 5000


class LegacyDatabaseError(StoreError):
    """The database still holds legacy IDs: the platform cannot start (or be seeded) before the cutover."""

    code = "legacy_ids"

    def __init__(self, found: dict[str, int]) -> None:
        summary = ", ".join(f"{table}: {count}" for table, count in sorted(found.items()))
        super().__init__(f"the database still holds legacy IDs ({summary}); run `agentfy cutover run` first (see "
                         "docs/cutover.md): it creates the platform organization from the legacy one")
        self.found = found


def _needs_cutover(value: str, prefix: str) -> bool:
    return not (is_canonical_id(value, prefix) or AGENTFY_WORDS_LEGACY.match(value, frozenset({prefix})))


def legacy_identities(db: Database) -> dict[str, int]:
    """Table -> how many of its primary keys still need the cutover (tables with none are left out)."""
    found: dict[str, int] = {}
    with db.engine.connect() as connection:
        for table in metadata.sorted_tables:
            column = table.c.get("id")
            prefix = column.info.get("id_prefix") if column is not None else None
            if column is None or not prefix:
                continue
            result = connection.execution_options(stream_results=True, yield_per=PAGE).execute(sa.select(column))
            count = sum(1 for (value,) in result if _needs_cutover(str(value), prefix))
            if count:
                found[table.name] = count
    return found
