"""Counting what a piece of work sends to the database: every statement on the store's pooled connections.

:func:`recording` wraps the cursor of every connection the store's pool opens from then on (the idle ones are
closed first, so none escapes), and records each ``execute`` and ``executemany`` — with ``BEGIN`` among them,
so :attr:`Recorded.transactions` counts the transactions.  On PostgreSQL every recorded call is one round trip
to the server (the connections are in autocommit mode; ``BEGIN`` and ``COMMIT`` are statements of their own);
on SQLite each is a call into the embedded engine.  The run locks' own connection (PostgreSQL's advisory
locks, outside the pool) is not counted here.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from agentfy.store.db import Database


@dataclass
class Recorded:
    """The statements sent, in order (their SQL text, parameters left out), and which were sent together in a
    pipeline (:meth:`agentfy.store.db.Tx.pipelined`: one round trip for all of them on PostgreSQL)."""

    statements: list[str] = field(default_factory=list)
    #: For each statement, the number of the pipeline it was sent in (0: on its own).
    pipeline_of: list[int] = field(default_factory=list)
    pipelines: int = 0
    _open_pipeline: int = 0

    def add(self, sql: str) -> None:
        self.statements.append(sql)
        self.pipeline_of.append(self._open_pipeline)

    @property
    def transactions(self) -> int:
        return sum(1 for sql in self.statements if sql.split(None, 1)[0].upper() == "BEGIN")

    @property
    def round_trips(self) -> int:
        """What the client waits for on PostgreSQL: each statement on its own, each pipeline once."""
        return sum(1 for number in self.pipeline_of if number == 0) + len(set(self.pipeline_of) - {0})

    def clear(self) -> None:
        self.statements.clear()
        self.pipeline_of.clear()

    def summary(self) -> str:
        """One line per statement (for an assertion's message: what changed when a count did)."""
        return "\n".join(("  | " if number else "") + " ".join(sql.split())[:160]
                         for sql, number in zip(self.statements, self.pipeline_of, strict=True))


class _CountingConnection:
    """The driver connection as :meth:`Tx.pipelined` uses it: its cursors count, its pipelines are numbered."""

    def __init__(self, connection: Any, recorded: Recorded) -> None:
        self._connection = connection
        self._recorded = recorded

    def cursor(self, *args: Any, **kwargs: Any) -> _CountingCursor:
        return _CountingCursor(self._connection.cursor(*args, **kwargs), self._recorded)

    @contextmanager
    def pipeline(self) -> Iterator[Any]:
        recorded = self._recorded
        recorded.pipelines += 1
        recorded._open_pipeline = recorded.pipelines
        try:
            with self._connection.pipeline() as pipeline:
                yield pipeline
        finally:
            recorded._open_pipeline = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._connection, name)


class _CountingCursor:
    """A driver cursor that records what it is asked to run and otherwise is the cursor."""

    def __init__(self, cursor: Any, recorded: Recorded) -> None:
        self._cursor = cursor
        self._recorded = recorded

    def execute(self, sql: str, params: Any = None) -> Any:
        self._recorded.add(sql)
        return self._cursor.execute(sql, params) if params is not None else self._cursor.execute(sql)

    def executemany(self, sql: str, rows: Sequence[Any]) -> Any:
        self._recorded.add(sql)
        return self._cursor.executemany(sql, rows)

    @property
    def connection(self) -> _CountingConnection:
        return _CountingConnection(self._cursor.connection, self._recorded)

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
