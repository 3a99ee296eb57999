"""``/v1/agents``: create, list, get, update, delete — addressed by ID **or** agent_key, one resolver."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Response
from fastapi.concurrency import run_in_threadpool

from agentfy.gateway import agent_ops
from agentfy.gateway.agent_ops import agent_out
from agentfy.gateway.deps import Authenticated
from agentfy.gateway.pages import Cursor, Limit, Page
from agentfy.gateway.routes.schemas import (
    AGENT_REF_DESCRIPTION,
    AGENT_REF_MAX_LENGTH,
    AGENT_REF_PATTERN,
    AgentIn,
    AgentOut,
    AgentPatch,
)
from agentfy.gateway.routing import ApiRoute
from agentfy.store.paging import DEFAULT_LIMIT

router = APIRouter(tags=["agents"], route_class=ApiRoute)
AgentRef = Annotated[str, Path(description=AGENT_REF_DESCRIPTION, max_length=AGENT_REF_MAX_LENGTH,
                               json_schema_extra={"pattern": AGENT_REF_PATTERN})]


@router.post("/agents", operation_id="agents.create", status_code=201, response_model=AgentOut)
def create_agent(body: AgentIn, call: Authenticated) -> AgentOut:
    """Create an agent in the caller's organization (operator or higher). A taken agent_key is 409."""
    return agent_out(agent_ops.create_agent(call.gateway, call.who, body))


@router.get("/agents", operation_id="agents.list", response_model=Page[AgentOut])
def list_agents(call: Authenticated, limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None,
                ) -> Page[AgentOut]:
    """The caller's organization's agents, by key, a page at a time."""
    return agent_ops.list_agents(call.gateway, call.who, limit=limit, cursor=cursor)


@router.get("/agents/{agent}", operation_id="agents.get", response_model=AgentOut)
async def get_agent(agent: AgentRef, call: Authenticated) -> AgentOut | Response:
    """One agent by ID or key (served from the router's cache when warm). Another organization's: 404."""
    loop = call.gateway.router.get_cached(call.who.context(), agent)  # the hot path: no thread hop, no database
    if loop is not None:
        return Response(agent_ops.rendered(call.gateway, loop.agent), media_type="application/json")
    found = (agent_ops.get_agent(call.gateway, call.who, agent) if call.gateway.inline_lookups
             else await run_in_threadpool(agent_ops.get_agent, call.gateway, call.who, agent))
    return agent_out(found)


@router.patch("/agents/{agent}", operation_id="agents.update", response_model=AgentOut)
def update_agent(agent: AgentRef, body: AgentPatch, call: Authenticated) -> AgentOut:
    """Rename (a new agent_key; the ID never changes) and/or update (operator or higher)."""
    return agent_out(agent_ops.update_agent(call.gateway, call.who, agent, body))


@router.delete("/agents/{agent}", operation_id="agents.delete", status_code=204, response_class=Response)
def delete_agent(agent: AgentRef, call: Authenticated) -> Response:
    """Delete an agent and everything it owns (admin or higher)."""
    agent_ops.delete_agent(call.gateway, call.who, agent)
    return Response(status_code=204)
