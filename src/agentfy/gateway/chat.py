"""Talking to an agent over the API: ``POST /v1/agents/{agent}/messages`` and the WebSocket ``agents.send``
share this, so the two cannot differ in identity, conversation or errors.

The caller must act as a person (the access rule says so): the HTTP context is built with
:func:`~agentfy.permissions.channels.http_context` — the SCOPE and the ACTOR are the key's person, the role is
the key's — and the conversation is ``api:<name>`` (``default`` when the body names none) in that person's
scope, so two people, or the same name in two organizations, never share a session.  The agent is named by
its ID or key in the caller's organization only.  A model that cannot answer is a 502 ``model_error`` whose
message is the failure note the other channels give (naming the model's server, never its credential, and
what to do), a 504 when it did not answer in time; the caller's message stays stored in the session.

Streaming (``stream: true`` on the HTTP body, :func:`stream`): the answer is server-sent events — ``delta``
``{"text": piece}`` per piece as the model streams it, then ``reply`` with the body the non-streamed answer
has, or ``error`` with the error body (its HTTP status inside, as on the WebSocket) when the run fails after
the stream started.  The stream starts with the run's first piece (or its end): everything that fails before
— an unknown agent, an invalid message, a model that fails before saying anything — is the ordinary HTTP
error, so a client sees an ``error`` event only for a run that failed mid-answer.  Over the WebSocket the
pieces reach the sender's subscription as ``agent.run.delta`` events (only the sender's: they carry the
conversation's text).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Annotated, Any, Final

from pydantic import AfterValidator, BaseModel, Field
from pydantic_core import PydanticCustomError

from agentfy.errors import ApiError
from agentfy.gateway.auth import Principal
from agentfy.gateway.errors import describe
from agentfy.gateway.routes.schemas import Strict, agent_ref_field, text_field
from agentfy.identity import AgentKey
from agentfy.permissions.channels import http_context
from agentfy.runtime.failures import failure_note
from agentfy.runtime.inbound import EMPTY_TEXT_PROBLEM, VISIBLE_TEXT_PATTERN, Inbound, has_visible_text
from agentfy.runtime.model import ModelError, TextSink
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


class MessageBody(MessageToAgent):
    """The HTTP body: the message, and whether to stream the answer."""

    stream: bool = Field(default=False, description="Answer with server-sent events as the reply streams in "
                                                    "(text/event-stream: delta, then reply or error).")


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


def model_failure(error: ModelError | ModelConfigError, agent: str) -> ApiError:
    """The API's ``model_error``: 504 when the model did not answer in time, else 502; its message is the
    failure note every channel gives the person (:func:`agentfy.runtime.failures.failure_note`)."""
    timed_out = isinstance(error, ModelError) and error.timed_out
    return ApiError(504 if timed_out else 502, "model_error", failure_note(error, agent=agent))


async def send(gateway: GatewayState, who: Principal, agent: str, message: MessageToAgent, *,
               on_text: TextSink | None = None) -> AgentReply:
    """Run ``message`` through the agent named ``agent`` as ``who`` (see the module docstring); ``on_text``
    gets the reply's pieces as the model streams them."""
    inbound = inbound_of(who, agent, message.conversation, message.text)
    try:
        reply = await runtime_of(gateway)(inbound, on_text=on_text)
    except (ModelError, ModelConfigError) as error:
        raise model_failure(error, agent) from None
    return AgentReply(reply=reply.text, session_key=reply.session_key, conversation=message.conversation)


#: Streamed runs, kept referenced until they end: a client that goes away does not stop its run (the reply is
#: stored either way), and the event loop holds only weak references to tasks.
_RUNNING: Final[set[asyncio.Task[None]]] = set()

_Event = tuple[str, Any]


def sse(event: str, data: Any) -> str:
    """One server-sent event: its name and its data as one line of JSON."""
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'), ensure_ascii=False)}\n\n"


async def stream(gateway: GatewayState, who: Principal, agent: str, message: MessageToAgent) -> AsyncIterator[str]:
    """:func:`send` as server-sent events (see the module docstring).  Raises what :func:`send` raises until
    the run's first piece; the returned iterator yields the events from that piece on."""
    events: asyncio.Queue[_Event] = asyncio.Queue()

    async def piece(text: str) -> None:
        await events.put(("delta", text))

    async def run() -> None:
        try:
            reply = await send(gateway, who, agent, message, on_text=piece)
        except Exception as error:  # every failure reaches the client, shaped by describe()
            await events.put(("error", error))
        else:
            await events.put(("reply", reply))

    task = asyncio.create_task(run())
    _RUNNING.add(task)
    task.add_done_callback(_RUNNING.discard)
    first = await events.get()
    if first[0] == "error":
        raise first[1]
    return _events(first, events)


async def _events(first: _Event, events: asyncio.Queue[_Event]) -> AsyncIterator[str]:
    kind, value = first
    while True:
        if kind == "delta":
            yield sse("delta", {"text": value})
        elif kind == "reply":
            yield sse("reply", value.model_dump(mode="json"))
            return
        else:
            status, body = describe(value)
            yield sse("error", {"error": {**body["error"], "status": status}})
            return
        kind, value = await events.get()
