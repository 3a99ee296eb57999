"""The outbox: events stored in the same transaction as the change that caused them, and leased to workers.

* ``publish(tx, …)`` inserts into ``event_outbox`` inside the caller's transaction: an event is never lost
  (it commits with the change) and never published for a rolled-back change.  Deduplication is by
  ``(tenant_id, type, source_id)``: the tenant is part of the key, so two tenants with the same session key
  never swallow each other's events; a duplicate publish is a no-op that returns ``None``.
* ``claim(db, worker, …)`` leases due events to a worker: ``FOR UPDATE SKIP LOCKED`` on PostgreSQL, so any
  number of processes can consume; on SQLite the claim runs in a ``BEGIN IMMEDIATE`` transaction, so claims
  are serialised.  **Every claim counts as an attempt.**
* A lease that runs out means the worker stopped while holding the event (killed, out of memory, a lost
  machine): the claim's sweep puts it back with one more ``stops``, or dead-letters it when it already had
  its ``max_attempts`` deliveries ("worker stopped N times while handling it").  An event with stops is a
  *suspect* and is claimed alone, never in a batch, so an event that kills its worker cannot take the
  events claimed with it down again.
* A running worker renews its leases (:func:`renew`), so a handler may run longer than the lease.
* ``lock_held(tx, …)`` then ``acknowledge(tx, …)``: inside the handlers' write transaction the worker locks
  the events it still holds (a lease lost meanwhile drops out), and acknowledges them in the same
  transaction as the handlers' writes (exactly-once effects).
* ``reschedule(tx, …)`` records a failed attempt: back to ``pending`` after a backoff with jitter, or
  ``dead`` after the last attempt, or at once for a deterministic error.  ``release(db, …)`` gives back
  events a stopping worker never handled, without counting the attempt.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from agentfy.events import counters
from agentfy.events.event import DomainEvent
from agentfy.events.logs import agent_keys, event_fields, log
from agentfy.events.settings import DEFAULT_BUS_SETTINGS, BusSettings
from agentfy.events.validation import check_event_ids
from agentfy.store.db import Database, Sql, Tx, now
from agentfy.store.errors import StoreError
from agentfy.store.repos._batch import json_list, json_values
from agentfy.store.repos._common import dump_json, load_json
from agentfy.store.schema import event_outbox

logger: Final = logging.getLogger("agentfy.eventbus")

_T: Final = event_outbox.c
_RANDOM: Final = secrets.SystemRandom()
_MAX_ERROR: Final = 2000


@dataclass(frozen=True)
class Claim:
    """An event a worker holds under a lease; ``attempt`` counts deliveries from 1, ``stops`` the times a
    worker stopped while holding it (a suspect, claimed alone, when above 0)."""

    event: DomainEvent
    worker: str
    attempt: int
    stops: int = 0


class LeaseLostError(StoreError):
    """The worker's lease ran out and another worker may hold the event: the handler's writes roll back."""

    code = "lease_lost"

    def __init__(self, event_id: str) -> None:
        super().__init__(f"the lease on event {event_id!r} was lost; its work is rolled back and redelivered")
        self.event_id = event_id


def stamp_in(seconds: float) -> str:
    """The store's timestamp ``seconds`` from now (negative: ago), as ``available_at`` and the others hold it."""
    moment = datetime.now(UTC) + timedelta(seconds=seconds)
    return moment.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def retry_delay(attempt: int, settings: BusSettings) -> float:
    """Seconds before attempt ``attempt + 1``: exponential, capped, shortened by up to ``backoff_jitter``."""
    delay = min(settings.backoff_base_seconds * 2.0 ** min(attempt - 1, 1023), settings.backoff_max_seconds)
    return delay * (1 - settings.backoff_jitter * _RANDOM.random())


_COLUMNS: Final = ("id", "tenant_id", "type", "source_id", "agent_id", "user_id", "occurred_at", "payload")
_RETURNED: Final = (*(_T[c] for c in _COLUMNS), _T.attempts, _T.stops, _T.last_error)


def _insert(dialect: str) -> sa.ClauseElement:
    names = [*_COLUMNS, "status", "attempts", "available_at"]
    values: dict[str, Any] = {c: sa.bindparam(c) for c in names}
    if dialect == "postgresql":
        return (postgresql.insert(event_outbox).values(values)
                .on_conflict_do_nothing(index_elements=["tenant_id", "type", "source_id"]).returning(_T.id))
    return (sqlite.insert(event_outbox).values(values)
            .on_conflict_do_nothing(index_elements=["tenant_id", "type", "source_id"]).returning(_T.id))


