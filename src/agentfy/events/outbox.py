"""The outbox: events stored in the same transaction as the change that caused them, and claimed by workers.

* ``publish(tx, …)`` inserts into ``event_outbox`` inside the caller's transaction: an event is never lost
  (it commits with the change) and never published for a rolled-back change.  Deduplication is by
  ``(tenant_id, type, source_id)``: the tenant is part of the key, so two tenants with the same session key
  never swallow each other's events; a duplicate publish is a no-op that returns ``None``.
* ``claim(db, worker, …)`` takes due events under a lease: ``FOR UPDATE SKIP LOCKED`` on PostgreSQL, so any
  number of processes can consume; on SQLite the claim runs in a ``BEGIN IMMEDIATE`` transaction, so claims
  are serialised (a single claimer at a time).  An event whose lease ran out (the worker crashed between
  claim and acknowledgement) is due again: redelivery.
* ``complete(tx, claim)`` acknowledges inside the handler's own transaction, so the handler's writes and the
  acknowledgement commit together (exactly-once effects); if the lease was lost meanwhile the
  acknowledgement fails and the handler's writes roll back.
* ``fail(db, claim, error, retry=…)`` reschedules with exponential backoff, or moves the event to the
  dead-letter state after its last attempt or at once for a deterministic error (an invalid ID).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from agentfy.events.event import DomainEvent
from agentfy.events.validation import check_event_ids
from agentfy.store.db import Database, Sql, Tx, now
from agentfy.store.errors import StoreError
from agentfy.store.repos._batch import json_list, json_values
from agentfy.store.repos._common import dump_json, load_json
from agentfy.store.schema import event_outbox

_T: Final = event_outbox.c


@dataclass(frozen=True)
class BusSettings:
    """How the bus behaves; the defaults suit one process on SQLite and many on PostgreSQL alike."""

    strict_ids: bool = False  # refuse publishes whose tenant or agent ID is not an ID (default: warn)
    validate_ids: bool = True  # False only to measure what validation costs (bench/events.py)
    max_attempts: int = 5
    backoff_base_seconds: float = 1.0
    backoff_max_seconds: float = 300.0
    lease_seconds: float = 60.0


DEFAULT_SETTINGS: Final = BusSettings()


@dataclass(frozen=True)
class Claim:
    """An event a worker holds under a lease; ``attempt`` counts from 1."""

    event: DomainEvent
    worker: str
    attempt: int


@dataclass(frozen=True)
class DeadLetter:
    event: DomainEvent
    attempts: int
    last_error: str | None
    finished_at: str | None


class LeaseLostError(StoreError):
    """The worker's lease ran out and another worker may hold the event: the handler's writes roll back."""

    code = "lease_lost"

    def __init__(self, event_id: str) -> None:
        super().__init__(f"the lease on event {event_id!r} was lost; its work is rolled back and redelivered")
        self.event_id = event_id


def _stamp(moment: datetime) -> str:
    return moment.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def _later(seconds: float) -> str:
    return _stamp(datetime.now(UTC) + timedelta(seconds=seconds))


_COLUMNS: Final = ("id", "tenant_id", "type", "source_id", "agent_id", "user_id", "occurred_at", "payload")


def _insert(dialect: str) -> sa.ClauseElement:
    names = [*_COLUMNS, "status", "attempts", "available_at"]
    values: dict[str, Any] = {c: sa.bindparam(c) for c in names}
    if dialect == "postgresql":
        return (postgresql.insert(event_outbox).values(values)
                .on_conflict_do_nothing(index_elements=["tenant_id", "type", "source_id"]).returning(_T.id))
    return (sqlite.insert(event_outbox).values(values)
            .on_conflict_do_nothing(index_elements=["tenant_id", "type", "source_id"]).returning(_T.id))


_INSERT: Final = Sql(_insert)


def _claim(dialect: str) -> sa.ClauseElement:
    # Index-friendly: one range of (status, available_at), oldest first.  Expired leases are turned back
    # into pending events by _EXPIRE just before, so this never needs an OR that defeats the index.
    due = sa.and_(_T.status == "pending", _T.available_at <= sa.bindparam("now"),
                  _T.type.in_(json_values("types", dialect)))
    pick = sa.select(_T.id).where(due).order_by(_T.available_at).limit(sa.bindparam("limit"))
    if dialect == "postgresql":
        pick = pick.with_for_update(skip_locked=True)
    return (sa.update(event_outbox).where(_T.id.in_(pick.scalar_subquery()))
            .values(status="processing", claimed_by=sa.bindparam("worker"), claimed_until=sa.bindparam("until"),
                    attempts=_T.attempts + 1)
            .returning(*(_T[c] for c in _COLUMNS), _T.attempts))


_EXPIRE: Final = (sa.update(event_outbox)
                  .where(_T.status == "processing", _T.claimed_until <= sa.bindparam("now"))
                  .values(status="pending", claimed_by=sa.null(), claimed_until=sa.null()))
_CLAIM: Final = Sql(_claim)
_COMPLETE: Final = (sa.update(event_outbox)
                    .where(_T.id == sa.bindparam("id"), _T.claimed_by == sa.bindparam("worker"),
                           _T.status == "processing")
                    .values(status="done", claimed_by=sa.null(), claimed_until=sa.null(),
                            finished_at=sa.bindparam("now")))
_RESCHEDULE: Final = (sa.update(event_outbox)
                      .where(_T.id == sa.bindparam("id"), _T.claimed_by == sa.bindparam("worker"))
                      .values(status=sa.bindparam("status"), available_at=sa.bindparam("available_at"),
                              claimed_by=sa.null(), claimed_until=sa.null(), last_error=sa.bindparam("error"),
                              finished_at=sa.bindparam("finished_at")))
_DEAD: Final = (sa.select(*(_T[c] for c in _COLUMNS), _T.attempts, _T.last_error, _T.finished_at)
                .where(_T.status == "dead").order_by(_T.finished_at))
_STATUS: Final = sa.select(_T.status, _T.attempts, _T.last_error).where(_T.id == sa.bindparam("id"))
_REQUEUE: Final = (sa.update(event_outbox).where(_T.id == sa.bindparam("id"), _T.status == "dead")
                   .values(status="pending", attempts=0, available_at=sa.bindparam("now"), last_error=sa.null(),
                           finished_at=sa.null()))


def _event(row: tuple[Any, ...]) -> DomainEvent:
    return DomainEvent(id=row[0], tenant_id=row[1], type=row[2], source_id=row[3], agent_id=row[4],
                       user_id=row[5], occurred_at=row[6], payload=load_json(row[7]))


def publish(tx: Tx, *, type: str, tenant_id: str, source_id: str, agent_id: str | None = None,
            user_id: str | None = None, payload: dict[str, Any] | None = None,
            settings: BusSettings = DEFAULT_SETTINGS, available_at: str | None = None) -> DomainEvent | None:
    """Store an event in the caller's transaction; ``None`` if ``(tenant, type, source_id)`` was published.

    ``available_at`` (a store timestamp) delays delivery until then; by default the event is due at once.

    The tenant and agent IDs are validated first (:func:`check_event_ids`): warned about and counted by
    default, refused in strict mode (nothing is written).
    """
    event = DomainEvent(id=tx.db.mint("domain-event"), type=type, tenant_id=tenant_id, source_id=source_id,
                        occurred_at=now(), agent_id=agent_id or None, user_id=user_id or None,
                        payload=payload or {})
    if settings.validate_ids:
        check_event_ids(event, strict=settings.strict_ids)
    row = tx.execute(_INSERT, {"id": event.id, "tenant_id": event.tenant_id, "type": event.type,
                               "source_id": event.source_id, "agent_id": event.agent_id,
                               "user_id": event.user_id, "occurred_at": event.occurred_at,
                               "payload": dump_json(event.payload, field="payload"), "status": "pending",
                               "attempts": 0, "available_at": available_at or event.occurred_at}).fetchone()
    return event if row is not None else None


def claim(db: Database, worker: str, types: Iterable[str], *, limit: int = 10,
          settings: BusSettings = DEFAULT_SETTINGS) -> list[Claim]:
    """Take up to ``limit`` due events of ``types`` (pending and available, or processing whose lease ran
    out), oldest first."""
    with db.transaction() as tx:
        moment = now()
        tx.execute(_EXPIRE, {"now": moment})  # redelivery: a crashed worker's lease has run out
        rows = tx.all(_CLAIM, {"now": moment, "limit": limit, "worker": worker, "types": json_list(types),
                               "until": _later(settings.lease_seconds)})
    return [Claim(_event(row), worker, int(row[8])) for row in sorted(rows, key=lambda r: str(r[6]))]


def complete(tx: Tx, held: Claim) -> None:
    """Acknowledge inside the handler's transaction; :class:`LeaseLostError` if the lease is gone."""
    if tx.execute(_COMPLETE, {"id": held.event.id, "worker": held.worker, "now": now()}).rowcount != 1:
        raise LeaseLostError(held.event.id)


