"""The WebSocket methods: the HTTP API's agent operations, with the same rules and the same role checks.

Every ``agent`` parameter accepts an agent ID **or** an ``agent_key`` and goes through one helper,
:func:`resolve_agent_param`, which uses the router's cached resolver (the seed's Trap 5).  The tenant is
always the principal's: no parameter can name one (parameter models forbid unknown members).

Handlers are synchronous (they touch the database) and run in a worker thread with the principal's
request context bound; results are what the HTTP API returns for the same operation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Generic

from pydantic import Field

from agentfy.agents.router import resolve_agent_id_cached
from agentfy.gateway.app import GatewayState
from agentfy.gateway.auth import Principal, sign_context
from agentfy.gateway.errors import ApiError
from agentfy.gateway.routes.schemas import AGENT_REF_DESCRIPTION, AgentIn, AgentOut, AgentPatch, Strict
from agentfy.gateway.routes.schemas_admin import HeartbeatOut
from agentfy.gateway.rpc.broadcast import AGENT_EVENTS, Subscriber, broadcaster_for, publish_agent_created
from agentfy.gateway.rpc.protocol import P, validate
from agentfy.identity import AgentId
from agentfy.store.db import now
from agentfy.store.repos import agents
from agentfy.store.repos.agents import Agent

AGENT_REF_MAX_LENGTH: Final = 100  # as the HTTP path parameter
SIGNED_CONTEXT_TTL_SECONDS: Final = 300


@dataclass(frozen=True, slots=True)
class Call:
    """What a method runs with: the gateway, the connection's (re-validated) principal, its tenant slug,
    its subscriber inbox, and whether it authenticated with a signed context rather than an API key."""

    gateway: GatewayState
    who: Principal
    tenant_slug: str
    subscriber: Subscriber
    signed_context: bool


def resolve_agent_param(call: Call, ref: str) -> AgentId:
    """THE resolver of every ``agent`` parameter: an ID or a key, in the principal's tenant, through the
    router's cache (the store on a miss).  Another tenant's agent is ``not_found``; a ``team-…`` ID is
    ``invalid_id`` naming the field, the value and the expected format."""
    return resolve_agent_id_cached(call.gateway.router, call.who.context(), ref)


def _agent_out(agent: Agent) -> dict[str, Any]:
    """The HTTP API's agent body."""
    return AgentOut(id=agent.id, tenant_id=agent.tenant_id, agent_key=agent.agent_key,
                    display_name=agent.display_name, config=agent.config, created_at=agent.created_at,
                    updated_at=agent.updated_at).model_dump(mode="json")


# -- parameters ----------------------------------------------------------------------------------------------
class NoParams(Strict):
    pass


class AgentParams(Strict):
    agent: str = Field(max_length=AGENT_REF_MAX_LENGTH, description=AGENT_REF_DESCRIPTION)


class UpdateParams(AgentPatch):
    agent: str = Field(max_length=AGENT_REF_MAX_LENGTH, description=AGENT_REF_DESCRIPTION)


class SignParams(Strict):
    ttl_seconds: int = Field(default=SIGNED_CONTEXT_TTL_SECONDS, ge=10, le=SIGNED_CONTEXT_TTL_SECONDS)


class AuthParams(Strict):
    token: str = Field(min_length=1, max_length=4096, description="An API key or a signed context.")


# -- handlers ------------------------------------------------------------------------------------------------
def list_agents(call: Call, _: NoParams) -> list[dict[str, Any]]:
    with call.gateway.db.transaction(write=False) as tx:
        return [_agent_out(a) for a in agents.list_agents(tx, call.who.scope)]


def get_agent(call: Call, params: AgentParams) -> dict[str, Any]:
    agent_id = resolve_agent_param(call, params.agent)
    return _agent_out(call.gateway.router.get(call.who.context(), agent_id).agent)


def create_agent(call: Call, params: AgentIn) -> dict[str, Any]:
    call.who.require_role("operator")
    with call.gateway.db.transaction() as tx:
        agent = agents.create_agent(tx, call.who.scope, agent_key=params.agent_key,
                                    display_name=params.display_name, config=params.config)
    publish_agent_created(call.gateway.db, agent)  # the store reports changes, not creations
    return _agent_out(agent)


def update_agent(call: Call, params: UpdateParams) -> dict[str, Any]:
    call.who.require_role("operator")
    agent_id = resolve_agent_param(call, params.agent)
    with call.gateway.db.transaction() as tx:
        if params.agent_key is not None:
            agents.rename_agent(tx, call.who.scope, agent_id, params.agent_key)
        updated = agents.update_agent(tx, call.who.scope, agent_id, display_name=params.display_name,
                                      config=params.config)
    return _agent_out(updated)


def delete_agent(call: Call, params: AgentParams) -> dict[str, Any]:
    call.who.require_role("admin")
    agent_id = resolve_agent_param(call, params.agent)
    with call.gateway.db.transaction() as tx:
        agents.delete_agent(tx, call.who.scope, agent_id)
    return {"id": agent_id, "deleted": True}


def heartbeat(call: Call, params: AgentParams) -> dict[str, Any]:
    """The router's view of the agent's loop (loaded into its cache if needed): whether a run is in progress.
    The body of ``POST /v1/agents/{agent}/heartbeat``."""
    loop = call.gateway.router.get(call.who.context(), resolve_agent_param(call, params.agent))
    found = loop.agent
    return HeartbeatOut(id=found.id, tenant_id=found.tenant_id, agent_key=found.agent_key,
                        display_name=found.display_name, running=loop.running, checked_at=now()).model_dump(
        mode="json")


def sign(call: Call, params: SignParams) -> dict[str, Any]:
    """A signed context for reconnecting as this principal.  Only an API-key connection may ask: a signed
    context that could renew itself would outlive the revocation of the key it came from."""
    if call.signed_context:
        raise ApiError(403, "forbidden", "context.sign needs a connection authenticated with an API key; "
                                         "a signed context cannot renew itself")
    with call.gateway.db.transaction(write=False) as tx:
        token = sign_context(tx, call.gateway.signing_secret, call.who, ttl_seconds=params.ttl_seconds)
    return {"token": token, "expires_in": params.ttl_seconds, "tenant_slug": call.tenant_slug}


def subscribe(call: Call, _: NoParams) -> dict[str, Any]:
    """Agent events of the principal's tenant (and only those) are pushed to this connection."""
    broadcaster_for(call.gateway.db).subscribe(call.who.tenant_id, call.tenant_slug, call.subscriber)
    return {"subscribed": True, "tenant_slug": call.tenant_slug, "events": list(AGENT_EVENTS)}


def unsubscribe(call: Call, _: NoParams) -> dict[str, Any]:
    broadcaster_for(call.gateway.db).unsubscribe(call.subscriber)
    return {"subscribed": False}


# -- the table -----------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Method(Generic[P]):
    params: type[P]
    handler: Callable[[Call, P], Any]

    def __call__(self, call: Call, params: dict[str, Any]) -> Any:
        return self.handler(call, validate(self.params, params))


METHODS: Final[dict[str, Method[Any]]] = {
    "agents.list": Method(NoParams, list_agents),
    "agents.get": Method(AgentParams, get_agent),
    "agents.create": Method(AgentIn, create_agent),
    "agents.update": Method(UpdateParams, update_agent),
    "agents.delete": Method(AgentParams, delete_agent),
    "agents.heartbeat": Method(AgentParams, heartbeat),
    "context.sign": Method(SignParams, sign),
    "subscribe": Method(NoParams, subscribe),
    "unsubscribe": Method(NoParams, unsubscribe),
}
