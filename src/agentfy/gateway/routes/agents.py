"""``/v1/agents``: create, list, get, update, delete — addressed by ID **or** agent_key, one resolver."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Response
from fastapi.concurrency import run_in_threadpool

from agentfy.agents.router import resolve_agent_id_cached
from agentfy.gateway.app import Authenticated, Gateway
from agentfy.gateway.routes.schemas import AGENT_REF_DESCRIPTION, AGENT_REF_PATTERN, AgentIn, AgentOut, AgentPatch
from agentfy.gateway.rpc.broadcast import publish_agent_created
from agentfy.store.repos import agents
from agentfy.store.repos.agents import Agent

router = APIRouter(tags=["agents"])
AgentRef = Annotated[str, Path(description=AGENT_REF_DESCRIPTION, max_length=100,
                               json_schema_extra={"pattern": AGENT_REF_PATTERN})]


def out(agent: Agent) -> AgentOut:
    return AgentOut(id=agent.id, tenant_id=agent.tenant_id, agent_key=agent.agent_key,
                    display_name=agent.display_name, config=agent.config, created_at=agent.created_at,
                    updated_at=agent.updated_at)


@router.post("/agents", status_code=201, response_model=AgentOut)
def create_agent(body: AgentIn, who: Authenticated, gateway: Gateway) -> AgentOut:
    """Create an agent in the caller's organization (operator or higher). A taken agent_key is 409."""
    who.require_role("operator")
    with gateway.db.transaction() as tx:
        agent = agents.create_agent(tx, who.scope, agent_key=body.agent_key, display_name=body.display_name,
                                    config=body.config)
    publish_agent_created(gateway.db, agent)  # WebSocket subscribers of this tenant
    return out(agent)


@router.get("/agents", response_model=list[AgentOut])
def list_agents(who: Authenticated, gateway: Gateway) -> list[AgentOut]:
    """The caller's organization's agents, by key."""
    with gateway.db.transaction(write=False) as tx:
        return [out(a) for a in agents.list_agents(tx, who.scope)]


@router.get("/agents/{agent}", response_model=AgentOut)
async def get_agent(agent: AgentRef, who: Authenticated, gateway: Gateway) -> AgentOut:
    """One agent by ID or key (served from the router's cache when warm). Another organization's: 404."""
    ctx = who.context()
    loop = gateway.router.get_cached(ctx, agent)  # the hot path: no thread hop, no database
    if loop is None:
        loop = (gateway.router.get(ctx, agent) if gateway.inline_lookups
                else await run_in_threadpool(gateway.router.get, ctx, agent))
    return out(loop.agent)


@router.patch("/agents/{agent}", response_model=AgentOut)
def update_agent(agent: AgentRef, body: AgentPatch, who: Authenticated, gateway: Gateway) -> AgentOut:
    """Rename (a new agent_key; the ID never changes) and/or update (operator or higher)."""
    who.require_role("operator")
    agent_id = resolve_agent_id_cached(gateway.router, who.context(), agent)
    with gateway.db.transaction() as tx:
        if body.agent_key is not None:
            agents.rename_agent(tx, who.scope, agent_id, body.agent_key)
        updated = agents.update_agent(tx, who.scope, agent_id, display_name=body.display_name, config=body.config)
    return out(updated)


@router.delete("/agents/{agent}", status_code=204, response_class=Response)
def delete_agent(agent: AgentRef, who: Authenticated, gateway: Gateway) -> Response:
    """Delete an agent and everything it owns (admin or higher)."""
    who.require_role("admin")
    agent_id = resolve_agent_id_cached(gateway.router, who.context(), agent)
    with gateway.db.transaction() as tx:
        agents.delete_agent(tx, who.scope, agent_id)
    return Response(status_code=204)