def _lease_only(tx: Tx) -> None:
    """Commit ``tx`` without waiting for the disk (PostgreSQL).

    For transactions that only move leases — a claim, a renewal, a give-back — never for one that writes
    effects or acknowledges them.  Other sessions see the commit at once, as always; only a crash of the
    database server itself (not of a worker) may lose the last such commits, which puts the events back as
    they were before the claim: nothing is lost or done twice, an attempt may go uncounted.  It saves the
    disk flush that is most of a claim's cost (measured in ``bench/events.py``).  SQLite in WAL mode with
    ``synchronous=NORMAL`` already commits that way.
    """
    if tx.db.dialect == "postgresql":
        tx.execute(_NO_FLUSH)


def _locked(pick: sa.Select[Any], dialect: str) -> sa.Select[Any]:
    """``pick`` skipping rows another transaction holds (PostgreSQL); SQLite has one writer anyway."""
    return pick.with_for_update(skip_locked=True) if dialect == "postgresql" else pick


def _sweep(dialect: str) -> sa.ClauseElement:
    # Rows locked by a live worker's write transaction are skipped: that worker is acknowledging them.
    expired = sa.select(_T.id).where(_T.status == "processing", _T.claimed_until <= sa.bindparam("now"))
    return (sa.update(event_outbox).where(_T.id.in_(_locked(expired, dialect).scalar_subquery()))
            .values(status="pending", stops=_T.stops + 1, claimed_by=sa.null(), claimed_until=sa.null())
            .returning(*_RETURNED))


def _claim(dialect: str, *, suspects: bool) -> sa.ClauseElement:
    # Index-friendly: one range of (status, available_at), oldest first; expired leases were turned back into
    # pending events by the sweep just before, so this never needs an OR that defeats the index.  Suspects
    # come from their own partial index (the literal "stops > 0" is what lets both engines use it), fewest
    # stops first, so a repeat crasher waits behind the batch-mates it took down.
    due = [_T.status == "pending", _T.available_at <= sa.bindparam("now"), _T.type.in_(json_values("types", dialect))]
    if suspects:
        pick = sa.select(_T.id).where(*due, sa.text("stops > 0")).order_by(_T.stops, _T.available_at).limit(1)
    else:
        pick = sa.select(_T.id).where(*due, _T.stops == 0).order_by(_T.available_at).limit(sa.bindparam("limit"))
    return (sa.update(event_outbox).where(_T.id.in_(_locked(pick, dialect).scalar_subquery()))
            .values(status="processing", claimed_by=sa.bindparam("worker"), claimed_until=sa.bindparam("until"),
                    attempts=_T.attempts + 1)
            .returning(*_RETURNED))


def _mine(dialect: str) -> sa.ColumnElement[bool]:
    """The events of ``:ids`` that ``:worker`` still holds."""
    return sa.and_(_T.id.in_(json_values("ids", dialect)), _T.claimed_by == sa.bindparam("worker"),
                   _T.status == "processing")


def _renew(dialect: str) -> sa.ClauseElement:
    mine = _locked(sa.select(_T.id).where(_mine(dialect)), dialect)
    return sa.update(event_outbox).where(_T.id.in_(mine.scalar_subquery())).values(claimed_until=sa.bindparam("until"))


def _held(dialect: str) -> sa.ClauseElement:
    mine = sa.select(_T.id).where(_mine(dialect))
    return mine.with_for_update() if dialect == "postgresql" else mine


_NO_FLUSH: Final = "SET LOCAL synchronous_commit = off"
_INSERT: Final = Sql(_insert)
_SWEEP: Final = Sql(_sweep)
_CLAIM_SUSPECT: Final = Sql(lambda d: _claim(d, suspects=True))
_CLAIM_BATCH: Final = Sql(lambda d: _claim(d, suspects=False))
_RENEW: Final = Sql(_renew)
_HELD: Final = Sql(_held)
_ACK: Final = Sql(lambda d: sa.update(event_outbox).where(_mine(d)).values(
    status="done", claimed_by=sa.null(), claimed_until=sa.null(), finished_at=sa.bindparam("now")).returning(_T.id))
_RELEASE: Final = Sql(lambda d: sa.update(event_outbox).where(_mine(d)).values(
    status="pending", claimed_by=sa.null(), claimed_until=sa.null(), attempts=_T.attempts - 1))
_RESCHEDULE: Final = (sa.update(event_outbox)
                      .where(_T.id == sa.bindparam("id"), _T.claimed_by == sa.bindparam("worker"),
                             _T.status == "processing")
                      .values(status=sa.bindparam("status"), available_at=sa.bindparam("available_at"),
                              claimed_by=sa.null(), claimed_until=sa.null(), last_error=sa.bindparam("error"),
                              finished_at=sa.bindparam("finished_at"), stops=_T.stops + sa.bindparam("stops")))
