"""``POST /v1/chat/completions`` and ``GET /v1/models``: an agent as an OpenAI model (the rules are in
``docs/openai-compatible.md``).

* ``model`` is an agent's key or ID in the caller's organization, resolved by the one resolver
  (:func:`agentfy.gateway.resolve.agent_loop`); any other value is 404 ``model_not_found``.
* The text sent is the last message's, which must be the user's (``content`` a string, or text parts joined by
  a line break); earlier messages are ignored: the conversation's history is the server's.
* ``user`` names the person's conversation to continue (as ``conversation`` of ``POST /v1/agents/{agent}/
  messages``: the same session); without it the exchange is a one-off conversation of a fresh name, completed
  after the reply (it becomes episodic memory like any completed session, and is never continued).
* The run is the runtime's, with the identity every API door uses (:func:`agentfy.gateway.chat.inbound_of`).
"""

from __future__ import annotations

import json
import secrets
import time
from datetime import datetime
from typing import Any, Final

from fastapi import APIRouter, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import StreamingResponse

from agentfy.agents.loop import AgentLoop
from agentfy.errors import ApiError
from agentfy.gateway import chat
from agentfy.gateway.auth import Principal
from agentfy.gateway.deps import Authenticated, GatewayState
from agentfy.gateway.openai import sse
from agentfy.gateway.openai.errors import (
    ERROR_RESPONSES,
    MODEL_ERROR_RESPONSES,
    OpenAIRoute,
    bad_messages,
    model_not_found,
)
from agentfy.gateway.openai.schemas import (
    ChatCompletion,
    ChatCompletionRequest,
    ChatMessageIn,
    Model,
    ModelList,
    TextPart,
)
from agentfy.gateway.resolve import agent_loop
from agentfy.identity import InvalidAgentKeyError, InvalidIdError
from agentfy.runtime.inbound import Inbound, Reply, has_visible_text
from agentfy.store.repos import agents, orgs

router = APIRouter(tags=["openai"], route_class=OpenAIRoute)
#: The conversation name of a request without ``user``: a fresh one each time (never continued).
ONE_OFF_PREFIX: Final = "openai-"


def text_of(messages: list[ChatMessageIn]) -> str:
    """The text of the last message, which must be the user's with something to say (else 400 ``messages``)."""
    last = messages[-1]
    where = f"messages[{len(messages) - 1}]"
    if last.role != "user":
        raise bad_messages(f"the last message must be the user's message to the agent; {where} has role "
                           f"{last.role!r}")
    content = last.content
    text = content if isinstance(content, str) else "\n".join(
        part.text for part in content or () if isinstance(part, TextPart))
    if not has_visible_text(text):
        raise bad_messages(f"the last message must be the user's message to the agent; {where} has no text "
                           "(expected a string, or text parts, with a character that is not white space)")
    if len(text) > chat.TEXT_MAX_LENGTH:
        raise bad_messages(f"the last message must be the user's message to the agent; {where} has {len(text)} "
                           f"characters, at most {chat.TEXT_MAX_LENGTH} are allowed")
    return text


async def resolved(gateway: GatewayState, who: Principal, model: str) -> AgentLoop:
    """The caller's agent named ``model`` (the router's cache first), or the one 404 ``model_not_found``."""
    loop = gateway.router.get_cached(who.context(), model)
    if loop is not None:
        return loop
    try:
        return (agent_loop(gateway, who, model, "model") if gateway.inline_lookups
                else await run_in_threadpool(agent_loop, gateway, who, model, "model"))
    except (InvalidAgentKeyError, InvalidIdError):
        raise model_not_found(model) from None
    except ApiError as error:
        if error.status == 404:
            raise model_not_found(model) from None
        raise


async def _run(gateway: GatewayState, inbound: Inbound, one_off: bool, on_text: sse.Pieces | None) -> Reply:
    """The run, then — for a one-off conversation — its session completed, whether or not the model answered."""
    runtime = chat.runtime_of(gateway)
    try:
        return await runtime(inbound, on_text=on_text.put if on_text is not None else None)
    finally:
        if one_off:
            await runtime.end_conversation(inbound)


@router.post("/chat/completions", operation_id="openai.chat.completions.create", response_model=ChatCompletion,
             responses={**MODEL_ERROR_RESPONSES, 200: {
                 "description": "A chat.completion object, or (stream: true) chat.completion.chunk server-sent "
                                "events ending with data: [DONE].",
                 "content": {sse.MEDIA_TYPE: {"schema": {"type": "string"}}}}})
async def create_chat_completion(body: ChatCompletionRequest, call: Authenticated) -> Any:
    """Talk to an agent as an OpenAI client does (OpenAI's Chat Completions API, errors in OpenAI's shape).

    ``model``: the agent (key or ID). The last message is the user's text; earlier ones are ignored (the
    conversation's history is the server's). ``user``: the conversation to continue; absent, a one-off one.
    ``stream: true`` streams chat.completion.chunk events; ``stream_options.include_usage`` adds the usage."""
    text = text_of(body.messages)
    loop = await resolved(call.gateway, call.who, body.model)
    agent_key = loop.agent.agent_key
    one_off = body.user is None
    conversation = body.user if body.user is not None else ONE_OFF_PREFIX + secrets.token_hex(12)
    inbound = chat.inbound_of(call.who, agent_key, conversation, text)
    chunks = sse.Chunks("chatcmpl-" + secrets.token_hex(12), int(time.time()), agent_key)
    if body.stream:
        pieces = sse.Pieces()
        task, first = await sse.started(_run(call.gateway, inbound, one_off, pieces), pieces)
        include_usage = body.stream_options is not None and body.stream_options.include_usage
        return StreamingResponse(sse.stream(chunks, task, first, pieces, include_usage=include_usage),
                                 media_type=sse.MEDIA_TYPE, headers={"Cache-Control": "no-cache"})
    reply = await _run(call.gateway, inbound, one_off, None)
    # The body written directly: every value is built here, in the shape of ChatCompletion (the documented
    # response model), so validating it against that model again and serializing it through pydantic would
    # only cost time on every message.
    answer = {"id": chunks.id, "object": "chat.completion", "created": chunks.created, "model": agent_key,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": reply.text},
                         "finish_reason": "stop", "logprobs": None}],
            "usage": sse.usage_of(reply.usage)}
    return Response(json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode("utf-8"),
                    media_type="application/json")


def _models(gateway: GatewayState, who: Principal) -> ModelList:
    scope = who.scope
    with gateway.db.transaction(write=False) as tx:
        slug = orgs.get_organization(tx, scope).slug
        found = agents.list_agents(tx, scope)
    return ModelList(data=[Model(id=agent.agent_key, created=int(datetime.fromisoformat(agent.created_at).timestamp()),
                                 owned_by=slug) for agent in found])


@router.get("/models", operation_id="openai.models.list", response_model=ModelList, responses=ERROR_RESPONSES)
async def list_models(call: Authenticated) -> ModelList:
    """The caller's organization's agents, as OpenAI models (``id`` is the agent_key), all of them, by key."""
    if call.gateway.inline_lookups:
        return _models(call.gateway, call.who)
    return await run_in_threadpool(_models, call.gateway, call.who)
