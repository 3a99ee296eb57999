"""A real, local OpenAI-compatible server for tests: ``POST /v1/chat/completions`` on a free port.

The provider under test speaks HTTP to it through the official SDK exactly as it would to a real server, so
retries, timeouts, streaming and disconnects are the real protocol, not a mocked transport.  Usage::

    with FakeOpenAI() as fake:                       # uvicorn in a thread, always stopped on exit
        fake.script(Failure(429, headers={"retry-after": "1"}),
                    Completion(text="hello there", usage=Usage(12, 3, cached_tokens=8)))
        provider = OpenAICompatibleProvider(base_url=fake.url, model="m", api_key="sk-test")
        ...
        fake.requests[-1].body["messages"]           # what the server got, in order

Each request takes the next scripted answer (:meth:`FakeOpenAI.script` appends).  A :class:`Completion` is
served as one JSON chat completion, or — when the request says ``"stream": true`` — as server-sent events
(``data: {chunk}\n\n`` … ``data: [DONE]\n\n``): one chunk per text piece, the tool calls in fragments (id
and name first, then the arguments in two pieces), then a usage chunk when the request asked for it
(``stream_options.include_usage``) and the completion has usage.  A :class:`Failure` is an HTTP error with an
OpenAI-style error body; a :class:`Raw` any JSON body.  ``delay`` makes an answer slow (a timeout test);
``piece_delay`` spaces the stream's chunks (a cancellation test, with :attr:`FakeOpenAI.disconnects`).  With
the script empty the answer is ``default`` when one was given, else HTTP 500 saying so (a test that forgot to
script fails loudly).

``POST /v1/embeddings`` answers without a script: each input's vector is a hashed bag of words (a word's slot
is a hash of the model's name and the word's *meaning*; words under three letters and words with digits
count for nothing; :attr:`FakeOpenAI.meanings` mapping words to a shared
meaning, e.g. ``{"automobile": "car"}``), so texts that share words or meanings are near and others are not,
deterministically, and another model's vectors are unrelated.  ``dimensions`` is honoured (default
:data:`EMBEDDING_DIMENSIONS`); ``usage.prompt_tokens`` counts the words.  :attr:`FakeOpenAI.embeddings_down`
makes it answer HTTP 503; :attr:`FakeOpenAI.embedding_requests` records the bodies.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from agentfy.runtime.model import Usage
from tests.helpers.local_server import ScriptedServer


@dataclass(frozen=True)
class FakeToolCall:
    """A tool call the fake model makes; ``arguments`` is sent as JSON text (the wire format)."""

    id: str
    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True)
class Completion:
    """A successful answer.  ``pieces``: how a streamed answer splits ``text`` (default: word by word, each
    keeping its trailing white space); they must join to ``text``."""

    text: str | None = None
    tool_calls: Sequence[FakeToolCall] = ()
    usage: Usage | None = None
    delay: float = 0.0
    piece_delay: float = 0.0
    pieces: Sequence[str] | None = None


@dataclass(frozen=True)
class Failure:
    """An HTTP error answer (``status`` with ``headers``, e.g. ``{"retry-after": "2"}``)."""

    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    message: str = "scripted failure"
    delay: float = 0.0


@dataclass(frozen=True)
class Raw:
    """Any JSON ``body`` with ``status``, as is (an answer that is not a chat completion)."""

    body: Any
    status: int = 200


Answer = Completion | Failure | Raw

EMBEDDING_DIMENSIONS = 256


def bag_of_words_vector(text: str, *, model: str, dimensions: int = EMBEDDING_DIMENSIONS,
                        meanings: Mapping[str, str] | None = None) -> list[float]:
    """The fake's vector of ``text`` (see the module docstring): one count per word's meaning in its slot."""
    vector = [0.0] * dimensions
    for word in re.findall(r"\w+", text.lower()):
        if len(word) < 3 or any(c.isdigit() for c in word):
            continue  # a model's vector is about the words that mean something
        meaning = (meanings or {}).get(word, word)
        slot = int.from_bytes(hashlib.sha256(f"{model}:{meaning}".encode()).digest()[:8], "big") % dimensions
        vector[slot] += 1.0
    if not any(vector):
        vector[0] = 1.0
    return vector


def _usage(usage: Usage) -> dict[str, Any]:
    out: dict[str, Any] = {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens,
                           "total_tokens": usage.prompt_tokens + usage.completion_tokens}
    if usage.cached_tokens is not None:
        out["prompt_tokens_details"] = {"cached_tokens": usage.cached_tokens}
    return out


def split_pieces(text: str) -> list[str]:
    """``text`` word by word, each piece keeping its trailing white space (how a fake streams by default)."""
    return re.findall(r"\s*\S+\s*|\s+", text) if text else []


def completion_json(answer: Completion, model: str) -> dict[str, Any]:
    """``answer`` as a non-streamed chat completion."""
    message: dict[str, Any] = {"role": "assistant", "content": answer.text}
    if answer.tool_calls:
        message["tool_calls"] = [{"id": call.id, "type": "function",
                                  "function": {"name": call.name, "arguments": json.dumps(dict(call.arguments))}}
                                 for call in answer.tool_calls]
    document: dict[str, Any] = {
        "id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "message": message,
                     "finish_reason": "tool_calls" if answer.tool_calls else "stop"}]}
    if answer.usage is not None:
        document["usage"] = _usage(answer.usage)
    return document


def completion_chunks(answer: Completion, model: str, *, include_usage: bool) -> list[dict[str, Any]]:
    """``answer`` as the chunks of a streamed chat completion (without the final ``[DONE]``)."""
    def chunk(delta: dict[str, Any] | None, finish: str | None = None) -> dict[str, Any]:
        return {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": model,
                "choices": [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]}

    chunks = [chunk({"role": "assistant", "content": ""})]
    pieces = list(answer.pieces) if answer.pieces is not None else split_pieces(answer.text or "")
    chunks.extend(chunk({"content": piece}) for piece in pieces)
    for index, call in enumerate(answer.tool_calls):
        text = json.dumps(dict(call.arguments))
        half = len(text) // 2
        chunks.append(chunk({"tool_calls": [{"index": index, "id": call.id, "type": "function",
                                             "function": {"name": call.name, "arguments": ""}}]}))
        chunks.extend(chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
                      for part in (text[:half], text[half:]))
    chunks.append(chunk({}, "tool_calls" if answer.tool_calls else "stop"))
    if include_usage and answer.usage is not None:
        chunks.append({**chunk(None), "usage": _usage(answer.usage)})
    return chunks


class FakeOpenAI(ScriptedServer[Answer]):
    """The fake server (see the module docstring; scripting and recording: :class:`~tests.helpers.local_server.
    ScriptedServer`)."""

    def __init__(self, *, default: Answer | None = None) -> None:
        app = Starlette(routes=[Route("/v1/chat/completions", self._endpoint, methods=["POST"]),
                                Route("/v1/embeddings", self._embeddings, methods=["POST"])])
        super().__init__(app, name="fake-openai", default=default)
        #: Words that mean the same for the embeddings (word -> meaning).
        self.meanings: dict[str, str] = {}
        #: The embeddings endpoint answers HTTP 503 while set.
        self.embeddings_down = False
        self.embedding_requests: list[Mapping[str, Any]] = []

    @property
    def url(self) -> str:
        """The base URL to configure (``http://127.0.0.1:<port>/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    async def _endpoint(self, request: Request) -> Response:
        body = json.loads(await request.body())
        answer = self.take(request.headers, body)
        if answer is None:
            return JSONResponse({"error": {"message": "the fake has no scripted answer", "type": "fake"}}, 500)
        if not isinstance(answer, Raw) and answer.delay:
            await asyncio.sleep(answer.delay)
        if isinstance(answer, Raw):
            return JSONResponse(answer.body, answer.status)
        if isinstance(answer, Failure):
            return JSONResponse({"error": {"message": answer.message, "type": "fake", "code": None}},
                                answer.status, headers=dict(answer.headers))
        model = str(body.get("model", "fake"))
        if not body.get("stream"):
            return JSONResponse(completion_json(answer, model))
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        return StreamingResponse(self._events(answer, model, include_usage), media_type="text/event-stream")

    async def _embeddings(self, request: Request) -> Response:
        body = json.loads(await request.body())
        self.embedding_requests.append(body)
        if self.embeddings_down:
            return JSONResponse({"error": {"message": "embeddings are down", "type": "fake", "code": None}}, 503)
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        model = str(body["model"])
        dimensions = int(body.get("dimensions") or EMBEDDING_DIMENSIONS)
        data = [{"object": "embedding", "index": i,
                 "embedding": bag_of_words_vector(text, model=model, dimensions=dimensions, meanings=self.meanings)}
                for i, text in enumerate(texts)]
        words = sum(len(re.findall(r"\w+", text)) for text in texts)
        return JSONResponse({"object": "list", "data": data, "model": model,
                             "usage": {"prompt_tokens": words, "total_tokens": words}})

    async def _events(self, answer: Completion, model: str, include_usage: bool) -> AsyncIterator[str]:
        finished = False
        try:
            for chunk in completion_chunks(answer, model, include_usage=include_usage):
                yield f"data: {json.dumps(chunk)}\n\n"
                if answer.piece_delay:
                    await asyncio.sleep(answer.piece_delay)
            yield "data: [DONE]\n\n"
            finished = True
        finally:
            if not finished:
                self.disconnected()


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A started :class:`FakeOpenAI`, stopped after the test (import it into a test module or conftest)."""
    with FakeOpenAI() as fake:
        yield fake