_PUBLISHED: Final = sa.select(_T.id).where(_T.tenant_id == sa.bindparam("tenant_id"), _T.type == sa.bindparam("type"),
                                          _T.source_id == sa.bindparam("source_id"))
_DEAD_AFTER_STOPS: Final = (sa.update(event_outbox).where(_T.id == sa.bindparam("id"), _T.status == "pending")
                            .values(status="dead", last_error=sa.bindparam("error"),
                                    finished_at=sa.bindparam("now")))


def event_of(row: Sequence[Any]) -> DomainEvent:
    """The event of a row that starts with the outbox's event columns (``id`` … ``payload``)."""
    return DomainEvent(id=row[0], tenant_id=row[1], type=row[2], source_id=row[3], agent_id=row[4],
                       user_id=row[5], occurred_at=row[6], payload=load_json(row[7]))


def publish(tx: Tx, *, type: str, tenant_id: str, source_id: str, agent_id: str | None = None,
            user_id: str | None = None, payload: dict[str, Any] | None = None,
            settings: BusSettings = DEFAULT_BUS_SETTINGS, available_at: str | None = None) -> DomainEvent | None:
    """Store an event in the caller's transaction; ``None`` if ``(tenant, type, source_id)`` was published.

    ``available_at`` (a store timestamp) delays delivery until then; by default the event is due at once.

    The tenant and agent IDs are validated first (:func:`check_event_ids`): warned about and counted (in
    memory and, in this transaction, in the durable counters) by default, refused in strict mode (nothing is
    written).  ``settings``: the bus settings the caller was given (the defaults when omitted).
    """
    bus = settings
    event = DomainEvent(id=tx.db.mint("domain-event"), type=type, tenant_id=tenant_id, source_id=source_id,
                        occurred_at=now(), agent_id=agent_id or None, user_id=user_id or None,
                        payload=payload or {})
    if bus.validate_ids:
        for warning in check_event_ids(event, strict=bus.strict_ids):
            counters.add(tx, warning)
    row = tx.execute(_INSERT, {"id": event.id, "tenant_id": event.tenant_id, "type": event.type,
                               "source_id": event.source_id, "agent_id": event.agent_id,
                               "user_id": event.user_id, "occurred_at": event.occurred_at,
                               "payload": dump_json(event.payload, field="payload"), "status": "pending",
                               "attempts": 0, "available_at": available_at or event.occurred_at}).fetchone()
    return event if row is not None else None


def is_published(tx: Tx, tenant_id: str, type: str, source_id: str) -> bool:
    """Whether ``(tenant_id, type, source_id)`` is in the outbox (the dedup key of :func:`publish`)."""
    return tx.one(_PUBLISHED, {"tenant_id": tenant_id, "type": type, "source_id": source_id}) is not None


def stopped_reason(stops: int, last_error: str | None) -> str:
    """Why an event whose worker kept stopping was dead-lettered."""
    reason = f"worker stopped {stops} times while handling it"
    return f"{reason}; last error: {last_error}" if last_error else reason


def _sweep_expired(tx: Tx, moment: str, settings: BusSettings) -> list[tuple[DomainEvent, int, str]]:
    """Put events of stopped workers back (suspects now); dead-letter those already at their last attempt.
    Returns the dead-lettered ones as ``(event, attempts, reason)``."""
    dead: list[tuple[DomainEvent, int, str]] = []
    for row in tx.all(_SWEEP, {"now": moment}):
        attempts, stops, last_error = int(row[8]), int(row[9]), row[10]
        if attempts >= settings.max_attempts:
            reason = stopped_reason(stops, last_error)[:_MAX_ERROR]
            tx.execute(_DEAD_AFTER_STOPS, {"id": row[0], "error": reason, "now": moment})
            counters.add(tx, counters.DEAD_LETTER)
            dead.append((event_of(row), attempts, reason))
    return dead


