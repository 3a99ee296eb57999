"""The browser's WebSocket to the gateway's own WebSocket API, joined in-process with the signed-in key.

The live-events page cannot hold the API key (the session cookie is ``HttpOnly``), so it connects to the
console (``/console/events/ws``, where the browser sends the session cookie), and the console opens a
connection to ``/v1/ws`` *inside the application* — an ASGI WebSocket scope carrying ``Authorization: Bearer
<key>`` — and passes the frames both ways unchanged.  The API authenticates the key, checks every method
against the access policy and re-checks the key while events flow, exactly as for any client; the console adds
nothing to the messages and reads none of them.  When either side closes, the other is closed with the same
code (the API's 4401 for a revoked key reaches the page).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Final

from starlette.types import ASGIApp, Message
from starlette.websockets import WebSocket, WebSocketDisconnect

API_WS_PATH: Final = "/v1/ws"


async def join(browser: WebSocket, gateway_app: ASGIApp, api_key: str) -> None:
    """Serve ``browser`` (not yet accepted) as a connection of the API's WebSocket made with ``api_key``."""
    to_api: asyncio.Queue[Message] = asyncio.Queue()
    accepted = asyncio.Event()
    await to_api.put({"type": "websocket.connect"})

    async def receive() -> Message:
        return await to_api.get()

    async def send(message: Message) -> None:
        kind = message["type"]
        if kind == "websocket.accept":
            await browser.accept()
            accepted.set()
        elif kind == "websocket.send":
            if message.get("text") is not None:
                await browser.send_text(message["text"])
            else:
                await browser.send_bytes(message.get("bytes") or b"")
        elif kind == "websocket.close":
            with contextlib.suppress(RuntimeError):  # the browser's side may be closed already
                await browser.close(code=message.get("code", 1000))

    scope: dict[str, Any] = {
        "type": "websocket", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
        "scheme": browser.url.scheme, "path": API_WS_PATH, "raw_path": API_WS_PATH.encode(), "root_path": "",
        "query_string": b"", "server": browser.scope.get("server"), "client": browser.scope.get("client"),
        "headers": [(b"host", b"console"), (b"authorization", f"Bearer {api_key}".encode())],
        "subprotocols": [], "state": {}}
    async def serve_api() -> None:
        await gateway_app(scope, receive, send)

    api = asyncio.create_task(serve_api())
    try:
        await _pump(browser, to_api, accepted, api)
    finally:
        if not api.done():
            await to_api.put({"type": "websocket.disconnect", "code": 1000})
            with contextlib.suppress(Exception):
                await asyncio.wait_for(api, timeout=5)


async def _pump(browser: WebSocket, to_api: asyncio.Queue[Message], accepted: asyncio.Event,
                api: asyncio.Task[None]) -> None:
    """The browser's frames to the API, until the browser leaves or the API's side ends."""
    waiting = asyncio.create_task(accepted.wait())
    await asyncio.wait({waiting, api}, return_when=asyncio.FIRST_COMPLETED)
    waiting.cancel()
    if not accepted.is_set():
        return
    while not api.done():
        reading = asyncio.create_task(browser.receive())
        await asyncio.wait({reading, api}, return_when=asyncio.FIRST_COMPLETED)
        if not reading.done():
            reading.cancel()
            return
        try:
            message = reading.result()
        except (WebSocketDisconnect, RuntimeError):
            return
        if message["type"] == "websocket.disconnect":
            await to_api.put({"type": "websocket.disconnect", "code": message.get("code", 1000)})
            return
        await to_api.put({"type": "websocket.receive", "text": message.get("text"), "bytes": message.get("bytes")})