def fail(db: Database, held: Claim, error: str, *, retry: bool, settings: BusSettings = DEFAULT_SETTINGS) -> str:
    """Record a failed attempt: back to ``pending`` after a backoff, or ``dead``; returns the new status."""
    dead = not retry or held.attempt >= settings.max_attempts
    delay = min(settings.backoff_base_seconds * 2 ** (held.attempt - 1), settings.backoff_max_seconds)
    status = "dead" if dead else "pending"
    with db.transaction() as tx:
        tx.execute(_RESCHEDULE, {"id": held.event.id, "worker": held.worker, "status": status,
                                 "available_at": _later(0 if dead else delay), "error": error[:2000],
                                 "finished_at": now() if dead else None})
    return status


def dead_letters(db: Database) -> list[DeadLetter]:
    with db.transaction(write=False) as tx:
        return [DeadLetter(_event(row), int(row[8]), row[9], row[10]) for row in tx.all(_DEAD)]


def status_of(db: Database, event_id: str) -> tuple[str, int, str | None] | None:
    """``(status, attempts, last_error)`` of one event, for operators and tests."""
    with db.transaction(write=False) as tx:
        row = tx.one(_STATUS, {"id": event_id})
    return None if row is None else (str(row[0]), int(row[1]), row[2])


def requeue_dead_letter(db: Database, event_id: str) -> bool:
    """Give a dead event a fresh set of attempts (after the cause was fixed)."""
    with db.transaction() as tx:
        return bool(tx.execute(_REQUEUE, {"id": event_id, "now": now()}).rowcount)
