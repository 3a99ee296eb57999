"""Where IDs live: every column the cutover rewrites, and every column it only scans.

Why a declared list next to the catalog: foreign keys say where most references are, but not all of them.
The schema marks references without an FK (``info["references"]``: an organization's default agent,
telemetry), this module declares the rest (actor and scope columns, the outbox's wire columns, JSON
documents), and everything else that holds text is scanned before the rewrite: a translated ID found in a
column nobody declared aborts the cutover instead of being left behind as a dangling reference.

Three kinds of column are left alone on purpose, as the ID format's rules say: history (the audit log and the recorded
hops keep the IDs they recorded), and opaque user content (what people and models wrote; an ID in a
message is a quotation, not a reference).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

import sqlalchemy as sa

from agentfy.ids import RENAMED_PREFIXES
from agentfy.store.schema import metadata

#: Entity tables -> the canonical prefix of their primary key ``id``.
ENTITY_TABLES: Final[Mapping[str, str]] = {
    str(table.name): str(table.c.id.info["id_prefix"])
    for table in metadata.sorted_tables
    if "id" in table.c and table.c.id.info.get("id_prefix")
}

#: References without an FK beyond the schema's soft references: a value is rewritten when it equals a
#: translated identity; anything else (``group:…``, a channel's own sender ID, ``system``) stays.
DECLARED_ID_COLUMNS: Final[tuple[tuple[str, str], ...]] = (
    ("sessions", "user_id"),
    ("session_messages", "sender_id"),
    ("episodic_summaries", "user_id"),
    ("kg_entities", "user_id"),
    ("memory_documents", "user_id"),
    ("memory_embeddings", "source_id"),
    ("memory_embeddings", "user_id"),
    ("skills", "owner_id"),
    ("cron_jobs", "created_by"),
    ("cron_jobs", "user_id"),
    ("agent_config_permissions", "scope"),
    ("agent_config_permissions", "sender_id"),
    ("agent_config_permissions", "granted_by"),
    ("event_outbox", "tenant_id"),
    ("event_outbox", "source_id"),
    ("event_outbox", "agent_id"),
    ("event_outbox", "user_id"),
)

#: JSON documents (text): every string value or key equal to a translated identity is rewritten.
JSON_COLUMNS: Final[tuple[tuple[str, str], ...]] = (
    ("organizations", "settings"),
    ("org_policies", "document"),
    ("agents", "config"),
    ("agent_mcp_servers", "config"),
    ("cron_jobs", "payload"),
    ("memory_documents", "metadata"),
    ("kg_entities", "properties"),
    ("kg_relations", "properties"),
    ("spans", "attributes"),
    ("event_outbox", "payload"),
)

#: History: these tables keep the IDs they recorded (the audit log's own IDs are technical UUIDs).
HISTORICAL_TABLES: Final = frozenset({"org_audit", "id_migrations", "alembic_version"})

#: Opaque user content: never rewritten, never scanned.
OPAQUE_COLUMNS: Final = frozenset({
    ("session_messages", "content"),
    ("episodic_summaries", "summary"),
    ("memory_documents", "content"),
    ("memory_chunks", "content"),
    ("skills", "content"),
    ("team_tasks", "title"),
    ("event_outbox", "last_error"),
})

_UUID: Final = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_RETIRED: Final = "|".join(sorted(RENAMED_PREFIXES, key=len, reverse=True))
#: A value shaped like an ID the cutover translates: a bare lower-case UUID, or an ID with a retired prefix and
#: a tail of two words and 12 characters or three words and 20 (:mod:`agentfy.cutover.shapes` decides).
LEGACY_SHAPED: Final = re.compile(
    rf"{_UUID}|(?:{_RETIRED})-[a-z]+-[a-z]+-(?:[a-z]+-[0-9a-z]{{20}}|[0-9a-z]{{12}})(?![0-9a-z])")
#: The same, as a PostgreSQL regular expression (``~``) for prefiltering rows on the server.
LEGACY_SHAPED_PG: Final = rf"{_UUID}|organization-"
#: The same, as SQLite GLOB patterns (no regular expressions there): any one matching is a candidate.  A
#: UUID is a candidate by its middle, ``-hhhh-hhhh-hhhh-``: SQLite searches for the literal character that
#: follows a leading ``*`` and tries the rest only where it is found, while a leading character class is
#: tried at every position (the whole UUID's pattern took 20 µs per document of a few hundred bytes).
LEGACY_SHAPED_GLOBS: Final = (
    "*-" + "[0-9a-f]" * 4 + "-" + "[0-9a-f]" * 4 + "-" + "[0-9a-f]" * 4 + "-*",
    "*organization-*",
)


@dataclass(frozen=True)
class IdColumn:
    """A column whose whole value is an ID (or NULL, or something that is not an identity)."""

    table: str
    column: str
    kind: str  # "primary key" | "foreign key" | "soft reference" | "declared"

    @property
    def name(self) -> str:
        return f"{self.table}.{self.column}"


@dataclass(frozen=True)
class JsonColumn:
    """A JSON document column, rewritten row by row; ``key`` is the table's single-column primary key."""

    table: str
    column: str
    key: str

    @property
    def name(self) -> str:
        return f"{self.table}.{self.column}"


