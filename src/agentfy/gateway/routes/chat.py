"""``POST /v1/agents/{agent}/messages``: say something to an agent and get its reply (see
:mod:`agentfy.gateway.chat`)."""

from __future__ import annotations

from typing import Any, Final

from fastapi import APIRouter
from fastapi.responses import StreamingResponse

from agentfy.gateway import chat
from agentfy.gateway.chat import AgentReply, MessageBody
from agentfy.gateway.deps import Authenticated
from agentfy.gateway.errors import ErrorBody
from agentfy.gateway.routes.agents import AgentRef
from agentfy.gateway.routing import ApiRoute

router = APIRouter(tags=["agents"], route_class=ApiRoute)


#: How the streamed answer is described in the OpenAPI document (the events are text, not one JSON body).
_EVENT_STREAM: Final[dict[str, Any]] = {"text/event-stream": {"schema": {
    "type": "string",
    "description": "Server-sent events: `event: delta` with data {\"text\": piece} for each piece of the reply, "
                   "then `event: reply` with the non-streamed answer's body, or `event: error` with the error "
                   "body (its HTTP status inside: model_error 502, or 504 when the model timed out) if the run "
                   "failed after the stream started."}}}


@router.post("/agents/{agent}/messages", operation_id="agents.messages.send", response_model=AgentReply,
             responses={200: {"content": _EVENT_STREAM, "description": "The agent's reply (JSON), or, with "
                                                                       "stream: true, the reply as it streams."},
                        502: {"model": ErrorBody, "description": "the agent's model could not answer "
                                                                 "(model_error)"},
                        504: {"model": ErrorBody, "description": "the agent's model did not answer in time "
                                                                 "(model_error)"}})
async def send_message(agent: AgentRef, body: MessageBody, call: Authenticated) -> AgentReply | StreamingResponse:
    """Send a message to an agent (by ID or agent_key) as the key's person and wait for the reply.

    The conversation (``default`` unless named) is the caller's own: one session per person and name. Tools
    the agent runs act for the caller. A missing agent is 404; a model that cannot answer 502 (``model_error``),
    504 when it did not answer in time.  With ``stream: true`` the answer is ``text/event-stream``: a ``delta``
    event per piece of the reply, then ``reply`` (this operation's JSON body) or ``error`` (the error body, its
    status inside) when the run fails mid-answer; a failure before the first piece is the ordinary error."""
    if body.stream:
        events = await chat.stream(call.gateway, call.who, agent, body)
        return StreamingResponse(events, media_type="text/event-stream",
                                 headers={"cache-control": "no-store", "x-accel-buffering": "no"})
    return await chat.send(call.gateway, call.who, agent, body)
