"""``/v1/agents/{agent}/heartbeat``: is the agent there, and is it running?"""

from __future__ import annotations

from fastapi import APIRouter

from agentfy.gateway import agent_ops
from agentfy.gateway.deps import Authenticated
from agentfy.gateway.routes.agents import AgentRef
from agentfy.gateway.routes.schemas_admin import HeartbeatOut
from agentfy.gateway.routing import ApiRoute

router = APIRouter(tags=["agents"], route_class=ApiRoute)


@router.post("/agents/{agent}/heartbeat", operation_id="agents.heartbeat", response_model=HeartbeatOut)
def heartbeat(agent: AgentRef, call: Authenticated) -> HeartbeatOut:
    """Check in with an agent named by ID or agent_key: its loop is loaded into (or found in) the router's
    cache, and the answer carries both identities and whether a run is in progress."""
    return agent_ops.heartbeat(call.gateway, call.who, agent)