@dataclass(frozen=True)
class References:
    """Every place the cutover rewrites, and the text columns it scans for IDs nobody declared."""

    id_columns: tuple[IdColumn, ...]
    json_columns: tuple[JsonColumn, ...]
    scanned: tuple[tuple[str, str], ...]


def _single_key(table: sa.Table) -> str:
    keys = [column.name for column in table.primary_key.columns]
    if len(keys) != 1:
        raise ValueError(f"JSON column table {table.name} needs a single-column primary key, has {keys}")
    return keys[0]


def _is_text(column: sa.Column[object]) -> bool:
    return isinstance(column.type, sa.Text | sa.String)


def discover(catalog_foreign_keys: Iterable[tuple[str, str, str, str]]) -> References:
    """The references of this schema, from the catalog's foreign keys ``(table, column, referred table,
    referred column)`` plus the declared lists.

    A foreign-key column is an ID column when what it refers to is one (followed to a fixed point, so
    ``session_messages.tenant_id`` -> ``sessions.tenant_id`` -> ``organizations.id`` counts).  Raises
    ``ValueError`` if a declared column is not in the schema (a rename must update this module).
    """
    ids: dict[tuple[str, str], str] = {(table, "id"): "primary key" for table in ENTITY_TABLES}
    for table in metadata.sorted_tables:
        for column in table.columns:
            if column.info.get("references"):
                ids[(table.name, column.name)] = "soft reference"
    for table_name, column_name in DECLARED_ID_COLUMNS:
        _column(table_name, column_name)
        ids.setdefault((table_name, column_name), "declared")
    foreign_keys = list(catalog_foreign_keys)
    changed = True
    while changed:
        changed = False
        for table_name, column_name, referred_table, referred_column in foreign_keys:
            if (referred_table, referred_column) in ids and (table_name, column_name) not in ids:
                ids[(table_name, column_name)] = "foreign key"
                changed = True
    for table_name, column_name, _, _ in foreign_keys:
        if ids.get((table_name, column_name)) == "declared":
            ids[(table_name, column_name)] = "foreign key"
    order = {table.name: n for n, table in enumerate(metadata.sorted_tables)}
    id_columns = tuple(IdColumn(table, column, kind) for (table, column), kind in
                       sorted(ids.items(), key=lambda item: (order.get(item[0][0], len(order)), item[0][1])))
    json_columns = tuple(JsonColumn(table, column, _single_key(metadata.tables[table]))
                         for table, column in JSON_COLUMNS if _column(table, column) is not None)
    rewritten = set(ids) | set(JSON_COLUMNS)
    scanned = tuple(
        (table.name, column.name)
        for table in metadata.sorted_tables if table.name not in HISTORICAL_TABLES
        for column in table.columns
        if _is_text(column) and (table.name, column.name) not in rewritten
        and (table.name, column.name) not in OPAQUE_COLUMNS and not _is_timestamp(column)
    )
    return References(id_columns, json_columns, scanned)


def _is_timestamp(column: sa.Column[object]) -> bool:
    """The schema's convention: ``*_at`` columns are ISO-8601 UTC text, which cannot hold an ID."""
    return column.name.endswith("_at")


def _column(table: str, column: str) -> sa.Column[object]:
    try:
        return metadata.tables[table].c[column]
    except KeyError:
        raise ValueError(f"the cutover declares {table}.{column}, which the schema does not have") from None
