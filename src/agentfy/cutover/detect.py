"""Finding identities that still need the cutover, cheaply enough to ask at every start.

A legacy identity is a primary key that does not begin with its table's prefix: a bare UUID, an ID with a
retired prefix (``organization-…`` and the other three), or anything else the cutover would have to
translate or refuse.  Everything the platform mints — and Agentfy's three-word legacy format, and the result
of a prefix rename — begins with ``<prefix>-``, so the test needs no parsing.

Why a prefix range: in byte order the keys that begin with ``<prefix>-`` are exactly those in
``[<prefix>-, <prefix>.)`` (``.`` follows ``-``), so "is there any other key" is two range probes on the
primary key's index (SQLite always compares bytes; PostgreSQL does when the database's collation is ``C``,
``POSIX`` or ``C.UTF-8``, and otherwise compares with ``COLLATE "C"``, which is exact but reads the index
whole).  The check does not depend on any particular row, such as the platform organization, existing.
"""

from __future__ import annotations

from typing import Final

import sqlalchemy as sa

from agentfy.store.db import Database
from agentfy.store.errors import StoreError
from agentfy.store.schema import metadata

#: Entity tables -> the prefix of their primary key ``id``.
PREFIXED_TABLES: Final = {
    str(table.name): str(table.c.id.info["id_prefix"])
    for table in metadata.sorted_tables
    if "id" in table.c and table.c.id.info.get("id_prefix")
}
#: Collations whose order is the code point order (PostgreSQL), where the plain comparison is exact.
_BYTE_ORDER_COLLATIONS: Final = frozenset({"C", "POSIX", "C.UTF-8", "C.utf8"})


class LegacyDatabaseError(StoreError):
    """The database still holds legacy IDs: the platform cannot start (or be seeded) before the cutover."""

    code = "legacy_ids"

    def __init__(self, found: dict[str, int]) -> None:
        summary = ", ".join(f"{table}: {count}" for table, count in sorted(found.items()))
        super().__init__(f"the database still holds legacy IDs ({summary}); run `agentfy cutover run` first (see "
                         "docs/cutover.md): it creates the platform organization from the legacy one")
        self.found = found


def _outside_prefix(connection: sa.Connection, table: str) -> str:
    """The condition "``id`` does not begin with the table's prefix" for this connection's database."""
    if connection.dialect.name == "postgresql":
        collation = connection.exec_driver_sql(
            "SELECT datcollate FROM pg_database WHERE datname = current_database()").scalar_one()
        if str(collation) not in _BYTE_ORDER_COLLATIONS:
            return 'id COLLATE "C" < :low OR id COLLATE "C" >= :high'
    return "id < :low OR id >= :high"


def _bounds(table: str) -> dict[str, str]:
    prefix = PREFIXED_TABLES[table]
    return {"low": prefix + "-", "high": prefix + "."}


def has_legacy_identities(db: Database) -> bool:
    """Whether any primary key still needs the cutover: at most two index probes per entity table."""
    with db.engine.connect() as connection:
        for table in PREFIXED_TABLES:
            condition = _outside_prefix(connection, table)
            found = connection.execute(sa.text(f'SELECT 1 FROM "{table}" WHERE {condition} LIMIT 1'),  # noqa: S608 - schema names
                                       _bounds(table)).first()
            if found is not None:
                return True
    return False


def legacy_identities(db: Database) -> dict[str, int]:
    """Table -> how many of its primary keys still need the cutover (tables with none are left out); reads
    only those keys, so it costs little on a database that has none."""
    found: dict[str, int] = {}
    with db.engine.connect() as connection:
        for table in PREFIXED_TABLES:
            condition = _outside_prefix(connection, table)
            count = int(connection.execute(sa.text(f'SELECT count(*) FROM "{table}" WHERE {condition}'),  # noqa: S608
                                           _bounds(table)).scalar_one())
            if count:
                found[table] = count
    return found


def refuse_legacy_identities(db: Database) -> None:
    """:class:`LegacyDatabaseError` (with the count per table) if any primary key still needs the cutover."""
    if has_legacy_identities(db):
        raise LegacyDatabaseError(legacy_identities(db))
