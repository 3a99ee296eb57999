"""The cron scheduler: claims due jobs and fires each exactly once, however many processes run it.

**Claiming.** One pass (:meth:`Scheduler.tick`) opens a write transaction and calls
:func:`agentfy.store.repos.cron.claim_due` with the injected clock's *now*: due jobs of every tenant are
selected ``FOR UPDATE SKIP LOCKED`` on PostgreSQL, each job's ``next_run_at`` moves to its first slot strictly
after now, one-shot jobs are disabled, and a ``running`` row is written to ``cron_runs`` — all in that one
transaction, which commits before anything runs.  Two processes claiming at once take disjoint jobs, a job
another process has just advanced is no longer due, and the run's primary key (job, due time) refuses a
second record of one slot: each slot fires once.  On SQLite the write transaction (``BEGIN IMMEDIATE``)
serialises claims.  The rule is *at most once* for a process that dies mid-run: the slot is not retried, and
its run stays ``running`` until the housekeeping (:mod:`agentfy.runtime.cron_housekeeping`, at most hourly in
a pass, which also prunes old runs) ends it ``failed``.  How often a pass runs, how many jobs it claims and
how long runs are kept are the ``scheduler`` settings (:mod:`agentfy.runtime.scheduler_settings`).

**Missed slots.** After downtime a job fires once, for its oldest missed slot, and its next slot is the
first after now: never once per missed slot.

**A fire** (:class:`Firing`) is a synthetic inbound message to the job's agent: sender ``ticker:<jobID>``,
the job's creator carried as the origin sender (:func:`agentfy.permissions.propagation.ticker_fire`), so the
run's ACTOR is the creator and its SCOPE the job's ``user_id``.  The creator's right is checked at fire time
(:func:`agentfy.permissions.policy.check_cron_permission`, with the creator's current role,
:func:`creator_standing`): a revoked grant, a creator no longer a member, or a revoked API key ends the run
``denied`` with the reason.  The prompt is the job's :meth:`~agentfy.store.repos.cron.CronJob.prompt`; the run speaks in
the conversation the job was created from (its own, ``cron:<jobID>``, otherwise), and the runtime's
``outbound`` delivers the reply to that chat (Telegram; see :mod:`agentfy.channels.outbound`).  Every fire and
every refusal is an audit entry whose actor is the creator, written with the run's end, and an
``agent.cron.fired`` / ``agent.cron.refused`` event of the job's agent (:mod:`agentfy.runtime.activity`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Final

from agentfy.identity import Scope
from agentfy.ids import is_id
from agentfy.permissions.policy import check_cron_permission
from agentfy.permissions.propagation import context_for_run, run_request_from_inbound, ticker_fire
from agentfy.runtime import activity
from agentfy.runtime.activity import Happened
from agentfy.runtime.cron_housekeeping import RunHousekeeping
from agentfy.runtime.events import CRON_FIRED, CRON_REFUSED
from agentfy.runtime.inbound import Inbound
from agentfy.runtime.model import ModelError
from agentfy.runtime.providers import ModelConfigError
from agentfy.runtime.runner import Runtime
from agentfy.runtime.scheduler_settings import SchedulerSettings
from agentfy.schedule import utc_text
from agentfy.store.db import Database, Tx
from agentfy.store.errors import NotFoundError, StoreError
from agentfy.store.repos import agents, api_keys, cron, orgs
from agentfy.store.repos.cron import Claim, CronRun

logger: Final = logging.getLogger("agentfy.scheduler")

Clock = Callable[[], datetime]
Fire = Callable[[Claim], Awaitable[CronRun]]
#: The channel of a run whose job records none.
CRON_CHANNEL: Final = "cron"


def wall_clock() -> datetime:
    return datetime.now(UTC)


class Firing:
    """Runs claimed jobs through the runtime and records how each run ended (see the module docstring)."""

    def __init__(self, db: Database, runtime: Runtime, *, clock: Clock = wall_clock) -> None:
        self.db = db
        self.runtime = runtime
        self.clock = clock

    async def __call__(self, claim: Claim) -> CronRun:
        try:
            outcome, error, session_key = await self._fire(claim)
        except Exception as failure:  # never into the loop: the run records it
            logger.exception("scheduler.fire_failed", extra={"job_id": claim.job.id, "tenant_id": claim.job.tenant_id})
            outcome, error, session_key = "failed", _error_text(failure), None
        return await asyncio.to_thread(self._end, claim, outcome, error, session_key)

    def _end(self, claim: Claim, outcome: str, error: str | None, session_key: str | None) -> CronRun:
        """End the run and, in the same transaction, its audit entry (the creator as the actor); then the
        ``agent.cron.fired``/``agent.cron.refused`` event of the job's agent."""
        happened: Happened | None = None
        with self.db.transaction() as tx:
            ended = cron.end_run(tx, claim.run, outcome=outcome, error=error, session_key=session_key,
                                 at=self.clock())
            happened = _happened(tx, claim, ended)
            slug = None if happened is None else activity.write(tx, happened)
        if happened is not None and slug is not None:
            activity.announce(self.runtime.events, happened, slug)
        return ended

    async def _fire(self, claim: Claim) -> tuple[str, str | None, str | None]:
        job = claim.job
        prepared = await asyncio.to_thread(self._prepare, claim)
        if isinstance(prepared, str):
            return "denied", prepared, None
        reply = await self.runtime(prepared)
        if self.runtime.outbound is not None:
            await self.runtime.outbound(prepared, reply)
        logger.info("scheduler.fired", extra={"job_id": job.id, "tenant_id": job.tenant_id,
                                              "session_key": reply.session_key})
        return "ok", None, reply.session_key

    def _prepare(self, claim: Claim) -> Inbound | str:
        """The run's message, or why it is denied (the creator's right, checked now)."""
        job = claim.job
        scope = Scope(job.tenant_id)
        with self.db.transaction(write=False) as tx:
            agent = agents.get_agent(tx, scope, job.agent_id)
            role, refused = creator_standing(tx, scope, job.created_by, at=utc_text(self.clock()))
        if refused is not None:
            return refused
        channel = job.origin_channel or CRON_CHANNEL
        message = ticker_fire(job_id=job.id, creator=job.created_by, user_id=job.user_id or None,
                              content=job.prompt(), channel=channel)
        run = run_request_from_inbound(message)
        context = context_for_run(run, job.tenant_id, agent.id, agent.agent_key, role=role)
        decision = check_cron_permission(self.db, context, agent.id)
        if not decision.allowed:
            return f"{decision.code.value}: {decision.reason}"
        return Inbound(job.tenant_id, agent.agent_key, context, channel, job.conversation(), message.content)


