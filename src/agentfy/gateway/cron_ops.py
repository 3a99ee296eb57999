"""The cron operations behind both APIs: ``/v1/agents/{agent}/cron-jobs``, ``/v1/cron-jobs/{job_id}`` (its
``/runs`` and ``/run``) and the WebSocket ``cron.*`` methods call these, so the two cannot drift in roles,
scopes or results.

Who may call each is decided before they run, by the one access policy (:mod:`agentfy.permissions.access`,
the same operation names on both APIs); a job in a memory scope the caller may not see is "not found", like a
missing one or another organization's.  A job records who scheduled it (the ACTOR: the user the key acts as,
or the key itself) and the SCOPE it runs in (the key's user; empty for none); neither is taken from the
request.  Lists are paged with cursors signed for their operation, so a cursor from either API works on the
other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentfy.errors import ApiError
from agentfy.gateway.auth import Principal
from agentfy.gateway.pages import Page, empty, paged
from agentfy.gateway.resolve import agent_in, agent_loop
from agentfy.gateway.routes.schemas_admin import CronJobIn, CronJobOut, CronRunOut
from agentfy.permissions.access import require_scope, scope_filter
from agentfy.runtime.scheduler import Firing
from agentfy.store.db import Tx
from agentfy.store.repos import cron
from agentfy.store.repos.cron import Claim, CronJob, CronRun

if TYPE_CHECKING:
    from agentfy.gateway.deps import GatewayState
    from agentfy.runtime.runner import Runtime


def job_out(job: CronJob) -> CronJobOut:
    return CronJobOut(id=job.id, agent_id=job.agent_id, created_by=job.created_by, user_id=job.user_id,
                      schedule=job.schedule, payload=job.payload, enabled=job.enabled, created_at=job.created_at,
                      timezone=job.timezone, next_run_at=job.next_run_at, last_run_at=job.last_run_at)


def run_out(run: CronRun) -> CronRunOut:
    return CronRunOut(job_id=run.job_id, due_at=run.due_at, cause=run.cause, started_at=run.started_at,
                      ended_at=run.ended_at, outcome=run.outcome, error=run.error, session_key=run.session_key)


def _actor(who: Principal) -> str:
    """Who schedules: the acting person, else the API key (audit needs someone)."""
    actor = who.context().actor_id or who.key_id
    if not actor:
        raise ApiError(403, "forbidden", "scheduling a job needs a key that acts as a user or an API key")
    return actor


def _job_in_reach(tx: Tx, who: Principal, operation: str, job_id: str) -> CronJob:
    """The cron job, if the caller may use the scope it runs in; otherwise "not found"."""
    job = cron.get_cron_job(tx, who.scope, job_id)
    require_scope(who, operation, job.user_id, row=("cron job", job_id))
    return job


def create_job(gateway: GatewayState, who: Principal, agent: str, body: CronJobIn) -> CronJobOut:
    """Schedule the agent; the job runs in the scope of the user the key acts as."""
    actor = _actor(who)
    with gateway.db.transaction() as tx:
        agent_id = agent_in(tx, who, agent).id
        job = cron.create_cron_job(tx, who.scope, agent_id, created_by=actor, schedule=body.schedule,
                                   user_id_scope=who.context().user_id or "", payload=body.payload,
                                   enabled=body.enabled, timezone=body.timezone, origin_channel="api")
    return job_out(job)


def list_jobs(gateway: GatewayState, who: Principal, agent: str, *, limit: int,
              cursor: str | None) -> Page[CronJobOut]:
    """The agent's jobs, oldest first, a page at a time: those running in memory scopes the caller may see."""
    agent_id = agent_loop(gateway, who, agent).agent.id
    nothing, user_id = scope_filter(who, "cron.list", None)
    if nothing:
        return empty()
    return paged(gateway, who, "cron.list", cron.OF_AGENT_PAGES, fetch=lambda tx, **page: cron.list_cron_jobs(
        tx, who.scope, agent_id, user_id=user_id, **page), out=job_out, limit=limit, cursor=cursor)


def get_job(gateway: GatewayState, who: Principal, job_id: str) -> CronJobOut:
    with gateway.db.transaction(write=False) as tx:
        return job_out(_job_in_reach(tx, who, "cron.get", job_id))


def set_enabled(gateway: GatewayState, who: Principal, job_id: str, enabled: bool) -> CronJobOut:
    """Pause (``False``) or resume a job; resuming skips the slots it was paused through."""
    with gateway.db.transaction() as tx:
        _job_in_reach(tx, who, "cron.update", job_id)
        return job_out(cron.set_cron_job_enabled(tx, who.scope, job_id, enabled))


def delete_job(gateway: GatewayState, who: Principal, job_id: str) -> None:
    with gateway.db.transaction() as tx:
        _job_in_reach(tx, who, "cron.delete", job_id)
        cron.delete_cron_job(tx, who.scope, job_id)


def list_runs(gateway: GatewayState, who: Principal, job_id: str, *, limit: int,
              cursor: str | None) -> Page[CronRunOut]:
    """The job's runs, oldest due first, a page at a time."""
    with gateway.db.transaction(write=False) as tx:
        _job_in_reach(tx, who, "cron.runs", job_id)
    return paged(gateway, who, "cron.runs", cron.RUN_PAGES, fetch=lambda tx, **page: cron.list_cron_runs(
        tx, who.scope, job_id, **page), out=run_out, limit=limit, cursor=cursor)


def start_manual_run(gateway: GatewayState, who: Principal, job_id: str) -> Claim:
    """Worker thread: the job's manual run, recorded as ``running`` for :func:`fire` — refused before anything
    is written when this server runs no agent runtime."""
    _runtime_of(gateway)
    with gateway.db.transaction() as tx:
        _job_in_reach(tx, who, "cron.run", job_id)
        return cron.start_manual_run(tx, who.scope, job_id)


async def fire(gateway: GatewayState, claim: Claim) -> CronRunOut:
    """On the server's event loop: run a claimed manual run exactly as the schedule would (as the job's
    creator, whose right is checked now) and answer the ended run."""
    return run_out(await Firing(gateway.db, _runtime_of(gateway))(claim))


def _runtime_of(gateway: GatewayState) -> Runtime:
    if gateway.runtime is None:
        raise ApiError(503, "unavailable", "this server runs no agent runtime")
    return gateway.runtime


def dumped(model: Any) -> dict[str, Any]:
    """A response model as the WebSocket result (the HTTP body's JSON)."""
    result: dict[str, Any] = model.model_dump(mode="json")
    return result
