"""Counting what a piece of work sends to the database: every statement on the store's pooled connections.

:func:`recording` wraps the cursor of every connection the store's pool opens from then on (the idle ones are
closed first, so none escapes), and records each ``execute`` and ``executemany`` — with ``BEGIN`` among them,
so :attr:`Recorded.transactions` counts the transactions.  On PostgreSQL every recorded call is one round trip
to the server (the connections are in autocommit mode; ``BEGIN`` and ``COMMIT`` are statements of their own),
except that a ``BEGIN`` goes in one pipeline with the statement after it: :attr:`Recorded.round_trips` counts
statements, an upper bound there; on SQLite each is a call into the embedded engine.  The run locks' own
connection (PostgreSQL's advisory locks, outside the pool) is not counted here.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from agentfy.store.db import Database


@dataclass
class Recorded:
    """The statements sent, in order (their SQL text, parameters left out)."""

    statements: list[str] = field(default_factory=list)

    @property
    def transactions(self) -> int:
        return sum(1 for sql in self.statements if sql.split(None, 1)[0].upper() == "BEGIN")

    @property
    def round_trips(self) -> int:
        return len(self.statements)

    def clear(self) -> None:
        self.statements.clear()

    def summary(self) -> str:
        """One line per statement (for an assertion's message: what changed when a count did)."""
        return "\n".join(" ".join(sql.split())[:160] for sql in self.statements)


class _CountingCursor:
    """A driver cursor that records what it is asked to run and otherwise is the cursor."""

    def __init__(self, cursor: Any, recorded: Recorded) -> None:
        self._cursor = cursor
        self._recorded = recorded

    def execute(self, sql: str, params: Any = None) -> Any:
        self._recorded.statements.append(sql)
        return self._cursor.execute(sql, params) if params is not None else self._cursor.execute(sql)

    def executemany(self, sql: str, rows: Sequence[Any]) -> Any:
        self._recorded.statements.append(sql)
        return self._cursor.executemany(sql, rows)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)


@contextmanager
def recording(db: Database) -> Iterator[Recorded]:
    """Record every statement ``db``'s pool runs inside the block (see the module docstring)."""
    pool = db.pool
    recorded = Recorded()
    connect = pool._connect

    def counting() -> tuple[Any, Any]:
        connection, cursor = connect()
        return connection, _CountingCursor(cursor, recorded)

    pool.discard_idle()
    pool._connect = counting  # type: ignore[method-assign]
    try:
        yield recorded
    finally:
        del pool._connect  # type: ignore[method-assign]
        pool.discard_idle()
