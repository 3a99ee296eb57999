"""Keyset pagination: a list read a page at a time, in a stable order, each page one indexed query.

A :class:`Keyset` is one list's query (without order or limit), its order — columns that together are unique,
so the order is total and stable while rows come and go — and how to read that order back from an item.  A
page after an item is ``WHERE (order columns) > (the item's values) ORDER BY … LIMIT n``: its cost does not
grow with the page number, and an item added or removed between pages neither repeats nor skips another.

The repositories' list functions take ``after`` (the last item's key, from :meth:`Keyset.key`) and ``limit``;
without a limit they return everything (library callers that mean it).  The API turns keys into opaque
cursors bound to the caller's organization (``agentfy.gateway.pages``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Generic, TypeVar

import sqlalchemy as sa

from agentfy.store.db import Tx

T = TypeVar("T")
#: The page size when a caller gives none, and the most it may ask for.
DEFAULT_LIMIT: Final = 100
MAX_LIMIT: Final = 1000


class PageKeyError(ValueError):
    """A page was asked for after a key this list does not have (the wrong number of values)."""


class Keyset(Generic[T]):
    """One list's three statements (all, first page, page after a key) and its key."""

    def __init__(self, base: sa.Select[Any], order: Sequence[sa.ColumnElement[Any]],
                 key: Callable[[T], tuple[Any, ...]], *, descending: bool = False) -> None:
        """``descending``: every order column from the largest down (newest first), so "after an item" is
        ``(order columns) < (its values)``; one direction for all columns keeps that a single row comparison."""
        self.width = len(order)
        self.key = key
        limit = sa.bindparam("limit", type_=sa.Integer)
        bounds = sa.tuple_(*(sa.bindparam(f"after_{i}") for i in range(self.width)))
        after = sa.tuple_(*order) < bounds if descending else sa.tuple_(*order) > bounds
        ordered = [column.desc() for column in order] if descending else list(order)
        self.everything = base.order_by(*ordered)
        self.first = base.order_by(*ordered).limit(limit)
        self.after = base.where(after).order_by(*ordered).limit(limit)

    def fetch(self, tx: Tx, params: Mapping[str, Any], make: Callable[[tuple[Any, ...]], T], *,
              after: Sequence[Any] | None = None, limit: int | None = None) -> list[T]:
        """The items after ``after`` (from the start without it), at most ``limit`` of them (all without)."""
        if limit is None:
            if after is not None:
                raise ValueError("a page after a key needs a limit")
            return [make(row) for row in tx.all(self.everything, params)]
        if after is None:
            return [make(row) for row in tx.all(self.first, {**params, "limit": limit})]
        if len(after) != self.width:
            raise PageKeyError(f"a key of this list has {self.width} values, not {len(after)}")
        bound = {f"after_{i}": value for i, value in enumerate(after)}
        return [make(row) for row in tx.all(self.after, {**params, **bound, "limit": limit})]
