"""The ``chat.completion.chunk`` stream, as OpenAI sends it: server-sent events ``data: {...}\\n\\n``.

The order: the first event carries ``delta.role`` (with the first piece of text), then one event per piece, then
an empty delta with ``finish_reason`` ``stop``, then — when the request asked (``stream_options.include_usage``)
— a chunk with no choices and the run's usage, then ``data: [DONE]``.  A model failing after the stream began
(the status is sent by then) is an ``error`` event in OpenAI's shape, after which the stream ends.

The run is not cancelled when the client goes away: it finishes and is stored, like a run whose reply was read.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass
from typing import Any, Final

from agentfy.gateway.openai.errors import shaped
from agentfy.runtime.inbound import Reply
from agentfy.runtime.model import Usage

MEDIA_TYPE: Final = "text/event-stream"
DONE: Final = b"data: [DONE]\n\n"
#: Runs whose stream is being read: a task is held here until it is done (the event loop keeps only weak ones).
_RUNNING: Final[set[asyncio.Task[Reply]]] = set()


def event(body: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"


def usage_of(used: Usage | None) -> dict[str, int]:
    """OpenAI's ``usage`` of a run's summed tokens (zeros when no model call reported any)."""
    prompt = used.prompt_tokens if used is not None else 0
    completion = used.completion_tokens if used is not None else 0
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


@dataclass(frozen=True, slots=True)
class Chunks:
    """The fields every chunk of one completion repeats."""

    id: str
    created: int
    model: str

    def chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        return event({"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
                      "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}]})

    def usage(self, used: Usage | None) -> bytes:
        return event({"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
                      "choices": [], "usage": usage_of(used)})


class Pieces:
    """The text a run streams, queued for the response; ``None`` ends it (the run is over)."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[str | None] = asyncio.Queue()

    async def put(self, piece: str) -> None:
        if piece:
            self._queue.put_nowait(piece)

    def end(self) -> None:
        self._queue.put_nowait(None)

    async def get(self) -> str | None:
        return await self._queue.get()


async def started(run: Awaitable[Reply], pieces: Pieces) -> tuple[asyncio.Task[Reply], str | None]:
    """Start ``run`` (which sends its text to ``pieces``) and wait for its first piece of text, so that a run
    failing before it said anything raises here — before any status is sent — and is answered as an error.
    Returns the running task and the first piece (``None``: the run is over, having said nothing)."""

    async def whole() -> Reply:
        try:
            return await run
        finally:
            pieces.end()

    task = asyncio.ensure_future(whole())
    _RUNNING.add(task)
    task.add_done_callback(_RUNNING.discard)
    first = await pieces.get()
    if first is None:
        await task  # raises the run's error
    return task, first


async def stream(chunks: Chunks, task: asyncio.Task[Reply], first: str | None, pieces: Pieces, *,
                 include_usage: bool) -> AsyncIterator[bytes]:
    """The events of a started run (see the module docstring)."""
    yield chunks.chunk({"role": "assistant", "content": first or ""})
    piece = await pieces.get() if first is not None else None
    while piece is not None:
        yield chunks.chunk({"content": piece})
        piece = await pieces.get()
    try:
        reply = await task
    except Exception as error:
        yield event(shaped(error)[1])
        return
    yield chunks.chunk({}, "stop")
    if include_usage:
        yield chunks.usage(reply.usage)
    yield DONE
