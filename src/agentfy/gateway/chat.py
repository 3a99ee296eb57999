"""Talking to an agent over the API: ``POST /v1/agents/{agent}/messages`` and the WebSocket ``agents.send``
share this, so the two cannot differ in identity, conversation or errors.

The caller must act as a person (the access rule says so): the HTTP context is built with
:func:`~agentfy.permissions.channels.http_context` — the SCOPE and the ACTOR are the key's person, the role is
the key's — and the conversation is ``api:<name>`` (``default`` when the body names none) in that person's
scope, so two people, or the same name in two organizations, never share a session.  The agent is named by
its ID or key in the caller's organization only.  A model that cannot answer is a 502 naming the model's
server (never its credential); the caller's message stays stored in the session.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Final

from pydantic import AfterValidator, BaseModel, Field
from pydantic_core import PydanticCustomError

from agentfy.errors import ApiError
from agentfy.gateway.auth import Principal
from agentfy.gateway.routes.schemas import Strict, agent_ref_field, text_field
from agentfy.identity import AgentKey
from agentfy.permissions.channels import http_context
from agentfy.runtime.inbound import EMPTY_TEXT_PROBLEM, VISIBLE_TEXT_PATTERN, Inbound, has_visible_text
from agentfy.runtime.model import ModelError
from agentfy.runtime.providers import ModelConfigError
from agentfy.runtime.runner import Runtime

if TYPE_CHECKING:
    from agentfy.gateway.deps import GatewayState

CHANNEL: Final = "api"
DEFAULT_CONVERSATION: Final = "default"
TEXT_MAX_LENGTH: Final = 100_000


def _has_something_to_say(text: str) -> str:
    if not has_visible_text(text):
        raise PydanticCustomError("invalid_input", EMPTY_TEXT_PROBLEM)
    return text


class MessageToAgent(Strict):
    text: Annotated[str, AfterValidator(_has_something_to_say)] = Field(
        min_length=1, max_length=TEXT_MAX_LENGTH, json_schema_extra={"pattern": VISIBLE_TEXT_PATTERN},
        description="What to say to the agent: at least one character that is not white space.")
    conversation: str = text_field(100, default=DEFAULT_CONVERSATION,
                                   description="Your name for the conversation (one session per name, per person).")


class SendParams(MessageToAgent):
    """The WebSocket ``agents.send`` parameters: the HTTP body plus the agent the path names."""

    agent: str = agent_ref_field()


class AgentReply(BaseModel):
    reply: str | None = Field(description="The agent's answer (null: it said nothing).")
    session_key: str = Field(description="The session the exchange was stored in.")
    conversation: str


def runtime_of(gateway: GatewayState) -> Runtime:
    """The gateway's runtime (created with the app)."""
    if gateway.runtime is None:
        raise ApiError(503, "unavailable", "this server runs no agent runtime")
    return gateway.runtime


def inbound_of(who: Principal, agent: str, conversation: str, text: str) -> Inbound:
    """The runtime's message for ``text`` from ``who`` to ``agent`` in the person's ``conversation`` (see the
    module docstring): every API door to an agent builds it here."""
    assert who.user_id is not None  # the access rules of the doors: they act as a person
    context = http_context(who.user_id, tenant_id=who.tenant_id, role=who.role)
    return Inbound(who.tenant_id, AgentKey(agent), context, CHANNEL, f"{CHANNEL}:{conversation}", text)


async def send(gateway: GatewayState, who: Principal, agent: str, message: MessageToAgent) -> AgentReply:
    """Run ``message`` through the agent named ``agent`` as ``who`` (see the module docstring)."""
    inbound = inbound_of(who, agent, message.conversation, message.text)
    try:
        reply = await runtime_of(gateway)(inbound)
    except (ModelError, ModelConfigError) as error:
        raise ApiError(502, "model_error", str(error)) from None
    return AgentReply(reply=reply.text, session_key=reply.session_key, conversation=message.conversation)