def _happened(tx: Tx, claim: Claim, ended: CronRun) -> Happened | None:
    """The fire or refusal to record; ``None`` when the job's agent is gone (nothing to tell it by)."""
    job = claim.job
    try:
        agent = agents.get_agent(tx, Scope(job.tenant_id), job.agent_id)
    except NotFoundError:
        return None
    shown = {"job_id": job.id, "due_at": ended.due_at}
    kept = {"cause": ended.cause, **({"error": ended.error} if ended.error else {}),
            **({"session_key": ended.session_key} if ended.session_key else {})}
    if ended.outcome == "denied":
        return Happened(CRON_REFUSED, agent, job.created_by, job.id, shown=shown, kept=kept)
    return Happened(CRON_FIRED, agent, job.created_by, job.id, shown={**shown, "outcome": ended.outcome}, kept=kept)


def creator_standing(tx: Tx, scope: Scope, creator: str, *, at: str) -> tuple[str | None, str | None]:
    """``(role, refusal)`` of a job's creator now: a person (a user ID) has their role while a member of the
    organization, an API key its role while it is live (not revoked or expired, its person still a member);
    either otherwise refuses the run with the reason.  Any other creator (a chat sender) has no role: the
    per-chat grants decide."""
    if is_id(creator, "user"):
        role = orgs.member_role(tx, scope, creator)
        if role is None:
            return None, f"the job's creator {creator} is no longer a member of the organization"
        return role, None
    if is_id(creator, "api-key"):
        chain = api_keys.key_chain_by_id(tx, creator)
        if chain is None or chain.key.tenant_id != scope.tenant_id:
            return None, f"the job's creator, API key {creator}, no longer exists"
        key_role, reason = chain.verdict(at)
        if key_role is None:
            return None, f"the job's creator, API key {creator}, cannot act: {reason}"
        return key_role, None
    return None, None


def _error_text(error: BaseException) -> str:
    """A short reason for the run's record: what the model or the input said (written for people), else only
    the kind of failure — an unexpected error's text may quote anything, so it goes to the log only."""
    if isinstance(error, ModelError | ModelConfigError | ValueError | NotFoundError):
        return f"{type(error).__name__}: {error}"
    if isinstance(error, StoreError):
        return f"{type(error).__name__}: the database failed (see the server log)"
    return f"{type(error).__name__} (see the server log)"


class Scheduler:
    """The loop: every ``poll_seconds``, claim what is due at ``clock()`` and fire it (see the module docstring).

    ``fire`` runs one claim and returns the ended run (a :class:`Firing` in production; tests may pass their
    own); ``clock`` is injectable so tests drive time instead of waiting for it."""

    def __init__(self, db: Database, fire: Fire, *, clock: Clock = wall_clock,
                 settings: SchedulerSettings | None = None) -> None:
        self.db = db
        self.fire = fire
        self.clock = clock
        self.settings = settings or SchedulerSettings()
        self.housekeeping = RunHousekeeping(db, self.settings)

    def claim(self) -> list[Claim]:
        """The housekeeping when due, then one claiming transaction (worker thread): the claims to run, committed."""
        self.housekeeping.when_due(self.clock())
        with self.db.transaction() as tx:
            return cron.claim_due(tx, self.clock(), limit=self.settings.batch_size)

    async def tick(self) -> list[CronRun]:
        """Claim what is due now and fire it; the ended runs."""
        claims = await asyncio.to_thread(self.claim)
        if not claims:
            return []
        return list(await asyncio.gather(*(self.fire(claim) for claim in claims)))

    async def run(self, stop: asyncio.Event) -> None:
        """Pass after pass until ``stop`` is set; a failed pass (the database away) is logged and retried."""
        while not stop.is_set():
            try:
                ran = await self.tick()
            except Exception:
                logger.exception("scheduler.pass_failed")
                ran = []
            if len(ran) >= self.settings.batch_size:
                continue  # more may be due: claim again at once
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=self.settings.poll_seconds)


class SchedulerThread:
    """The scheduler on an event loop of its own, in a thread: for a process with no server loop
    (``agentfy worker``).  :meth:`stop` ends the pass in progress's wait and joins."""

    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._main, name="agentfy-cron", daemon=True)

    def start(self) -> None:
        self._thread.start()
        self._ready.wait()

    def _main(self) -> None:
        async def loop() -> None:
            self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
            self._ready.set()
            await self.scheduler.run(self._stop)

        asyncio.run(loop())

    def stop(self, timeout: float = 10.0) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=timeout)
