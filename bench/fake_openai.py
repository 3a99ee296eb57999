"""A tiny OpenAI-compatible upstream for benchmarks: ``POST /v1/chat/completions`` on 127.0.0.1, answering a
fixed reply at once — streamed as ``chat.completion.chunk`` events when the body says ``stream: true``, else as
one ``chat.completion`` — with usage.  A raw ASGI app (no framework), so its own cost is as small as it gets.
Benchmarks do not import tests; this is theirs.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, Final

import uvicorn

from bench.gateway import free_port

REPLY_PIECES: Final = ("The ", "answer ", "is ", "forty-two.")
USAGE: Final = {"prompt_tokens": 12, "completion_tokens": 4, "total_tokens": 16}

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": "fake",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


_COMPLETION: Final = json.dumps({
    "id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": "fake",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "".join(REPLY_PIECES)},
                 "finish_reason": "stop"}], "usage": USAGE}).encode()


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    if not json.loads(body or b"{}").get("stream"):
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": _COMPLETION})
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
    await send({"type": "http.response.body", "body": _chunk({"role": "assistant", "content": REPLY_PIECES[0]}),
                "more_body": True})
    for piece in REPLY_PIECES[1:]:
        await send({"type": "http.response.body", "body": _chunk({"content": piece}), "more_body": True})
    await send({"type": "http.response.body", "body": _chunk({}, "stop") + b"data: [DONE]\n\n"})


@contextmanager
def serving() -> Iterator[str]:
    """The fake upstream on a free port, in a thread of this process, for the ``with`` block: its ``/v1`` URL."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                           access_log=False, lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the fake OpenAI upstream did not start")
            time.sleep(0.02)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
