"""Cron jobs: scheduled runs of an agent of the tenant.

A job records both identities of a group chat: ``created_by`` is the ACTOR who scheduled it
(audit), ``user_id`` the SCOPE it runs in (the memory and files it sees; empty for none).  The schedule is
stored as given; the scheduler parses it.  Deleting the agent deletes its jobs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import sqlalchemy as sa

from agentfy.identity import AgentId, CronJobId, OrgId, Scope, parse_id
from agentfy.store.db import Tx, now
from agentfy.store.errors import InvalidInputError, NotFoundError
from agentfy.store.paging import Keyset
from agentfy.store.repos import agents
from agentfy.store.repos._common import dump_json, load_json, require_label
from agentfy.store.schema import cron_jobs
from agentfy.store.sql import insert_returning_id

_IN_TENANT: Final = cron_jobs.c.tenant_id == sa.bindparam("tenant_id")
_COLUMNS: Final = (cron_jobs.c.id, cron_jobs.c.tenant_id, cron_jobs.c.agent_id, cron_jobs.c.created_by,
                   cron_jobs.c.user_id, cron_jobs.c.schedule, cron_jobs.c.payload, cron_jobs.c.enabled,
                   cron_jobs.c.created_at)
_INSERT: Final = insert_returning_id(cron_jobs, ["tenant_id", "agent_id", "created_by", "user_id", "schedule",
                                                 "payload", "enabled", "created_at"])
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
                       .values(enabled=sa.bindparam("enabled")))
_DELETE: Final = sa.delete(cron_jobs).where(_IN_TENANT, cron_jobs.c.id == sa.bindparam("job_id"))


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


def _job(row: tuple[Any, ...]) -> CronJob:
    return CronJob(CronJobId(row[0]), OrgId(row[1]), AgentId(row[2]), row[3], row[4], row[5], load_json(row[6]),
                   bool(row[7]), row[8])


def _enabled(value: object) -> bool:
    if not isinstance(value, bool):
        raise InvalidInputError(f"enabled must be true or false, got {value!r}", field="enabled", value=value)
    return value


def create_cron_job(tx: Tx, scope: Scope, agent_id: str, *, created_by: str, schedule: str,
                    user_id_scope: str = "", payload: dict[str, Any] | None = None,
                    enabled: bool = True) -> CronJob:
    """Schedule an agent of the tenant.  ``created_by`` is the actor; ``user_id_scope`` the scope it runs in."""
    agent_id = parse_id(agent_id, "agent")
    actor = require_label(created_by, field="created_by")
    user_scope = require_label(user_id_scope, field="user_id_scope", allow_empty=True)
    cron_schedule = require_label(schedule, field="schedule")
    payload_text = dump_json(payload, field="payload")
    is_enabled = _enabled(enabled)
    agents.get_agent(tx, scope, agent_id)
    stamp = now()
    job_id = tx.insert_minted("cron-job", _INSERT, {
        "tenant_id": scope.tenant_id, "agent_id": agent_id, "created_by": actor, "user_id": user_scope,
        "schedule": cron_schedule, "payload": payload_text, "enabled": is_enabled, "created_at": stamp})
    return CronJob(CronJobId(job_id), scope.tenant_id, AgentId(agent_id), actor, user_scope, cron_schedule,
                   payload or {}, is_enabled, stamp)


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


def set_cron_job_enabled(tx: Tx, scope: Scope, job_id: str, enabled: bool) -> CronJob:
    job_id = parse_id(job_id, "cron-job", field="job_id")
    is_enabled = _enabled(enabled)
    if tx.execute(_SET_ENABLED, {"tenant_id": scope.tenant_id, "job_id": job_id,
                                 "enabled": is_enabled}).rowcount == 0:
        raise NotFoundError("cron job", job_id)
    return get_cron_job(tx, scope, job_id)


def delete_cron_job(tx: Tx, scope: Scope, job_id: str) -> None:
    job_id = parse_id(job_id, "cron-job", field="job_id")
    if tx.execute(_DELETE, {"tenant_id": scope.tenant_id, "job_id": job_id}).rowcount == 0:
        raise NotFoundError("cron job", job_id)
