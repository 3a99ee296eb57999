"""A streamed API answer relayed as it comes: the console's way to show an agent's reply while it is written.

:class:`~agentfy.gateway.console.api.ConsoleApi` calls the API over httpx's ASGI transport, which hands back a
response only once the application has finished it — right for JSON, useless for ``text/event-stream``.  So
:func:`open_stream` calls the gateway's ASGI application itself, as the WebSocket bridge does: an HTTP scope
for ``POST <path>`` with ``Authorization: Bearer <key>`` and the JSON body, a ``send`` that puts each ASGI
message on a queue, and the body's chunks yielded from that queue as soon as the application sends them.
The request goes through the whole application — its middleware, the ``/v1`` route, the bearer look-up, the
access policy, the tenant scope — exactly as any client's; the console reads nothing of what flows.

An error status (sent before the first byte of the stream) is :class:`~agentfy.gateway.console.api.ApiFailure`,
the API's error as given; a failure after the stream started is the API's own ``error`` event, passed on
unchanged.  When the browser goes away the relay tells the API's request it has disconnected (the API keeps the
run going: its reply is stored either way).  The API's request runs in a task of its own, so what it sets in
its context never leaks into the console's request.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any, Final

from starlette.types import ASGIApp, Message

from agentfy.gateway.console.api import ApiFailure, failure_of

#: The marker the relay puts on the queue once the API's application has returned (or raised).
_DONE: Final = "console.relay.done"
#: API requests whose browser went away, kept referenced until they end (the loop holds tasks weakly).
_LEFT: Final[set[asyncio.Task[None]]] = set()


async def open_stream(app: ASGIApp, api_key: str, path: str, body: Any) -> AsyncIterator[bytes]:
    """The chunks of ``POST path`` with the JSON ``body``, as ``api_key``'s holder, as the API sends them; an
    error status is :class:`ApiFailure` (raised here, before any chunk)."""
    payload = json.dumps(body).encode()
    outbox: asyncio.Queue[Message] = asyncio.Queue()
    gone = asyncio.Event()
    delivered = False

    async def receive() -> Message:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": payload, "more_body": False}
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        await outbox.put(message)

    scope: dict[str, Any] = {
        "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
        "method": "POST", "scheme": "http", "path": path, "raw_path": path.encode(), "root_path": "",
        "query_string": b"", "server": ("console", 80), "client": ("127.0.0.1", 0), "state": {},
        "headers": [(b"host", b"console"), (b"authorization", f"Bearer {api_key}".encode()),
                    (b"content-type", b"application/json"), (b"accept", b"text/event-stream"),
                    (b"content-length", str(len(payload)).encode())]}

    async def serve_api() -> None:
        try:
            # an error the application raises it has logged and answered 500 (its error middleware), or never will
            with contextlib.suppress(Exception):
                await app(scope, receive, send)
        finally:
            await outbox.put({"type": _DONE})

    api = asyncio.create_task(serve_api())
    start = await outbox.get()
    if start["type"] != "http.response.start":
        raise ApiFailure(500, "internal_error", "the API ended the request without an answer")
    status = int(start["status"])
    if status >= 400:
        content = b"".join([chunk async for chunk in _chunks(outbox)])
        raise failure_of(status, content)
    return _relay(outbox, api, gone)


async def _chunks(outbox: asyncio.Queue[Message]) -> AsyncIterator[bytes]:
    """The response body's chunks until its last one (or the application's end)."""
    while True:
        message = await outbox.get()
        if message["type"] == _DONE:
            return
        if message["type"] == "http.response.body":
            if chunk := message.get("body", b""):
                yield chunk
            if not message.get("more_body", False):
                return


async def _relay(outbox: asyncio.Queue[Message], api: asyncio.Task[None], gone: asyncio.Event
                 ) -> AsyncIterator[bytes]:
    try:
        async for chunk in _chunks(outbox):
            yield chunk
    finally:
        gone.set()  # the API's request hears a disconnect if it is still sending
        if not api.done():
            _LEFT.add(api)
            api.add_done_callback(_LEFT.discard)