def claim(db: Database, worker: str, types: Iterable[str], *, limit: int | None = None,
          settings: BusSettings = DEFAULT_BUS_SETTINGS, sweep: bool = True) -> list[Claim]:
    """Lease due events of ``types`` to ``worker``, oldest first: one suspect alone if any is due, else up
    to ``limit`` (default ``settings.batch_size``) others.  Each claim counts as an attempt.

    ``sweep=False`` skips the expired-lease sweep and the look for suspects (two statements): a busy worker
    does them about once a second rather than per batch, since leases run out in tens of seconds anyway.
    """
    bus = settings
    params = {"worker": worker, "types": json_list(types), "until": stamp_in(bus.lease_seconds),
              "limit": bus.batch_size if limit is None else limit}
    dead: list[tuple[DomainEvent, int, str]] = []
    with db.transaction() as tx:
        _lease_only(tx)
        moment = params["now"] = now()
        if sweep:
            dead = _sweep_expired(tx, moment, bus)
        rows = (sweep and tx.all(_CLAIM_SUSPECT, params)) or tx.all(_CLAIM_BATCH, params)
    if dead:
        keys = agent_keys(db, [event for event, _, _ in dead])
        for event, attempts, reason in dead:
            log(logger, logging.ERROR, counters.DEAD_LETTER,
                event_fields(event, agent_key=keys.get((event.tenant_id, event.agent_id or "")), attempt=attempts,
                             reason=reason, worker=worker))
    return [Claim(event_of(row), worker, int(row[8]), int(row[9])) for row in sorted(rows, key=lambda r: str(r[6]))]


def renew(db: Database, worker: str, event_ids: Sequence[str], settings: BusSettings = DEFAULT_BUS_SETTINGS) -> int:
    """Extend ``worker``'s leases on ``event_ids`` by a full lease; the number renewed (on PostgreSQL rows
    being acknowledged at that moment are skipped: they need no renewal)."""
    bus = settings
    with db.transaction() as tx:
        _lease_only(tx)
        return int(tx.execute(_RENEW, {"ids": json_list(event_ids), "worker": worker,
                                       "until": stamp_in(bus.lease_seconds)}).rowcount)


def lock_held(tx: Tx, worker: str, event_ids: Sequence[str]) -> set[str]:
    """Those of ``event_ids`` that ``worker`` still holds, locked until ``tx`` ends (PostgreSQL; on SQLite
    the write transaction already excludes every other writer).  From here on no sweep can take them."""
    if not event_ids:
        return set()
    return {str(row[0]) for row in tx.all(_HELD, {"ids": json_list(event_ids), "worker": worker})}


def acknowledge(tx: Tx, worker: str, event_ids: Sequence[str]) -> set[str]:
    """Mark ``event_ids`` done in ``tx`` (the handlers' transaction); those ``worker`` still held, now locked
    until ``tx`` ends."""
    if not event_ids:
        return set()
    return {str(row[0]) for row in tx.all(_ACK, {"ids": json_list(event_ids), "worker": worker, "now": now()})}


def complete(tx: Tx, held: Claim) -> None:
    """Acknowledge one event inside the handler's transaction; :class:`LeaseLostError` if the lease is gone."""
    if not acknowledge(tx, held.worker, [held.event.id]):
        raise LeaseLostError(held.event.id)


def reschedule(tx: Tx, held: Claim, error: str, *, retry: bool, settings: BusSettings = DEFAULT_BUS_SETTINGS,
               suspect: bool = False) -> str:
    """Record a failed attempt in ``tx``: back to ``pending`` after a backoff, or ``dead`` (``retry`` false,
    or the last attempt); returns the new status, or ``lost`` if the worker no longer held the event.
    ``suspect``: count a stop too, so the event is claimed alone from now on."""
    bus = settings
    dead = not retry or held.attempt >= bus.max_attempts
    status = "dead" if dead else "pending"
    changed = tx.execute(_RESCHEDULE, {
        "id": held.event.id, "worker": held.worker, "status": status, "error": error[:_MAX_ERROR],
        "available_at": stamp_in(0 if dead else retry_delay(held.attempt, bus)), "finished_at": now() if dead else None,
        "stops": 1 if suspect else 0,
    }).rowcount
    if changed != 1:
        return "lost"
    if dead:
        counters.add(tx, counters.DEAD_LETTER)
    return status


def fail_batch(db: Database, batch: Sequence[Claim], error: str, *,
               settings: BusSettings = DEFAULT_BUS_SETTINGS) -> None:
    """A batch whose transaction failed as a whole: a failed attempt for each event (rescheduled with backoff,
    or dead after its last), each made a suspect so that it is retried alone."""
    with db.transaction() as tx:
        for held in batch:
            reschedule(tx, held, error, retry=True, settings=settings, suspect=True)


def release(db: Database, worker: str, event_ids: Sequence[str]) -> int:
    """Give back events ``worker`` claimed but did not handle (it is stopping): pending at once, the
    attempt not counted.  Returns how many it still held."""
    if not event_ids:
        return 0
    with db.transaction() as tx:
        _lease_only(tx)
        return int(tx.execute(_RELEASE, {"ids": json_list(event_ids), "worker": worker}).rowcount)
