"""The console's only way to data: the gateway's own JSON API, called in-process with the signed-in key.

Every screen asks :class:`ConsoleApi` for what it shows and for every change it makes, exactly as any client
would: the request goes through the whole application (its middleware, the ``/v1`` route, the bearer
look-up, the one access policy, the route's tenant scope), over an ASGI transport instead of a socket.  So the
console has no authorization and no query of its own; what the API refuses, the console shows as the API's
error (:class:`ApiFailure`: its status, code and message).

Each call runs in a task of its own, so what the API's request sets in its context (the request's identity,
the log fields) never leaks into the console's request that made it.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Final
from urllib.parse import quote

import httpx
from starlette.types import ASGIApp

#: The base URL of in-process requests (never resolved: the transport hands the request to the app).
BASE_URL: Final = "http://console"
#: An agent's turn (the chat route) may take as long as its model; the API bounds it, not the console.
TIMEOUT_SECONDS: Final = 600.0


class ApiFailure(Exception):
    """The API answered an error: ``status``, and its body's ``error.code``, ``error.message`` and, when it
    names them, the ``field`` and the ``value`` it refused."""

    def __init__(self, status: int, code: str, message: str, *, field: str | None = None,
                 value: object = None) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message, self.field, self.value = status, code, message, field, value


def segment(value: str) -> str:
    """``value`` as one path segment (IDs and keys are checked by the API; nothing here normalises them)."""
    return quote(value, safe="")


def failure_of(status: int, content: bytes, reason: str = "") -> ApiFailure:
    """The :class:`ApiFailure` of an error answer: ``status`` and its body (the API's error shape)."""
    try:
        error = json.loads(content)["error"]
        field = error.get("field")
        return ApiFailure(status, str(error["code"]), str(error["message"]),
                          field=None if field is None else str(field), value=error.get("value"))
    except (ValueError, KeyError, TypeError):
        return ApiFailure(status, "error", reason or "the API gave no error body")


def _failure(response: httpx.Response) -> ApiFailure:
    return failure_of(response.status_code, response.content, response.reason_phrase)


class ConsoleApi:
    """The JSON API of ``app`` as the holder of ``api_key``."""

    def __init__(self, app: ASGIApp, api_key: str) -> None:
        self._app = app
        self._headers = {"authorization": f"Bearer {api_key}"}

    async def call(self, method: str, path: str, *, json: Any = None,
                   params: dict[str, str] | None = None) -> Any:
        """The decoded JSON answer of ``method /v1{path}`` (``None`` for 204), or :class:`ApiFailure`."""
        response = await asyncio.create_task(self._send(method, path, json=json, params=params))
        if response.status_code >= 400:
            raise _failure(response)
        return None if response.status_code == 204 or not response.content else response.json()

    async def _send(self, method: str, path: str, *, json: Any, params: dict[str, str] | None) -> httpx.Response:
        transport = httpx.ASGITransport(app=self._app)
        async with httpx.AsyncClient(transport=transport, base_url=BASE_URL, timeout=TIMEOUT_SECONDS) as client:
            return await client.request(method, f"/v1{path}", json=json, params=params, headers=self._headers)

    async def get(self, path: str, **params: str | None) -> Any:
        return await self.call("GET", path, params={k: v for k, v in params.items() if v is not None})

    async def post(self, path: str, body: Any = None) -> Any:
        return await self.call("POST", path, json=body)

    async def patch(self, path: str, body: Any) -> Any:
        return await self.call("PATCH", path, json=body)

    async def delete(self, path: str) -> Any:
        return await self.call("DELETE", path)
