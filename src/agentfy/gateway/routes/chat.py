"""``POST /v1/agents/{agent}/messages``: say something to an agent and get its reply (see
:mod:`agentfy.gateway.chat`)."""

from __future__ import annotations

from fastapi import APIRouter

from agentfy.gateway import chat
from agentfy.gateway.chat import AgentReply, MessageToAgent
from agentfy.gateway.deps import Authenticated
from agentfy.gateway.errors import ErrorBody
from agentfy.gateway.routes.agents import AgentRef

router = APIRouter(tags=["agents"])


@router.post("/agents/{agent}/messages", operation_id="agents.messages.send", response_model=AgentReply,
             responses={502: {"model": ErrorBody, "description": "the agent's model could not answer"}})
async def send_message(agent: AgentRef, body: MessageToAgent, call: Authenticated) -> AgentReply:
    """Send a message to an agent (by ID or agent_key) as the key's person and wait for the reply.

    The conversation (``default`` unless named) is the caller's own: one session per person and name. Tools
    the agent runs act for the caller. A missing agent is 404; a model that cannot answer 502."""
    return await chat.send(call.gateway, call.who, agent, body)
