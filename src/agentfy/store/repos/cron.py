"""Cron jobs: scheduled runs of an agent of the tenant, and the runs the scheduler fired.

A job records both identities of a group chat: ``created_by`` is the ACTOR who scheduled it (audit, and the
person whose grants decide each run), ``user_id`` the SCOPE it runs in (the memory and files it sees; empty
for none).  The schedule is validated when the job is created (:mod:`agentfy.schedule`: a bad schedule or
time zone is an :class:`~agentfy.store.errors.InvalidInputError` naming the field, the value and what was
expected, and nothing is written), and ``next_run_at`` is computed then.  The prompt of a run is
``payload.message`` (a string with something to say, at most :data:`MESSAGE_MAX_LENGTH` characters); a payload
without one is sent as its JSON text.  Deleting the agent deletes its jobs, and a job's runs with it.

:func:`claim_due` is the scheduler's one cross-tenant read: it takes every tenant's due jobs, and each claim
carries its job's tenant, which every later step is scoped by.  Its housekeeping (:func:`fail_stale_runs`,
:func:`prune_runs`) is the only other cross-tenant write: it reads no tenant's data, it only ends or deletes run
records by age.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Final

import sqlalchemy as sa

from agentfy.identity import AgentId, CronJobId, OrgId, Scope, parse_id
from agentfy.schedule import DEFAULT_TIMEZONE, Schedule, ScheduleError, from_utc_text, parse_schedule, utc_text
from agentfy.store.db import Tx, now
from agentfy.store.errors import ConflictError, InvalidInputError, NotFoundError, UniqueViolation
from agentfy.store.inputs import check_text
from agentfy.store.paging import Keyset
from agentfy.store.repos import agents
from agentfy.store.repos._common import dump_json, load_json, require_label
from agentfy.store.schema import CRON_RUN_ERROR_MAX_LENGTH, ORIGIN_MAX_LENGTH, cron_jobs, cron_runs
from agentfy.store.sql import insert_returning_id

#: The longest prompt a job may carry (``payload.message``).
MESSAGE_MAX_LENGTH: Final = 100_000
#: The error of a run the stale-run sweep ended (:func:`fail_stale_runs`).
STOPPED_RUN_ERROR: Final = "the process running it stopped"
_IN_TENANT: Final = cron_jobs.c.tenant_id == sa.bindparam("tenant_id")
_COLUMNS: Final = (cron_jobs.c.id, cron_jobs.c.tenant_id, cron_jobs.c.agent_id, cron_jobs.c.created_by,
                   cron_jobs.c.user_id, cron_jobs.c.schedule, cron_jobs.c.payload, cron_jobs.c.enabled,
                   cron_jobs.c.created_at, cron_jobs.c.timezone, cron_jobs.c.next_run_at, cron_jobs.c.last_run_at,
                   cron_jobs.c.origin_channel, cron_jobs.c.origin_conversation)
_INSERT: Final = insert_returning_id(cron_jobs, ["tenant_id", "agent_id", "created_by", "user_id", "schedule",
                                                 "payload", "enabled", "created_at", "timezone", "next_run_at",
                                                 "origin_channel", "origin_conversation"])
_BY_ID: Final = sa.select(*_COLUMNS).where(_IN_TENANT, cron_jobs.c.id == sa.bindparam("job_id"))
_ORDER: Final = (cron_jobs.c.created_at, cron_jobs.c.id)
_OF_AGENT: Final = cron_jobs.c.agent_id == sa.bindparam("agent_id")
PAGES: Final[Keyset[CronJob]] = Keyset(sa.select(*_COLUMNS).where(_IN_TENANT), _ORDER, lambda j: (j.created_at, j.id))
OF_AGENT_PAGES: Final[Keyset[CronJob]] = Keyset(sa.select(*_COLUMNS).where(_IN_TENANT, _OF_AGENT), _ORDER,
                                                  lambda j: (j.created_at, j.id))
OF_AGENT_SCOPE_PAGES: Final[Keyset[CronJob]] = Keyset(
    sa.select(*_COLUMNS).where(_IN_TENANT, _OF_AGENT, cron_jobs.c.user_id == sa.bindparam("user_id")), _ORDER,
    lambda j: (j.created_at, j.id))
_SET_ENABLED: Final = (sa.update(cron_jobs).where(_IN_TENANT, cron_jobs.c.id == sa.bindparam("job_id"))
                       .values(enabled=sa.bindparam("enabled"), next_run_at=sa.bindparam("next_run_at")))
#: Due jobs of every tenant, oldest due first.  ``FOR UPDATE SKIP LOCKED`` on PostgreSQL: processes claiming at
#: the same moment take disjoint jobs, and a job another process just advanced is re-checked against the new
#: ``next_run_at`` (no longer due).  SQLite has no row locks; its write transaction (``BEGIN IMMEDIATE``)
#: serialises claims instead.
_DUE: Final = (sa.select(*_COLUMNS).where(cron_jobs.c.enabled.is_(True), cron_jobs.c.next_run_at.is_not(None),
                                          cron_jobs.c.next_run_at <= sa.bindparam("now"))
               .order_by(cron_jobs.c.next_run_at, cron_jobs.c.id).limit(sa.bindparam("limit", type_=sa.Integer))
               .with_for_update(skip_locked=True))
#: Enabled jobs whose next run was never computed (rows from before the schedule was validated).
_UNSCHEDULED: Final = (sa.select(*_COLUMNS).where(cron_jobs.c.enabled.is_(True), cron_jobs.c.next_run_at.is_(None))
                       .order_by(cron_jobs.c.id).limit(sa.bindparam("limit", type_=sa.Integer))
                       .with_for_update(skip_locked=True))
_ADVANCE: Final = (sa.update(cron_jobs).where(cron_jobs.c.id == sa.bindparam("job_id"))
                   .values(next_run_at=sa.bindparam("next_run_at"), last_run_at=sa.bindparam("last_run_at"),
                           enabled=sa.bindparam("enabled")))
_RUN_COLUMNS: Final = (cron_runs.c.job_id, cron_runs.c.tenant_id, cron_runs.c.due_at, cron_runs.c.cause,
                       cron_runs.c.started_at, cron_runs.c.ended_at, cron_runs.c.outcome, cron_runs.c.error,
                       cron_runs.c.session_key)
_INSERT_RUN: Final = sa.insert(cron_runs).values(**{c: sa.bindparam(c) for c in (
    "job_id", "tenant_id", "due_at", "cause", "started_at", "ended_at", "outcome", "error", "session_key")})
_END_RUN: Final = (sa.update(cron_runs).where(cron_runs.c.tenant_id == sa.bindparam("tenant_id"),
                                              cron_runs.c.job_id == sa.bindparam("job_id"),
                                              cron_runs.c.due_at == sa.bindparam("due_at"))
                   .values(ended_at=sa.bindparam("ended_at"), outcome=sa.bindparam("outcome"),
                           error=sa.bindparam("error"), session_key=sa.bindparam("session_key")))
_RUN_BY_KEY: Final = sa.select(*_RUN_COLUMNS).where(cron_runs.c.tenant_id == sa.bindparam("tenant_id"),
                                                    cron_runs.c.job_id == sa.bindparam("job_id"),
                                                    cron_runs.c.due_at == sa.bindparam("due_at"))
RUN_PAGES: Final[Keyset[CronRun]] = Keyset(
    sa.select(*_RUN_COLUMNS).where(cron_runs.c.tenant_id == sa.bindparam("tenant_id"),
                                   cron_runs.c.job_id == sa.bindparam("job_id")),
    (cron_runs.c.due_at,), lambda r: (r.due_at,))
_DELETE: Final = sa.delete(cron_jobs).where(_IN_TENANT, cron_jobs.c.id == sa.bindparam("job_id"))
#: Runs of every tenant still ``running`` that started before the cutoff (the stale-run sweep).
_FAIL_STALE: Final = (sa.update(cron_runs).where(cron_runs.c.outcome == "running",
                                                 cron_runs.c.started_at < sa.bindparam("cutoff"))
                      .values(outcome="failed", ended_at=sa.bindparam("ended_at"), error=sa.bindparam("error")))
#: Up to ``limit`` runs of every tenant that ended before the cutoff, by their key (a bounded delete: short locks).
_PRUNE_RUNS: Final = sa.delete(cron_runs).where(sa.tuple_(cron_runs.c.job_id, cron_runs.c.due_at).in_(
    sa.select(cron_runs.c.job_id, cron_runs.c.due_at)
    .where(cron_runs.c.ended_at.is_not(None), cron_runs.c.ended_at < sa.bindparam("cutoff"))
    .limit(sa.bindparam("limit", type_=sa.Integer))))


@dataclass(frozen=True, slots=True)
class CronJob:
    """``created_by`` is the ACTOR who scheduled the job; ``user_id`` the SCOPE it runs in."""

    id: CronJobId
    tenant_id: OrgId
    agent_id: AgentId
    created_by: str
    user_id: str
    schedule: str
    payload: dict[str, Any]
    enabled: bool
    created_at: str
    timezone: str = DEFAULT_TIMEZONE
    #: When it is due next (UTC text); ``None`` when nothing is left (a one-shot that fired) or not computed yet.
    next_run_at: str | None = None
    #: The due time of the last run the scheduler claimed.
    last_run_at: str | None = None
    #: Where it was created: the channel (``telegram``, ``api``, …) and the conversation its runs answer in
    #: (``telegram:<chat>``, …); empty: none, the runs go to the job's own conversation (:meth:`conversation`).
    origin_channel: str = ""
    origin_conversation: str = ""

    def parsed_schedule(self) -> Schedule:
        """The schedule as :mod:`agentfy.schedule` reads it (:class:`ScheduleError` for a row written before
        schedules were validated)."""
        return parse_schedule(self.schedule, self.timezone)

    def prompt(self) -> str:
        """What each run tells the agent: ``payload.message``, else the payload as JSON, else a line naming
        the job (see the module docstring)."""
        message = self.payload.get("message")
        if isinstance(message, str) and message.strip():
            return message
        if self.payload:
            return json.dumps(self.payload, ensure_ascii=False, sort_keys=True)
        return f"(scheduled run of cron job {self.id})"

    def conversation(self) -> str:
        """The conversation the runs answer in: the one the job was created from, else its own."""
        return self.origin_conversation or f"cron:{self.id}"


@dataclass(frozen=True, slots=True)
class CronRun:
    """One fire of a job: due at ``due_at`` (the slot it ran for; a manual run: when it was asked), caused by
    its ``schedule`` or by a ``manual`` run; ``outcome`` ``running`` until it ends as ``ok``, ``failed``,
    ``denied`` (the creator's grant no longer allows it) or ``skipped``; ``session_key`` the session it spoke in."""

    job_id: CronJobId
    tenant_id: OrgId
    due_at: str
    cause: str
    started_at: str
    ended_at: str | None
    outcome: str
    error: str | None
    session_key: str | None


def _job(row: tuple[Any, ...]) -> CronJob:
    return CronJob(CronJobId(row[0]), OrgId(row[1]), AgentId(row[2]), row[3], row[4], row[5], load_json(row[6]),
                   bool(row[7]), row[8], row[9], row[10], row[11], row[12], row[13])


def _run(row: tuple[Any, ...]) -> CronRun:
    return CronRun(CronJobId(row[0]), OrgId(row[1]), row[2], row[3], row[4], row[5], row[6], row[7], row[8])


def _clock(at: datetime | None) -> datetime:
    return at if at is not None else from_utc_text(now())


def checked_schedule(schedule: object, timezone: object, *, at: datetime | None = None) -> Schedule:
    """The schedule of a job being created at ``at`` (now by default), or :class:`InvalidInputError` naming
    ``schedule`` or ``timezone``, the value and the grammar (the one check every door shares)."""
    try:
        return parse_schedule(schedule, timezone, now=_clock(at))
    except ScheduleError as error:
        raise InvalidInputError(str(error), field=error.field, value=error.value, expected=error.expected) from None


def _checked_payload(payload: dict[str, Any] | None) -> str:
    if payload is not None and "message" in payload:
        check_text(payload["message"], "payload.message", max_length=MESSAGE_MAX_LENGTH)
        if not isinstance(payload["message"], str) or not payload["message"].strip():
            raise InvalidInputError("invalid payload.message: it is empty; expected the words to send to the agent",
                                    field="payload.message", value=payload["message"],
                                    expected="a non-empty string: what the agent is told at each run")
    return dump_json(payload, field="payload")

def _enabled(value: object) -> bool:
    if not isinstance(value, bool):
        raise InvalidInputError(f"enabled must be true or false, got {value!r}", field="enabled", value=value)
    return value


def create_cron_job(tx: Tx, scope: Scope, agent_id: str, *, created_by: str, schedule: str,
                    user_id_scope: str = "", payload: dict[str, Any] | None = None,
                    enabled: bool = True, timezone: str = DEFAULT_TIMEZONE, origin_channel: str = "",
                    origin_conversation: str = "", at: datetime | None = None) -> CronJob:
    """Schedule an agent of the tenant.  ``created_by`` is the actor; ``user_id_scope`` the scope it runs in;
    ``origin_channel``/``origin_conversation`` where its runs answer; ``at`` the creation time (tests: a clock).

    Every value is checked before anything is written; ``next_run_at`` is the schedule's first run after ``at``."""
    agent_id = parse_id(agent_id, "agent")
    actor = require_label(created_by, field="created_by")
    user_scope = require_label(user_id_scope, field="user_id_scope", allow_empty=True)
    cron_schedule = require_label(schedule, field="schedule")
    created = _clock(at)
    parsed = checked_schedule(cron_schedule, timezone, at=created)
    channel = require_label(origin_channel, field="origin_channel", max_length=ORIGIN_MAX_LENGTH, allow_empty=True)
    conversation = require_label(origin_conversation, field="origin_conversation", max_length=ORIGIN_MAX_LENGTH,
                                 allow_empty=True)
    payload_text = _checked_payload(payload)
    is_enabled = _enabled(enabled)
    agents.get_agent(tx, scope, agent_id)
    stamp = utc_text(created)
    first = parsed.first_run(created)
    next_run_at = utc_text(first) if first is not None else None
    job_id = tx.insert_minted("cron-job", _INSERT, {
        "tenant_id": scope.tenant_id, "agent_id": agent_id, "created_by": actor, "user_id": user_scope,
        "schedule": cron_schedule, "payload": payload_text, "enabled": is_enabled, "created_at": stamp,
        "timezone": parsed.timezone, "next_run_at": next_run_at, "origin_channel": channel,
        "origin_conversation": conversation})
    return CronJob(CronJobId(job_id), scope.tenant_id, AgentId(agent_id), actor, user_scope, cron_schedule,
                   payload or {}, is_enabled, stamp, parsed.timezone, next_run_at, None, channel, conversation)


def get_cron_job(tx: Tx, scope: Scope, job_id: str) -> CronJob:
    job_id = parse_id(job_id, "cron-job", field="job_id")
    row = tx.one(_BY_ID, {"tenant_id": scope.tenant_id, "job_id": job_id})
    if row is None:
        raise NotFoundError("cron job", job_id)
    return _job(row)


def list_cron_jobs(tx: Tx, scope: Scope, agent_id: str | None = None, *, user_id: str | None = None,
                   after: Sequence[Any] | None = None, limit: int | None = None) -> list[CronJob]:
    """The tenant's jobs, or one agent's (the agent must be in the tenant) — only those running in the memory
    scope ``user_id`` if given — oldest first (all, or a page)."""
    if agent_id is None:
        return PAGES.fetch(tx, {"tenant_id": scope.tenant_id}, _job, after=after, limit=limit)
    agent = agents.get_agent(tx, scope, parse_id(agent_id, "agent"))
    params = {"tenant_id": scope.tenant_id, "agent_id": agent.id}
    if user_id is None:
        return OF_AGENT_PAGES.fetch(tx, params, _job, after=after, limit=limit)
    return OF_AGENT_SCOPE_PAGES.fetch(tx, {**params, "user_id": user_id}, _job, after=after, limit=limit)


def set_cron_job_enabled(tx: Tx, scope: Scope, job_id: str, enabled: bool, *,
                         at: datetime | None = None) -> CronJob:
    """Pause (``False``) or resume (``True``) a job.  Resuming schedules it afresh from ``at`` (now): the next
    slot after the resume, never the slots it was paused through; a one-shot job whose time has passed cannot
    be resumed (``InvalidInputError`` naming ``enabled``).  Pausing keeps ``next_run_at`` to show."""
    job_id = parse_id(job_id, "cron-job", field="job_id")
    is_enabled = _enabled(enabled)
    job = get_cron_job(tx, scope, job_id)
    next_run_at = job.next_run_at
    if is_enabled and not job.enabled:
        try:
            first = job.parsed_schedule().first_run(_clock(at))
        except ScheduleError as error:
            raise InvalidInputError(f"cron job {job_id} cannot be resumed: {error}", field="schedule",
                                    value=job.schedule, expected=error.expected) from None
        if first is None:
            raise InvalidInputError(f"cron job {job_id} cannot be resumed: its one-shot time {job.schedule!r} has "
                                    "passed", field="enabled", value=True,
                                    expected="false, or a new job with a time in the future")
        next_run_at = utc_text(first)
    tx.execute(_SET_ENABLED, {"tenant_id": scope.tenant_id, "job_id": job_id, "enabled": is_enabled,
                              "next_run_at": next_run_at})
    return replace(job, enabled=is_enabled, next_run_at=next_run_at)


def delete_cron_job(tx: Tx, scope: Scope, job_id: str) -> None:
    job_id = parse_id(job_id, "cron-job", field="job_id")
    if tx.execute(_DELETE, {"tenant_id": scope.tenant_id, "job_id": job_id}).rowcount == 0:
        raise NotFoundError("cron job", job_id)


# -- the scheduler's side ---------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Claim:
    """A run the scheduler claimed: the job as it was when claimed and the run recorded for it."""

    job: CronJob
    run: CronRun


def _short(text: str | None) -> str | None:
    if text is None:
        return None
    return text if len(text) <= CRON_RUN_ERROR_MAX_LENGTH else text[:CRON_RUN_ERROR_MAX_LENGTH - 1] + "…"


def _new_run(job: CronJob, *, due_at: str, cause: str, started_at: str, outcome: str = "running",
             error: str | None = None) -> CronRun:
    return CronRun(job.id, job.tenant_id, due_at, cause, started_at, started_at if outcome != "running" else None,
                   outcome, _short(error), None)


def _record_runs(tx: Tx, runs: Sequence[CronRun]) -> None:
    """Write new runs in one round trip (a batch of statements); a slot already recorded is a
    :class:`ConflictError` naming the job (the only one, or the first of the batch)."""
    try:
        tx.executemany(_INSERT_RUN, [{"job_id": run.job_id, "tenant_id": run.tenant_id, "due_at": run.due_at,
                                      "cause": run.cause, "started_at": run.started_at, "ended_at": run.ended_at,
                                      "outcome": run.outcome, "error": run.error, "session_key": None}
                                     for run in runs])
    except UniqueViolation:
        first = runs[0]
        if len(runs) == 1:
            message = f"cron job {first.job_id} already has a run due at {first.due_at}"
        else:
            message = f"one of {len(runs)} cron jobs ({first.job_id}, …) already has a run for its due time"
        raise ConflictError(message, field="job_id", value=first.job_id) from None


def _insert_run(tx: Tx, job: CronJob, *, due_at: str, cause: str, started_at: str, outcome: str = "running",
                error: str | None = None) -> CronRun:
    run = _new_run(job, due_at=due_at, cause=cause, started_at=started_at, outcome=outcome, error=error)
    _record_runs(tx, [run])
    return run


def claim_due(tx: Tx, at: datetime, *, limit: int) -> list[Claim]:
    """Claim, in this transaction, up to ``limit`` jobs of any tenant due at ``at``; commit it before running them.

    Each claimed job's ``next_run_at`` moves to its first slot strictly after ``at`` (so a job that missed
    slots while no scheduler ran fires once, for its oldest missed slot, not once per slot), a one-shot job is
    disabled, and a ``running`` run is recorded for the slot it was due at.  Jobs whose next run was never
    computed (written before schedules were validated) are scheduled here from ``at``; one whose schedule does
    not parse is disabled with a ``skipped`` run saying why.  The claims to run are returned.

    The advances and the runs of the batch are each written as one batch of statements (a round trip each on
    PostgreSQL, not two per job): claiming is what bounds how many jobs a scheduler fires per second.
    """
    stamp = utc_text(at)
    for row in tx.all(_UNSCHEDULED, {"limit": limit}):
        _schedule_first(tx, _job(row), at)
    claims: list[Claim] = []
    advances: list[dict[str, Any]] = []
    runs: list[CronRun] = []
    for row in tx.all(_DUE, {"now": stamp, "limit": limit}):
        job = _job(row)
        assert job.next_run_at is not None
        try:
            following = job.parsed_schedule().next_run(from_utc_text(job.next_run_at), at)
        except ScheduleError as error:
            advances.append({"job_id": job.id, "next_run_at": None, "last_run_at": job.last_run_at,
                             "enabled": False})
            runs.append(_new_run(job, due_at=job.next_run_at, cause="schedule", started_at=stamp,
                                 outcome="skipped", error=f"the job was disabled: {error}"))
            continue
        next_run_at = utc_text(following) if following is not None else None
        advances.append({"job_id": job.id, "next_run_at": next_run_at, "last_run_at": job.next_run_at,
                         "enabled": following is not None})
        run = _new_run(job, due_at=job.next_run_at, cause="schedule", started_at=stamp)
        runs.append(run)
        claims.append(Claim(replace(job, next_run_at=next_run_at, last_run_at=job.next_run_at,
                                    enabled=following is not None), run))
    if runs:
        tx.executemany(_ADVANCE, advances)
        _record_runs(tx, runs)
    return claims


def _schedule_first(tx: Tx, job: CronJob, at: datetime) -> None:
    problem: str | None
    try:
        first = job.parsed_schedule().first_run(at)
    except ScheduleError as error:
        first, problem = None, f"the job was disabled: {error}"
    else:
        problem = None if first is not None else "the job was disabled: its one-shot time had passed"
    if first is not None:
        tx.execute(_ADVANCE, {"job_id": job.id, "next_run_at": utc_text(first), "last_run_at": job.last_run_at,
                              "enabled": True})
        return
    tx.execute(_ADVANCE, {"job_id": job.id, "next_run_at": None, "last_run_at": job.last_run_at, "enabled": False})
    _insert_run(tx, job, due_at=utc_text(at), cause="schedule", started_at=utc_text(at), outcome="skipped",
                error=problem)


def start_manual_run(tx: Tx, scope: Scope, job_id: str, *, at: datetime | None = None) -> Claim:
    """Record a ``manual`` run of the tenant's job, due ``at`` (now), without touching its schedule (a paused
    job may be run by hand too).  Commit, then run it like a claim."""
    job = get_cron_job(tx, scope, job_id)
    stamp = utc_text(_clock(at))
    return Claim(job, _insert_run(tx, job, due_at=stamp, cause="manual", started_at=stamp))


def end_run(tx: Tx, run: CronRun, *, outcome: str, error: str | None = None, session_key: str | None = None,
            at: datetime | None = None) -> CronRun:
    """Record how ``run`` ended (``ok``, ``failed``, ``denied`` or ``skipped``), with a short reason."""
    if outcome not in ("ok", "failed", "denied", "skipped"):
        raise ValueError(f"outcome {outcome!r} is not an end; expected ok, failed, denied or skipped")
    ended = replace(run, ended_at=utc_text(_clock(at)), outcome=outcome, error=_short(error), session_key=session_key)
    tx.execute(_END_RUN, {"tenant_id": run.tenant_id, "job_id": run.job_id, "due_at": run.due_at,
                          "ended_at": ended.ended_at, "outcome": outcome, "error": ended.error,
                          "session_key": session_key})
    return ended


def get_cron_run(tx: Tx, scope: Scope, job_id: str, due_at: str) -> CronRun:
    job_id = parse_id(job_id, "cron-job", field="job_id")
    row = tx.one(_RUN_BY_KEY, {"tenant_id": scope.tenant_id, "job_id": job_id, "due_at": due_at})
    if row is None:
        raise NotFoundError("cron run", f"{job_id}@{due_at}")
    return _run(row)


def list_cron_runs(tx: Tx, scope: Scope, job_id: str, *, after: Sequence[Any] | None = None,
                   limit: int | None = None) -> list[CronRun]:
    """The runs of the tenant's job, oldest due first (all, or a page); another tenant's job has none."""
    job_id = parse_id(job_id, "cron-job", field="job_id")
    return RUN_PAGES.fetch(tx, {"tenant_id": scope.tenant_id, "job_id": job_id}, _run, after=after, limit=limit)


def fail_stale_runs(tx: Tx, *, started_before: datetime, at: datetime) -> int:
    """End every tenant's runs still ``running`` that started before ``started_before`` as ``failed``, with
    :data:`STOPPED_RUN_ERROR` and ``at`` as their end; how many.  A run that long is taken for one whose process
    died mid-run (the claim is at most once: it is not retried).  Should it end after all, :func:`end_run`
    records its real outcome over this one."""
    result = tx.execute(_FAIL_STALE, {"cutoff": utc_text(started_before), "ended_at": utc_text(at),
                                      "error": STOPPED_RUN_ERROR})
    return int(result.rowcount)


def prune_runs(tx: Tx, *, ended_before: datetime, limit: int) -> int:
    """Delete up to ``limit`` runs of any tenant that ended before ``ended_before``; how many (fewer than
    ``limit``: none is left).  A ``running`` run is never deleted; the stale-run sweep ends it first."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit {limit!r} is not a batch size; expected a positive integer")
    return int(tx.execute(_PRUNE_RUNS, {"cutoff": utc_text(ended_before), "limit": limit}).rowcount)
