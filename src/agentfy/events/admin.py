"""Operating the bus: stats, dead letters (paged, filtered, requeued), pruning handled events.

Without a tenant they read and change the outbox across tenants: operator tools (``agentfy events …``).  With
one (``tenant_id=``, an organization's ID) every statement filters on it in SQL, which is how the API's
``/v1/org/bus`` and ``/v1/org/dead-letters`` serve one organization's admins
(:mod:`agentfy.gateway.routes.bus`); the route passes the caller's own organization, never one from a request.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import sqlalchemy as sa

from agentfy.events import counters
from agentfy.events.event import DomainEvent
from agentfy.events.outbox import event_of, stamp_in
from agentfy.identity import parse_id
from agentfy.store.db import Database, Sql, now
from agentfy.store.errors import InvalidInputError
from agentfy.store.schema import event_outbox

_T: Final = event_outbox.c
_COLUMNS: Final = (_T.id, _T.tenant_id, _T.type, _T.source_id, _T.agent_id, _T.user_id, _T.occurred_at, _T.payload)
PRUNE_BATCH: Final = 5000
MAX_PAGE: Final = 1000


def _ago(delta: timedelta) -> str:
    return stamp_in(-delta.total_seconds())


def _age_seconds(stamp: str | None) -> float | None:
    if not stamp:
        return None
    moment = datetime.fromisoformat(stamp.removesuffix("Z")).replace(tzinfo=UTC)
    return max((datetime.now(UTC) - moment).total_seconds(), 0.0)


# -- stats -----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BusStats:
    """The outbox at one moment.

    ``lag`` counts events due now and not yet claimed (the backlog); ``pending`` also counts those due
    later (a retry's backoff, a delayed event); ``oldest_pending_age_seconds`` is how long the oldest due
    event has waited.  ``daily`` holds the durable counters (observer warnings, dead letters) per UTC day.
    """

    lag: int
    pending: int
    processing: int
    dead: int
    done: int
    oldest_pending_age_seconds: float | None
    daily: dict[str, dict[str, int]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"lag": self.lag, "pending": self.pending, "processing": self.processing, "dead": self.dead,
                "done": self.done, "oldest_pending_age_seconds": self.oldest_pending_age_seconds, "daily": self.daily}


_BY_STATUS: Final = sa.select(_T.status, sa.func.count()).group_by(_T.status)
_DUE: Final = (sa.select(sa.func.count(), sa.func.min(_T.available_at))
               .where(_T.status == "pending", _T.available_at <= sa.bindparam("now")))
# One organization's: the dedup key (tenant_id, type, source_id) indexes the tenant's rows.
_OF_TENANT: Final = _T.tenant_id == sa.bindparam("tenant_id")
_TENANT_BY_STATUS: Final = _BY_STATUS.where(_OF_TENANT)
_TENANT_DUE: Final = _DUE.where(_OF_TENANT)


def stats(db: Database, *, days: int = 7, tenant_id: str | None = None) -> BusStats:
    """Counts by status, the backlog and its age, and the durable counters of the last ``days`` days.

    With ``tenant_id``, only that organization's events are counted and ``daily`` is empty: the durable
    counters are the platform's (one row per day and name, no tenant), so they are no organization's to see.
    A bad ``tenant_id`` raises :class:`~agentfy.identity.InvalidIdError` naming it.
    """
    params: dict[str, Any] = {"now": now()}
    if tenant_id is not None:
        params["tenant_id"] = parse_id(tenant_id, "org", field="tenant_id")
    by_status_query, due_query = (_BY_STATUS, _DUE) if tenant_id is None else (_TENANT_BY_STATUS, _TENANT_DUE)
    with db.transaction(write=False) as tx:
        by_status = {str(status): int(n) for status, n in tx.all(by_status_query, params)}
        due, oldest = tx.one(due_query, params) or (0, None)
    return BusStats(lag=int(due), pending=by_status.get("pending", 0), processing=by_status.get("processing", 0),
                    dead=by_status.get("dead", 0), done=by_status.get("done", 0),
                    oldest_pending_age_seconds=_age_seconds(oldest),
                    daily=counters.daily(db, days) if tenant_id is None else {})


# -- dead letters --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DeadLetter:
    event: DomainEvent
    attempts: int
    last_error: str | None
    finished_at: str | None


@dataclass(frozen=True)
class DeadLetterFilter:
    """Which dead letters: all of them by default.

    ``event_type`` exact; ``reason`` a case-insensitive substring of the last error; ``tenant_id`` an
    organization ID; ``older_than`` / ``newer_than`` how long ago they were dead-lettered; ``event_id``
    one event.  A bad value raises :class:`InvalidInputError` naming it.
    """

    event_type: str | None = None
    reason: str | None = None
    tenant_id: str | None = None
    older_than: timedelta | None = None
    newer_than: timedelta | None = None
    event_id: str | None = None

    def __post_init__(self) -> None:
        if self.tenant_id is not None:
            parse_id(self.tenant_id, "org", field="tenant_id")
        if self.event_id is not None:
            parse_id(self.event_id, "domain-event", field="event_id")
        for name in ("event_type", "reason"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise InvalidInputError(f"{name} {value!r} must be a non-empty string", field=name, value=value)
        for name in ("older_than", "newer_than"):
            value = getattr(self, name)
            if value is not None and value < timedelta(0):
                raise InvalidInputError(f"{name} {value!r} must not be negative", field=name, value=str(value))

    def shape(self) -> tuple[str, ...]:
        """The names of the filters in use (one compiled statement per shape)."""
        return tuple(name for name in _FILTERS if getattr(self, name) is not None)

    def params(self) -> dict[str, Any]:
        values: dict[str, Any] = {"event_type": self.event_type, "tenant_id": self.tenant_id,
                                  "event_id": self.event_id}
        if self.reason is not None:
            values["reason"] = "%" + re.sub(r"([\\%_])", r"\\\1", self.reason) + "%"
        if self.older_than is not None:
            values["older_than"] = _ago(self.older_than)
        if self.newer_than is not None:
            values["newer_than"] = _ago(self.newer_than)
        return {name: value for name, value in values.items() if value is not None}


_FILTERS: Final = ("event_type", "reason", "tenant_id", "older_than", "newer_than", "event_id")


def _conditions(shape: Sequence[str]) -> list[sa.ColumnElement[bool]]:
    where: list[sa.ColumnElement[bool]] = [_T.status == "dead"]
    condition: dict[str, Callable[[], sa.ColumnElement[bool]]] = {
        "event_type": lambda: _T.type == sa.bindparam("event_type"),
        "reason": lambda: sa.func.lower(_T.last_error).like(sa.func.lower(sa.bindparam("reason")), escape="\\"),
        "tenant_id": lambda: _T.tenant_id == sa.bindparam("tenant_id"),
        "older_than": lambda: _T.finished_at <= sa.bindparam("older_than"),
        "newer_than": lambda: _T.finished_at >= sa.bindparam("newer_than"),
        "event_id": lambda: _T.id == sa.bindparam("event_id"),
    }
    where.extend(condition[name]() for name in shape)
    return where


@functools.cache
def _page_query(shape: tuple[str, ...], paged: bool) -> sa.ClauseElement:
    # Built once per shape (at most 2 x 64 statements): the database's compiled-statement cache keys on the
    # statement object, so a statement built per call would be cached per call.
    where = _conditions(shape)
    if paged:  # keyset paging on (finished_at, id): stable while letters are added or requeued
        where.append(sa.or_(_T.finished_at > sa.bindparam("after_finished"),
                            sa.and_(_T.finished_at == sa.bindparam("after_finished"),
                                    _T.id > sa.bindparam("after_id"))))
    return (sa.select(*_COLUMNS, _T.attempts, _T.last_error, _T.finished_at).where(*where)
            .order_by(_T.finished_at, _T.id).limit(sa.bindparam("limit")))


@functools.cache
def _requeue_query(shape: tuple[str, ...]) -> sa.ClauseElement:
    return (sa.update(event_outbox).where(*_conditions(shape))
            .values(status="pending", attempts=0, stops=0, available_at=sa.bindparam("now"), last_error=sa.null(),
                    finished_at=sa.null(), claimed_by=sa.null(), claimed_until=sa.null()))


@dataclass(frozen=True)
class DeadLetterPage:
    """One page, oldest dead letter first; ``next_cursor`` is ``None`` on the last page."""

    letters: list[DeadLetter]
    next_cursor: str | None


_CURSOR: Final = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z)~([0-9a-z-]{1,80})")


def _parse_cursor(cursor: str) -> tuple[str, str]:
    match = _CURSOR.fullmatch(cursor)
    if match is None:
        raise InvalidInputError(f"cursor {cursor!r} is not the next_cursor of a previous page (expected "
                                "<finished_at>~<event ID>)", field="cursor", value=cursor)
    return match.group(1), match.group(2)


def dead_letters(db: Database, selection: DeadLetterFilter | None = None, *, limit: int = 50,
                 cursor: str | None = None) -> DeadLetterPage:
    """A page of at most ``limit`` (1-1000) dead letters matching ``selection``, after ``cursor`` (the
    ``next_cursor`` of the previous page)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise InvalidInputError(f"limit {limit!r} must be an integer from 1 to {MAX_PAGE}", field="limit", value=limit)
    chosen = selection or DeadLetterFilter()
    params = {**chosen.params(), "limit": limit + 1}
    if cursor is not None:
        params["after_finished"], params["after_id"] = _parse_cursor(cursor)
    with db.transaction(write=False) as tx:
        rows = tx.all(_page_query(chosen.shape(), cursor is not None), params)
    letters = [DeadLetter(event_of(row), int(row[8]), row[9], row[10]) for row in rows[:limit]]
    last = letters[-1] if len(rows) > limit else None
    return DeadLetterPage(letters, f"{last.finished_at}~{last.event.id}" if last else None)


def requeue(db: Database, selection: DeadLetterFilter) -> int:
    """Give every dead letter matching ``selection`` a fresh set of attempts (once its cause is fixed);
    how many were requeued."""
    with db.transaction() as tx:
        return int(tx.execute(_requeue_query(selection.shape()), {**selection.params(), "now": now()}).rowcount)


def requeue_dead_letter(db: Database, event_id: str, *, tenant_id: str | None = None) -> bool:
    """Requeue one dead event (with ``tenant_id``: only if it is that organization's); ``False`` if it is not
    such a dead letter, and then nothing was changed."""
    return requeue(db, DeadLetterFilter(event_id=event_id, tenant_id=tenant_id)) == 1


# -- one event, pruning --------------------------------------------------------------------------------------
_STATUS: Final = sa.select(_T.status, _T.attempts, _T.last_error).where(_T.id == sa.bindparam("id"))


def status_of(db: Database, event_id: str) -> tuple[str, int, str | None] | None:
    """``(status, attempts, last_error)`` of one event, for operators and tests."""
    with db.transaction(write=False) as tx:
        row = tx.one(_STATUS, {"id": event_id})
    return None if row is None else (str(row[0]), int(row[1]), row[2])


def _prune(dialect: str) -> sa.ClauseElement:
    # available_at <= finished_at always (an event is handled after it is due), so the range on the
    # (status, available_at) index bounds the scan and finished_at decides.
    old = (sa.select(_T.id).where(_T.status == "done", _T.available_at < sa.bindparam("cutoff"),
                                  _T.finished_at < sa.bindparam("cutoff")).limit(sa.bindparam("limit")))
    return sa.delete(event_outbox).where(_T.id.in_(old.scalar_subquery()))


_PRUNE: Final = Sql(_prune)


def prune(db: Database, *, older_than_days: float, batch: int = PRUNE_BATCH) -> int:
    """Delete events handled more than ``older_than_days`` ago, ``batch`` rows per transaction (short write
    locks); how many were deleted.  Dead letters and unhandled events are never pruned.

    Their dedup keys go with them: publishing the same ``(tenant, type, source_id)`` again after that is a
    new event.
    """
    if older_than_days < 0:
        raise InvalidInputError(f"older_than_days {older_than_days!r} must not be negative", field="older_than_days",
                                value=older_than_days)
    cutoff = _ago(timedelta(days=older_than_days))
    deleted = 0
    while True:
        with db.transaction() as tx:
            count = int(tx.execute(_PRUNE, {"cutoff": cutoff, "limit": batch}).rowcount)
        deleted += count
        if count < batch:
            return deleted


_AGE: Final = re.compile(r"(\d+(?:\.\d+)?)([smhdw]?)")
_UNIT_SECONDS: Final = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_age(text: str, *, field: str = "age") -> timedelta:
    """``90``, ``90s``, ``15m``, ``2h``, ``3d`` or ``1w`` as a duration; :class:`InvalidInputError` naming
    the value otherwise."""
    match = _AGE.fullmatch(text.strip())
    if match is None:
        raise InvalidInputError(f"{field} {text!r} is not a duration: expected a number with an optional unit s, m, "
                                "h, d or w (e.g. 90s, 15m, 2h, 3d)", field=field, value=text)
    return timedelta(seconds=float(match.group(1)) * _UNIT_SECONDS[match.group(2)])
