"""The agent operations behind both APIs: ``POST/GET/PATCH/DELETE /v1/agents…`` and the WebSocket
``agents.*`` methods call these, so the two cannot drift in roles, resolution or results.

Who may call each is decided before they run, by the one access policy (``agentfy.permissions.access``:
the HTTP dependency and the WebSocket dispatcher both call ``authorize``).  Writes resolve their target in
their own transaction (:func:`agentfy.gateway.resolve.agent_in`); reads use
the router's cache (:func:`agentfy.gateway.resolve.agent_loop`).  WebSocket clients hear of every change
through the change feed, whichever API or process made it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from agentfy.gateway.auth import Principal
from agentfy.gateway.pages import Page, paged
from agentfy.gateway.resolve import agent_in, agent_loop
from agentfy.gateway.routes.schemas import AgentIn, AgentOut, AgentPatch
from agentfy.gateway.routes.schemas_admin import HeartbeatOut
from agentfy.identity import AgentId
from agentfy.store.db import now
from agentfy.store.paging import DEFAULT_LIMIT
from agentfy.store.repos import agents
from agentfy.store.repos.agents import Agent

if TYPE_CHECKING:
    from agentfy.gateway.deps import GatewayState


#: Rendered agents kept per gateway; past this many the cache starts over (a cold agent costs one render).
RENDERED_MAX: Final = 10_000


def agent_out(agent: Agent) -> AgentOut:
    return AgentOut(id=agent.id, tenant_id=agent.tenant_id, agent_key=agent.agent_key,
                    display_name=agent.display_name, config=agent.config, created_at=agent.created_at,
                    updated_at=agent.updated_at)


def rendered(gateway: GatewayState, agent: Agent) -> bytes:
    """``agent`` as the API's JSON body (``AgentOut``), rendered once per record.

    The cached read returns these bytes as they are, skipping a model build, its validation and its
    serialization on every request.  The rendering is kept beside the record object it was made from and
    used only for that same object: the router replaces the record on every change it hears of, so a
    stale rendering is never served.
    """
    cached = gateway.rendered_agents.get(agent.id)
    if cached is not None and cached[0] is agent:
        return cached[1]
    body = agent_out(agent).model_dump_json().encode()
    if len(gateway.rendered_agents) >= RENDERED_MAX:
        gateway.rendered_agents.clear()
    gateway.rendered_agents[agent.id] = (agent, body)
    return body


def list_agents(gateway: GatewayState, who: Principal, *, limit: int = DEFAULT_LIMIT,
                cursor: str | None = None) -> Page[AgentOut]:
    """A page of the organization's agents, by key."""
    return paged(gateway, who, "agents.list", agents.PAGES, fetch=lambda tx, **page: agents.list_agents(
        tx, who.scope, **page), out=agent_out, limit=limit, cursor=cursor)


def get_agent(gateway: GatewayState, who: Principal, ref: str) -> Agent:
    return agent_loop(gateway, who, ref).agent


def create_agent(gateway: GatewayState, who: Principal, body: AgentIn) -> Agent:
    """A new agent; a taken ``agent_key`` is 409."""
    with gateway.db.transaction() as tx:
        return agents.create_agent(tx, who.scope, agent_key=body.agent_key, display_name=body.display_name,
                                   config=body.config)


def update_agent(gateway: GatewayState, who: Principal, ref: str, patch: AgentPatch) -> Agent:
    """Rename (a new ``agent_key``; the ID never changes) and/or update."""
    with gateway.db.transaction() as tx:
        agent_id = agent_in(tx, who, ref).id
        if patch.agent_key is not None:
            agents.rename_agent(tx, who.scope, agent_id, patch.agent_key)
        return agents.update_agent(tx, who.scope, agent_id, display_name=patch.display_name, config=patch.config)


def delete_agent(gateway: GatewayState, who: Principal, ref: str) -> AgentId:
    """Delete the agent and everything it owns; returns its ID."""
    with gateway.db.transaction() as tx:
        agent_id = agent_in(tx, who, ref).id
        agents.delete_agent(tx, who.scope, agent_id)
    return agent_id


def heartbeat(gateway: GatewayState, who: Principal, ref: str) -> HeartbeatOut:
    """Both identities of the agent and whether a run is in progress (its loop is found in, or loaded into,
    the router)."""
    loop = agent_loop(gateway, who, ref)
    found = loop.agent
    return HeartbeatOut(id=found.id, tenant_id=found.tenant_id, agent_key=found.agent_key,
                        display_name=found.display_name, running=loop.running, checked_at=now())


def dumped(agent: Agent) -> dict[str, Any]:
    """The HTTP body of ``agent`` as JSON-ready data (the WebSocket result)."""
    return agent_out(agent).model_dump(mode="json")
