"""Statement builders shared by the repositories."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from agentfy.store.db import Sql


def insert(table: sa.Table, columns: Sequence[str]) -> sa.Insert:
    """``INSERT INTO table (columns) VALUES (:column, …)``: every value a named parameter."""
    return sa.insert(table).values({c: sa.bindparam(c) for c in columns})


def insert_returning_id(table: sa.Table, columns: Sequence[str]) -> Sql:
    """``INSERT … ON CONFLICT (id) DO NOTHING RETURNING id``: a minted-ID collision returns no row.

    Only the primary key is the conflict target, so any other unique violation still raises.
    """
    names = ["id", *columns]

    def build(dialect: str) -> sa.ClauseElement:
        values: dict[str, Any] = {c: sa.bindparam(c) for c in names}
        if dialect == "postgresql":
            return (postgresql.insert(table).values(values)
                    .on_conflict_do_nothing(index_elements=["id"]).returning(table.c.id))
        return sqlite.insert(table).values(values).on_conflict_do_nothing(index_elements=["id"]).returning(table.c.id)

    return Sql(build)
