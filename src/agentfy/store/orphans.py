"""The orphan scan (``agentfy db scan-orphans``): ID columns whose values cannot be right.

For every ID column the schema knows — entity primary keys, foreign keys, and references without a
foreign key (``info["references"]``: telemetry, an organization's default agent) — it reports rows whose
value is empty, the nil UUID, not a valid ID of the expected entity, or (for references) points at no
row.  Foreign keys make dangling references impossible while they are enforced; the scan still checks
them, because a SQLite file written without ``PRAGMA foreign_keys=ON`` or a database restored from an
older dump may hold them; run it before an upgrade.

Rows are streamed in pages (bounded memory); validity is ``is_id`` itself, not a SQL approximation.

With ``tenant_id`` (one organization's scan, ``GET /v1/org/orphans``) only tables with a tenant column
(``tenant_id``, or ``org_id`` for the organization's own members, credentials, policies and audit) are
scanned, and only that organization's rows, filtered in SQL.  Left out of it, because no sound restriction
to one organization exists: tables without one (people, organizations, the change feed, the bus's daily
counters, the ID-migration map) — nothing in their rows says whose they are.  A
reference is checked against rows of the same organization when the table it points at has a tenant column
(pointing at another organization's row is as wrong as pointing at none, and the scan must not tell whether
another organization's row exists), else against the whole table (people, organizations: shared).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Final

import sqlalchemy as sa

from agentfy.identity import parse_id
from agentfy.ids import NIL_UUID, is_id
from agentfy.store.db import Database
from agentfy.store.schema import metadata

PAGE_SIZE: Final = 5000
#: How many offending values a finding keeps as examples.
EXAMPLES: Final = 3


@dataclass(frozen=True)
class IdColumn:
    """One column that holds IDs of ``prefix``'s entity; ``target`` is the table.column it references."""

    table: str
    column: str
    prefix: str
    nullable: bool
    target: str | None
    has_fk: bool
    may_dangle: bool = False  # a reference that may name nothing by design (an invitation's invitee)


@dataclass
class Finding:
    """Rows of one column with one kind of problem."""

    table: str
    column: str
    problem: str  # "empty", "nil UUID", "not a valid <prefix> ID", "points at nothing"
    count: int = 0
    examples: list[str] = field(default_factory=list)

    def add(self, value: object) -> None:
        self.count += 1
        if len(self.examples) < EXAMPLES:
            self.examples.append(repr(value))


def _prefix_of_table(table: str) -> str | None:
    column = metadata.tables[table].c.get("id")
    return None if column is None else column.info.get("id_prefix")


def id_columns() -> list[IdColumn]:
    """Every ID column of the schema, from the models (so a new table is scanned without a code change)."""
    found: list[IdColumn] = []
    for table in metadata.sorted_tables:
        for column in table.columns:
            target: str | None = None
            has_fk = bool(column.foreign_keys)
            if has_fk:
                fk = next(iter(column.foreign_keys))
                target = f"{fk.column.table.name}.{fk.column.name}"
            elif "references" in column.info:
                target = column.info["references"]
            if column.info.get("id_prefix"):
                prefix = column.info["id_prefix"]
            elif column.name == "tenant_id":
                prefix = "org"
            elif target is not None:
                prefix = _prefix_of_table(target.split(".")[0]) or ""
            else:
                continue
            if prefix:
                found.append(IdColumn(table.name, column.name, prefix, bool(column.nullable), target, has_fk,
                                      bool(column.info.get("may_dangle"))))
    return found


#: The columns that name a row's organization, in the order they are looked for.
TENANT_COLUMNS: Final = ("tenant_id", "org_id")


def tenant_column(table: str) -> str | None:
    """The column naming the organization of each of ``table``'s rows, or ``None`` (a shared table)."""
    columns = metadata.tables[table].c
    return next((name for name in TENANT_COLUMNS if name in columns), None)


def has_tenant_column(table: str) -> bool:
    """Whether ``table``'s rows each name their organization (and can be scanned for one organization)."""
    return tenant_column(table) is not None


def _of_tenant(table: sa.Table, tenant_id: str | None) -> list[sa.ColumnElement[bool]]:
    name = tenant_column(table.name)
    if tenant_id is None or name is None:
        return []
    return [table.c[name] == sa.bindparam("tenant_id", tenant_id, unique=True)]


def _values(db: Database, column: IdColumn, tenant_id: str | None) -> Iterator[object]:
    table = metadata.tables[column.table]
    col = table.c[column.column]
    key = list(table.primary_key.columns)
    query = sa.select(col).where(*_of_tenant(table, tenant_id)).order_by(*key)
    with db.engine.connect() as connection:
        result = connection.execution_options(stream_results=True, yield_per=PAGE_SIZE).execute(query)
        for row in result:
            yield row[0]


def _dangling(db: Database, column: IdColumn, tenant_id: str | None) -> tuple[int, list[str]]:
    assert column.target is not None
    target_table, target_column = column.target.split(".")
    source = metadata.tables[column.table]
    target = metadata.tables[target_table]
    src, dst = source.c[column.column], target.c[target_column]
    condition = sa.and_(src.is_not(None), src != "", *_of_tenant(source, tenant_id),
                        ~sa.exists().where(dst == src, *_of_tenant(target, tenant_id)))
    with db.engine.connect() as connection:
        count = connection.execute(sa.select(sa.func.count()).select_from(source).where(condition)).scalar_one()
        examples = connection.execute(sa.select(src).where(condition).limit(EXAMPLES)).scalars().all()
    return int(count), [repr(v) for v in examples]


def scan(db: Database, *, progress: Callable[[IdColumn], None] | None = None,
         tenant_id: str | None = None) -> list[Finding]:
    """Every problem found, table by table; an empty list means a clean database (with ``tenant_id``: that
    organization's rows of the tables with a tenant column, as the module docstring says; a bad one raises
    :class:`~agentfy.identity.InvalidIdError` naming it)."""
    if tenant_id is not None:
        tenant_id = parse_id(tenant_id, "org", field="tenant_id")
    findings: list[Finding] = []
    for column in id_columns():
        if tenant_id is not None and not has_tenant_column(column.table):
            continue
        if progress is not None:
            progress(column)
        empty = Finding(column.table, column.column, "empty")
        nil = Finding(column.table, column.column, "nil UUID")
        invalid = Finding(column.table, column.column, f"not a valid {column.prefix} ID")
        for value in _values(db, column, tenant_id):
            if value is None:
                if not column.nullable:
                    empty.add(value)
            elif value == "":
                empty.add(value)
            elif value == NIL_UUID:
                nil.add(value)
            elif not is_id(value, column.prefix):
                invalid.add(value)
        findings.extend(f for f in (empty, nil, invalid) if f.count)
        if column.target is not None and not column.may_dangle:
            count, examples = _dangling(db, column, tenant_id)
            if count:
                findings.append(Finding(column.table, column.column, f"points at nothing in {column.target}",
                                        count, examples))
    return findings
