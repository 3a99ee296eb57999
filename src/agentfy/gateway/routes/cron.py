"""Cron jobs over HTTP: ``/v1/agents/{agent}/cron-jobs``, ``/v1/cron-jobs/{job_id}``, its ``/runs`` and ``/run``
(now).  The operations, shared with the WebSocket ``cron.*`` methods, are :mod:`agentfy.gateway.cron_ops`.
"""

from __future__ import annotations

from fastapi import APIRouter, Response
from fastapi.concurrency import run_in_threadpool

from agentfy.gateway import cron_ops
from agentfy.gateway.deps import Authenticated
from agentfy.gateway.pages import Cursor, Limit, Page
from agentfy.gateway.routes.agents import AgentRef
from agentfy.gateway.routes.schemas_admin import (
    CronJobIdPath,
    CronJobIn,
    CronJobOut,
    CronJobPatch,
    CronRunOut,
)
from agentfy.gateway.routing import ApiRoute
from agentfy.store.paging import DEFAULT_LIMIT

router = APIRouter(tags=["cron"], route_class=ApiRoute)


@router.post("/agents/{agent}/cron-jobs", operation_id="cron.create", status_code=201, response_model=CronJobOut)
def create_cron_job(agent: AgentRef, body: CronJobIn, call: Authenticated) -> CronJobOut:
    """Schedule the agent (operator).  The job runs in the scope of the user the key acts as."""
    return cron_ops.create_job(call.gateway, call.who, agent, body)


@router.get("/agents/{agent}/cron-jobs", operation_id="cron.list", response_model=Page[CronJobOut])
def list_cron_jobs(agent: AgentRef, call: Authenticated,
                   limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None) -> Page[CronJobOut]:
    """The agent's cron jobs, oldest first, a page at a time: those running in memory scopes the caller may see."""
    return cron_ops.list_jobs(call.gateway, call.who, agent, limit=limit, cursor=cursor)


@router.get("/cron-jobs/{job_id}", operation_id="cron.get", response_model=CronJobOut)
def get_cron_job(job_id: CronJobIdPath, call: Authenticated) -> CronJobOut:
    """One cron job.  Another organization's, or one in a scope the caller may not see: 404, like a missing one."""
    return cron_ops.get_job(call.gateway, call.who, job_id)


@router.patch("/cron-jobs/{job_id}", operation_id="cron.update", response_model=CronJobOut)
def set_cron_job_enabled(job_id: CronJobIdPath, body: CronJobPatch, call: Authenticated) -> CronJobOut:
    """Enable or disable a cron job (operator)."""
    return cron_ops.set_enabled(call.gateway, call.who, job_id, body.enabled)


@router.delete("/cron-jobs/{job_id}", operation_id="cron.delete", status_code=204, response_class=Response)
def delete_cron_job(job_id: CronJobIdPath, call: Authenticated) -> Response:
    """Delete a cron job (operator)."""
    cron_ops.delete_job(call.gateway, call.who, job_id)
    return Response(status_code=204)


@router.get("/cron-jobs/{job_id}/runs", operation_id="cron.runs", response_model=Page[CronRunOut])
def list_cron_runs(job_id: CronJobIdPath, call: Authenticated,
                   limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None) -> Page[CronRunOut]:
    """The job's runs, oldest due first, a page at a time.  Another organization's job, or one in a scope the
    caller may not see: 404."""
    return cron_ops.list_runs(call.gateway, call.who, job_id, limit=limit, cursor=cursor)


@router.post("/cron-jobs/{job_id}/run", operation_id="cron.run", response_model=CronRunOut)
async def run_cron_job(job_id: CronJobIdPath, call: Authenticated) -> CronRunOut:
    """Run the job now, paused or not, exactly as its schedule would (as its creator, whose right is checked
    now), and answer the ended run: ``ok``, ``failed`` or ``denied`` with the reason (operator).  Its schedule
    does not move."""
    claim = await run_in_threadpool(cron_ops.start_manual_run, call.gateway, call.who, job_id)
    return await cron_ops.fire(call.gateway, claim)
