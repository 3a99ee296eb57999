"""The WebSocket methods: the HTTP API's agent and cron operations, with the same rules and the same role checks.

Every ``agent`` parameter accepts an agent ID **or** an ``agent_key`` and is resolved by the one resolver
the HTTP API uses (:mod:`agentfy.gateway.resolve`: in the write's own transaction for writes, through the
router's cache for reads), inside the same operations (:mod:`agentfy.gateway.agent_ops`).  The tenant is
always the principal's: no parameter can name one (parameter models forbid unknown members).

Handlers are synchronous (they touch the database) and run in a worker thread with the principal's
request context bound; results are what the HTTP API returns for the same operation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Generic

import anyio.from_thread
from pydantic import Field, StrictBool

from agentfy.gateway import agent_ops, chat, cron_ops
from agentfy.gateway.auth import Principal, sign_context
from agentfy.gateway.chat import SendParams
from agentfy.gateway.deps import GatewayState
from agentfy.gateway.pages import PageParams
from agentfy.gateway.routes.schemas import AgentIn, AgentPatch, Strict, agent_ref_field
from agentfy.gateway.rpc.broadcast import Subscriber, broadcaster_for
from agentfy.gateway.rpc.protocol import P, validate
from agentfy.runtime.events import AGENT_EVENTS, RUN_EVENTS

SIGNED_CONTEXT_TTL_SECONDS: Final = 300
#: The longest ID a method parameter takes (canonical IDs are far shorter; legacy ones too).
ID_PARAM_MAX_LENGTH: Final = 200


@dataclass(frozen=True, slots=True)
class Call:
    """What a method runs with: the gateway, the connection's (re-validated, authorized) principal, its tenant
    slug, and its subscriber inbox."""

    gateway: GatewayState
    who: Principal
    tenant_slug: str
    subscriber: Subscriber


# -- parameters ----------------------------------------------------------------------------------------------
class NoParams(Strict):
    pass


class AgentParams(Strict):
    agent: str = agent_ref_field()


class UpdateParams(AgentPatch):
    """``PATCH /v1/agents/{agent}``'s body with the path parameter as a member: an :class:`AgentPatch` itself, so
    a field added to the patch reaches both APIs."""

    agent: str = agent_ref_field()


class CronJobsParams(PageParams):
    agent: str = agent_ref_field()


class CronJobParams(Strict):
    job_id: str = Field(max_length=ID_PARAM_MAX_LENGTH, description="The cron job's ID.")


class CronRunsParams(PageParams):
    job_id: str = Field(max_length=ID_PARAM_MAX_LENGTH, description="The cron job's ID.")


class CronEnableParams(CronJobParams):
    enabled: StrictBool


class SignParams(Strict):
    ttl_seconds: int = Field(default=SIGNED_CONTEXT_TTL_SECONDS, ge=10, le=SIGNED_CONTEXT_TTL_SECONDS)


class AuthParams(Strict):
    token: str = Field(min_length=1, max_length=4096, description="An API key or a signed context.")


# -- handlers: the HTTP API's agent operations, shared (agentfy.gateway.agent_ops) --------------------------
def list_agents(call: Call, params: PageParams) -> dict[str, Any]:
    """A page of agents, as ``GET /v1/agents`` answers: ``{"items": [...], "next_cursor": ...}``."""
    page = agent_ops.list_agents(call.gateway, call.who, limit=params.limit, cursor=params.cursor)
    return page.model_dump(mode="json")


def get_agent(call: Call, params: AgentParams) -> dict[str, Any]:
    return agent_ops.dumped(agent_ops.get_agent(call.gateway, call.who, params.agent))


def create_agent(call: Call, params: AgentIn) -> dict[str, Any]:
    return agent_ops.dumped(agent_ops.create_agent(call.gateway, call.who, params))


def update_agent(call: Call, params: UpdateParams) -> dict[str, Any]:
    """The HTTP body of ``PATCH /v1/agents/{agent}``: the parameters are that body plus ``agent``."""
    return agent_ops.dumped(agent_ops.update_agent(call.gateway, call.who, params.agent, params))


def delete_agent(call: Call, params: AgentParams) -> dict[str, Any]:
    return {"id": agent_ops.delete_agent(call.gateway, call.who, params.agent), "deleted": True}


def heartbeat(call: Call, params: AgentParams) -> dict[str, Any]:
    """The body of ``POST /v1/agents/{agent}/heartbeat``."""
    return agent_ops.heartbeat(call.gateway, call.who, params.agent).model_dump(mode="json")


def sign(call: Call, params: SignParams) -> dict[str, Any]:
    """A signed context for reconnecting as this principal.  Only an API-key (or team-key) connection may ask
    (the access policy refuses a signed context: one that could renew itself would outlive its key)."""
    with call.gateway.db.transaction(write=False) as tx:
        token = sign_context(tx, call.gateway.signing_secret, call.who, ttl_seconds=params.ttl_seconds)
    return {"token": token, "expires_in": params.ttl_seconds, "tenant_slug": call.tenant_slug}


def subscribe(call: Call, _: NoParams) -> dict[str, Any]:
    """Agent events of the principal's tenant (and only those) are pushed to this connection."""
    call.subscriber.user_id = call.who.user_id
    broadcaster_for(call.gateway.db).subscribe(call.who.tenant_id, call.tenant_slug, call.subscriber)
    return {"subscribed": True, "tenant_slug": call.tenant_slug, "events": [*AGENT_EVENTS, *RUN_EVENTS]}


