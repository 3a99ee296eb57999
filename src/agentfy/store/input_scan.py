"""The input scan: stored rows that break today's input policy (``agentfy db scan``).

Rows written before the policy existed may hold a NUL in a text column (SQLite stored it; PostgreSQL never
could), or a JSON document nested deeper than the limit, holding a lone surrogate, an integer beyond 64 bits,
or text that is not JSON at all.  Reads never fail on them — :func:`agentfy.store.inputs.repaired` marks what
it cannot show — but an operator should know, and fix them: the scan names each by table, row and column,
with the problem.  It reads every text column of every table, a page at a time, and changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final

import sqlalchemy as sa

from agentfy.store.db import Database
from agentfy.store.inputs import json_problem, text_problem
from agentfy.store.schema import metadata

PAGE_SIZE: Final = 5000
#: Tables that hold no input: bookkeeping of the migrations, the cutover and the change feed.
_SKIPPED: Final = frozenset({"alembic_version", "id_migrations", "change_log"})


@dataclass(frozen=True)
class InputFinding:
    """One stored value that breaks the input policy."""

    table: str
    row: str  # the row's primary key, as text
    column: str
    problem: str


def _row_key(table: sa.Table, row: Any) -> str:
    return "/".join(str(row[c.name]) for c in table.primary_key.columns)


def _problem(value: object, is_json: bool) -> str | None:
    if not isinstance(value, str):
        return None
    problem = text_problem(value)
    if problem is not None or not is_json:
        return problem
    try:
        document = json.loads(value)
    except (ValueError, RecursionError):
        return "is not JSON"
    return json_problem(document)


def scan_inputs(db: Database, progress: Callable[[str], None] | None = None) -> Iterator[InputFinding]:
    """Every stored value that breaks the input policy, table by table (``progress(table)`` before each)."""
    for table in metadata.sorted_tables:
        if table.name in _SKIPPED:
            continue
        columns = [c for c in table.columns if isinstance(c.type, sa.Text)]
        if not columns:
            continue
        if progress is not None:
            progress(table.name)
        keys = list(table.primary_key.columns)
        query = sa.select(*{*keys, *columns}).order_by(*keys)
        with db.engine.connect() as connection:
            result = connection.execution_options(stream_results=True, yield_per=PAGE_SIZE).execute(query)
            for row in result.mappings():
                for column in columns:
                    problem = _problem(row[column.name], bool(column.info.get("json")))
                    if problem is not None:
                        yield InputFinding(table.name, _row_key(table, row), column.name, problem)
