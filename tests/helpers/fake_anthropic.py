"""A real, local Anthropic Messages API for tests: ``POST /v1/messages`` on a free port.

The provider under test speaks HTTP to it through the official SDK exactly as it would to Anthropic, so
retries, timeouts, streaming and disconnects are the real protocol, not a mocked transport.  Usage::

    with FakeAnthropic() as fake:                    # uvicorn in a thread, always stopped on exit
        fake.script(Failure(429, headers={"retry-after": "1"}),
                    Message(text="hello there", usage=Tokens(12, 3, cache_read=8)))
        provider = AnthropicMessagesProvider(base_url=fake.url, model="m", max_tokens=64, api_key="sk-ant")
        ...
        fake.requests[-1].body["messages"]           # what the server got, in order

Each request takes the next scripted answer (:meth:`~tests.helpers.local_server.ScriptedServer.script`
appends).  A :class:`Message` is served as one JSON message, or — when the request says ``"stream": true`` —
as server-sent events: ``message_start`` (with the input counts), per content block ``content_block_start``,
its deltas (``text_delta`` per text piece; a tool call's input as ``input_json_delta`` in two pieces) and
``content_block_stop``, then ``message_delta`` (the stop reason, the output count) and ``message_stop``.  A
:class:`Failure` is an HTTP error with an Anthropic-style error body (529 is ``overloaded_error``); a
:class:`StreamError` a stream that sends its ``pieces`` and then an ``error`` event; a
:class:`~tests.helpers.fake_openai.Raw` any JSON body.  ``delay`` makes an answer slow (a timeout test);
``piece_delay`` spaces the stream's events (a cancellation test, with
:attr:`~tests.helpers.local_server.ScriptedServer.disconnects`).  With the script empty the answer is
``default`` when one was given, else HTTP 500 saying so (a test that forgot to script fails loudly).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.helpers.fake_openai import FakeToolCall, Raw, split_pieces
from tests.helpers.local_server import ScriptedServer

__all__ = ["Failure", "FakeAnthropic", "FakeToolCall", "Message", "Raw", "StreamError", "Tokens"]


@dataclass(frozen=True)
class Tokens:
    """A message's usage as Anthropic counts it: ``input`` excludes the tokens read from (``cache_read``) and
    written to (``cache_creation``) the prompt cache."""

    input: int
    output: int
    cache_read: int | None = None
    cache_creation: int | None = None

    def as_json(self) -> dict[str, Any]:
        return {"input_tokens": self.input, "output_tokens": self.output,
                "cache_read_input_tokens": self.cache_read, "cache_creation_input_tokens": self.cache_creation}


@dataclass(frozen=True)
class Message:
    """A successful answer.  ``pieces``: how a streamed answer splits ``text`` (default: word by word, each
    keeping its trailing white space); they must join to ``text``.  ``stop_reason`` defaults to ``tool_use``
    with tool calls, else ``end_turn``."""

    text: str | None = None
    tool_calls: Sequence[FakeToolCall] = ()
    usage: Tokens | None = None
    stop_reason: str | None = None
    delay: float = 0.0
    piece_delay: float = 0.0
    pieces: Sequence[str] | None = None

    @property
    def reason(self) -> str:
        return self.stop_reason or ("tool_use" if self.tool_calls else "end_turn")


@dataclass(frozen=True)
class Failure:
    """An HTTP error answer (``status`` with ``headers``, e.g. ``{"retry-after": "2"}``)."""

    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    message: str = "scripted failure"
    delay: float = 0.0


@dataclass(frozen=True)
class StreamError:
    """A stream that sends ``pieces`` of text and then an ``error`` event of ``error_type``."""

    pieces: Sequence[str] = ()
    error_type: str = "overloaded_error"
    delay: float = 0.0


Answer = Message | Failure | StreamError | Raw

ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
               404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 500: "api_error",
               529: "overloaded_error"}


def _content(answer: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": answer.text}] if answer.text else []
    return blocks + [{"type": "tool_use", "id": call.id, "name": call.name, "input": dict(call.arguments)}
                     for call in answer.tool_calls]


def message_json(answer: Message, model: str) -> dict[str, Any]:
    """``answer`` as a non-streamed message."""
    usage = answer.usage or Tokens(0, 0)
    return {"id": "msg_fake", "type": "message", "role": "assistant", "model": model,
            "content": _content(answer), "stop_reason": answer.reason, "stop_sequence": None,
            "usage": usage.as_json()}


def message_events(answer: Message, model: str) -> list[tuple[str, dict[str, Any]]]:
    """``answer`` as the ``(event, data)`` of a streamed message."""
    usage = answer.usage or Tokens(0, 0)
    start = {**message_json(answer, model), "content": [], "stop_reason": None,
             "usage": {**usage.as_json(), "output_tokens": 1}}
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": start}),
                                                ("ping", {"type": "ping"})]
    index = 0
    if answer.text:
        events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                               "content_block": {"type": "text", "text": ""}}))
        pieces = list(answer.pieces) if answer.pieces is not None else split_pieces(answer.text)
        events += [("content_block_delta", {"type": "content_block_delta", "index": index,
                                            "delta": {"type": "text_delta", "text": piece}}) for piece in pieces]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    for call in answer.tool_calls:
        events.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": {
            "type": "tool_use", "id": call.id, "name": call.name, "input": {}}}))
        text = json.dumps(dict(call.arguments))
        half = len(text) // 2
        events += [("content_block_delta", {"type": "content_block_delta", "index": index,
                                            "delta": {"type": "input_json_delta", "partial_json": part}})
                   for part in (text[:half], text[half:])]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    events.append(("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": answer.reason, "stop_sequence": None},
                                     "usage": {"output_tokens": usage.output}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def _error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


class FakeAnthropic(ScriptedServer[Answer]):
    """The fake server (see the module docstring; scripting and recording:
    :class:`~tests.helpers.local_server.ScriptedServer`)."""

    def __init__(self, *, default: Answer | None = None) -> None:
        app = Starlette(routes=[Route("/v1/messages", self._endpoint, methods=["POST"])])
        super().__init__(app, name="fake-anthropic", default=default)

    @property
    def url(self) -> str:
        """The base URL to configure (``http://127.0.0.1:<port>``: the SDK adds ``/v1/messages``)."""
        return f"http://127.0.0.1:{self.port}"

    async def _endpoint(self, request: Request) -> Response:
        body = json.loads(await request.body())
        answer = self.take(request.headers, body)
        if answer is None:
            return JSONResponse(_error("api_error", "the fake has no scripted answer"), 500)
        if not isinstance(answer, Raw) and answer.delay:
            await asyncio.sleep(answer.delay)
        if isinstance(answer, Raw):
            return JSONResponse(answer.body, answer.status)
        if isinstance(answer, Failure):
            return JSONResponse(_error(ERROR_TYPES.get(answer.status, "api_error"), answer.message), answer.status,
                                headers=dict(answer.headers))
        model = str(body.get("model", "fake"))
        if isinstance(answer, StreamError):
            events = [("message_start", {"type": "message_start", "message": {
                **message_json(Message(), model), "content": [], "stop_reason": None}}),
                ("content_block_start", {"type": "content_block_start", "index": 0,
                                         "content_block": {"type": "text", "text": ""}}),
                *(("content_block_delta", {"type": "content_block_delta", "index": 0,
                                           "delta": {"type": "text_delta", "text": piece}})
                  for piece in answer.pieces),
                ("error", _error(answer.error_type, "scripted stream error"))]
            return StreamingResponse(self._events(events, 0.0), media_type="text/event-stream")
        if not body.get("stream"):
            return JSONResponse(message_json(answer, model))
        return StreamingResponse(self._events(message_events(answer, model), answer.piece_delay),
                                 media_type="text/event-stream")

    async def _events(self, events: list[tuple[str, dict[str, Any]]], delay: float) -> AsyncIterator[str]:
        finished = False
        try:
            for name, data in events:
                yield f"event: {name}\ndata: {json.dumps(data)}\n\n"
                if delay:
                    await asyncio.sleep(delay)
            finished = True
        finally:
            if not finished:
                self.disconnected()