def unsubscribe(call: Call, _: NoParams) -> dict[str, Any]:
    broadcaster_for(call.gateway.db).unsubscribe(call.subscriber)
    return {"subscribed": False}


def send(call: Call, params: SendParams) -> dict[str, Any]:
    """The body of ``POST /v1/agents/{agent}/messages`` (the same code, run on the server's event loop)."""
    reply = anyio.from_thread.run(chat.send, call.gateway, call.who, params.agent, params)
    return reply.model_dump(mode="json")


# -- cron: the HTTP API's cron operations, shared (agentfy.gateway.cron_ops) --------------------------------
def list_cron_jobs(call: Call, params: CronJobsParams) -> dict[str, Any]:
    """``GET /v1/agents/{agent}/cron-jobs``: a page of the agent's jobs, each with its ``next_run_at``."""
    return cron_ops.dumped(cron_ops.list_jobs(call.gateway, call.who, params.agent, limit=params.limit,
                                              cursor=params.cursor))


def get_cron_job(call: Call, params: CronJobParams) -> dict[str, Any]:
    return cron_ops.dumped(cron_ops.get_job(call.gateway, call.who, params.job_id))


def update_cron_job(call: Call, params: CronEnableParams) -> dict[str, Any]:
    """``PATCH /v1/cron-jobs/{job_id}``: pause (``enabled: false``) or resume."""
    return cron_ops.dumped(cron_ops.set_enabled(call.gateway, call.who, params.job_id, params.enabled))


def list_cron_runs(call: Call, params: CronRunsParams) -> dict[str, Any]:
    return cron_ops.dumped(cron_ops.list_runs(call.gateway, call.who, params.job_id, limit=params.limit,
                                              cursor=params.cursor))


def run_cron_job(call: Call, params: CronJobParams) -> dict[str, Any]:
    """``POST /v1/cron-jobs/{job_id}/run``: the job now, on the server's event loop; the ended run."""
    claim = cron_ops.start_manual_run(call.gateway, call.who, params.job_id)
    return cron_ops.dumped(anyio.from_thread.run(cron_ops.fire, call.gateway, claim))


# -- the table -----------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Method(Generic[P]):
    params: type[P]
    handler: Callable[[Call, P], Any]

    def __call__(self, call: Call, params: dict[str, Any]) -> Any:
        return self.handler(call, validate(self.params, params))


#: Methods that change nothing: their credential may come from the principal cache (writes check it afresh).
READ_ONLY_METHODS: Final = frozenset({"agents.list", "agents.get", "agents.heartbeat", "subscribe", "unsubscribe",
                                      "cron.list", "cron.get", "cron.runs"})

METHODS: Final[dict[str, Method[Any]]] = {
    "agents.list": Method(PageParams, list_agents),
    "agents.get": Method(AgentParams, get_agent),
    "agents.create": Method(AgentIn, create_agent),
    "agents.update": Method(UpdateParams, update_agent),
    "agents.delete": Method(AgentParams, delete_agent),
    "agents.heartbeat": Method(AgentParams, heartbeat),
    "agents.send": Method(SendParams, send),
    "cron.list": Method(CronJobsParams, list_cron_jobs),
    "cron.get": Method(CronJobParams, get_cron_job),
    "cron.update": Method(CronEnableParams, update_cron_job),
    "cron.runs": Method(CronRunsParams, list_cron_runs),
    "cron.run": Method(CronJobParams, run_cron_job),
    "context.sign": Method(SignParams, sign),
    "subscribe": Method(NoParams, subscribe),
    "unsubscribe": Method(NoParams, unsubscribe),
}
