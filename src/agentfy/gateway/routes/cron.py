"""Cron jobs: ``/v1/agents/{agent}/cron-jobs``, ``/v1/cron-jobs/{job_id}``, its ``/runs`` and ``/run`` (now).

A job records who scheduled it (the ACTOR: the user the key acts as, or the key itself) and the SCOPE it
runs in (the key's user; empty for none).  Neither is taken from the request body.
"""

from __future__ import annotations

from fastapi import APIRouter, Response
from fastapi.concurrency import run_in_threadpool

from agentfy.errors import ApiError
from agentfy.gateway.auth import Principal
from agentfy.gateway.deps import Authenticated
from agentfy.gateway.pages import Cursor, Limit, Page, empty, paged
from agentfy.gateway.resolve import agent_in, agent_loop
from agentfy.gateway.routes.agents import AgentRef
from agentfy.gateway.routes.schemas_admin import (
    CronJobIdPath,
    CronJobIn,
    CronJobOut,
    CronJobPatch,
    CronRunOut,
)
from agentfy.permissions.access import require_scope, scope_filter
from agentfy.runtime.scheduler import Firing
from agentfy.store.db import Tx
from agentfy.store.paging import DEFAULT_LIMIT
from agentfy.store.repos import cron
from agentfy.store.repos.cron import Claim, CronJob, CronRun

router = APIRouter(tags=["cron"])


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


@router.post("/agents/{agent}/cron-jobs", operation_id="cron.create", status_code=201, response_model=CronJobOut)
def create_cron_job(agent: AgentRef, body: CronJobIn, call: Authenticated) -> CronJobOut:
    """Schedule the agent (operator).  The job runs in the scope of the user the key acts as."""
    actor = _actor(call.who)
    with call.gateway.db.transaction() as tx:
        agent_id = agent_in(tx, call.who, agent).id
        job = cron.create_cron_job(tx, call.who.scope, agent_id, created_by=actor, schedule=body.schedule,
                                   user_id_scope=call.who.context().user_id or "", payload=body.payload,
                                   enabled=body.enabled, timezone=body.timezone, origin_channel="api")
    return job_out(job)


@router.get("/agents/{agent}/cron-jobs", operation_id="cron.list", response_model=Page[CronJobOut])
def list_cron_jobs(agent: AgentRef, call: Authenticated,
                   limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None) -> Page[CronJobOut]:
    """The agent's cron jobs, oldest first, a page at a time: those running in memory scopes the caller may see."""
    agent_id = agent_loop(call.gateway, call.who, agent).agent.id
    nothing, user_id = scope_filter(call.who, "cron.list", None)
    if nothing:
        return empty()
    return paged(call.gateway, call.who, "cron.list", cron.OF_AGENT_PAGES, fetch=lambda tx, **page: cron.list_cron_jobs(
        tx, call.who.scope, agent_id, user_id=user_id, **page), out=job_out, limit=limit, cursor=cursor)


@router.get("/cron-jobs/{job_id}", operation_id="cron.get", response_model=CronJobOut)
def get_cron_job(job_id: CronJobIdPath, call: Authenticated) -> CronJobOut:
    """One cron job.  Another organization's, or one in a scope the caller may not see: 404, like a missing one."""
    with call.gateway.db.transaction(write=False) as tx:
        return job_out(_job_in_reach(tx, call.who, "cron.get", job_id))


@router.patch("/cron-jobs/{job_id}", operation_id="cron.update", response_model=CronJobOut)
def set_cron_job_enabled(job_id: CronJobIdPath, body: CronJobPatch, call: Authenticated) -> CronJobOut:
    """Enable or disable a cron job (operator)."""
    with call.gateway.db.transaction() as tx:
        _job_in_reach(tx, call.who, "cron.update", job_id)
        return job_out(cron.set_cron_job_enabled(tx, call.who.scope, job_id, body.enabled))


@router.delete("/cron-jobs/{job_id}", operation_id="cron.delete", status_code=204, response_class=Response)
def delete_cron_job(job_id: CronJobIdPath, call: Authenticated) -> Response:
    """Delete a cron job (operator)."""
    with call.gateway.db.transaction() as tx:
        _job_in_reach(tx, call.who, "cron.delete", job_id)
        cron.delete_cron_job(tx, call.who.scope, job_id)
    return Response(status_code=204)


@router.get("/cron-jobs/{job_id}/runs", operation_id="cron.runs", response_model=Page[CronRunOut])
def list_cron_runs(job_id: CronJobIdPath, call: Authenticated,
                   limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None) -> Page[CronRunOut]:
    """The job's runs, oldest due first, a page at a time.  Another organization's job, or one in a scope the
    caller may not see: 404."""
    with call.gateway.db.transaction(write=False) as tx:
        _job_in_reach(tx, call.who, "cron.runs", job_id)
    return paged(call.gateway, call.who, "cron.runs", cron.RUN_PAGES, fetch=lambda tx, **page: cron.list_cron_runs(
        tx, call.who.scope, job_id, **page), out=run_out, limit=limit, cursor=cursor)


def _start_manual_run(call: Authenticated, job_id: str) -> Claim:
    with call.gateway.db.transaction() as tx:
        _job_in_reach(tx, call.who, "cron.run", job_id)
        return cron.start_manual_run(tx, call.who.scope, job_id)


@router.post("/cron-jobs/{job_id}/run", operation_id="cron.run", response_model=CronRunOut)
async def run_cron_job(job_id: CronJobIdPath, call: Authenticated) -> CronRunOut:
    """Run the job now, paused or not, exactly as its schedule would (as its creator, whose right is checked
    now), and answer the ended run: ``ok``, ``failed`` or ``denied`` with the reason (operator).  Its schedule
    does not move."""
    runtime = call.gateway.runtime
    if runtime is None:
        raise ApiError(503, "unavailable", "this server runs no agent runtime")
    claim = await run_in_threadpool(_start_manual_run, call, job_id)
    return run_out(await Firing(call.gateway.db, runtime)(claim))
