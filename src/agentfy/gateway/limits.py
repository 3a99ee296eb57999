"""Bounded work per request, before any route runs: body size, JSON nesting, and the URL's text.

An ASGI middleware (outermost, so nothing reads a byte it would refuse):

* **Body size**, enforced while reading: a ``Content-Length`` over the limit is 413 before a byte of the body
  is read; a body sent without one (chunked) is counted as it arrives and refused (413) at the first byte over.
  The limit is the ``body_max_bytes`` setting (default :data:`BODY_MAX_BYTES`), for the vault's multipart
  upload :data:`UPLOAD_MAX_BYTES` (its files may total 50 MiB), and for the chat platforms' webhooks
  (``/v1/channels/…``, reached without an API key) the smaller :data:`WEBHOOK_MAX_BYTES`.
* **JSON bodies**: one that is not UTF-8, is nested deeper than the input policy allows, or has a number that is
  not finite (``NaN``, ``Infinity``, ``1e400``: not JSON, though Python's reader takes them) is 422 *before*
  the route parses it (a parser recurses; thousands of levels would fail in it, or cost long).
* **The URL**: a NUL character in the path or in a query parameter is 422 naming it (PostgreSQL cannot store
  NUL, SQLite can: refusing it here keeps both engines equal and no driver error becomes a 500).

Every refusal is the one error body.  WebSocket frames are bounded by the server (``ws_max_size``) and by the
protocol (:mod:`agentfy.gateway.rpc.protocol`).
"""

from __future__ import annotations

import json
from typing import Any, Final
from urllib.parse import parse_qsl

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentfy.gateway.errors import error_body
from agentfy.store.inputs import JSON_MAX_DEPTH, json_text_too_deep, non_finite_number

#: Any JSON request body: far above a real batch, far below what would hurt a server.
BODY_MAX_BYTES: Final = 4 * 1024 * 1024
#: The vault's multipart upload: one file at most, and all of a request's files together at most.
UPLOAD_FILE_MAX_BYTES: Final = 10 * 1024 * 1024
UPLOAD_FILES_MAX_BYTES: Final = 50 * 1024 * 1024
#: ... and its whole body: the files and the form around them.
UPLOAD_MAX_BYTES: Final = UPLOAD_FILES_MAX_BYTES + 1024 * 1024
#: A body's nesting may exceed a field's by the request's own structure (the body, a list of rows, a row).
BODY_MAX_DEPTH: Final = JSON_MAX_DEPTH + 8
_UPLOAD_PATHS: Final = frozenset({"/v1/vault/documents"})
#: A chat platform's webhook body (a Telegram update, a Discord interaction): a few KiB; anybody can send one.
WEBHOOK_MAX_BYTES: Final = 256 * 1024
_WEBHOOK_PREFIX: Final = "/v1/channels/"
#: Methods whose body no route reads (passed through untouched: the hot read path pays nothing).
_BODYLESS: Final = frozenset({"GET", "HEAD", "OPTIONS"})

def body_limit(method: str, path: str, configured: int = BODY_MAX_BYTES) -> int:
    """The most bytes a request's body may have: the upload limit for the vault's upload, else
    ``configured`` (the ``body_max_bytes`` setting)."""
    if method == "POST" and path in _UPLOAD_PATHS:
        return UPLOAD_MAX_BYTES
    if path.startswith(_WEBHOOK_PREFIX):
        return WEBHOOK_MAX_BYTES
    return configured


async def _refuse(send: Send, status: int, code: str, message: str, **details: Any) -> None:
    body = json.dumps(error_body(code, message, **details), ensure_ascii=False).encode("utf-8")
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


def _url_problem(scope: Scope) -> tuple[str, str] | None:
    """``(field, value)`` of the first NUL in the path or a query parameter."""
    path = scope.get("path", "")
    if "\x00" in path:
        return "path", path
    query = scope.get("query_string", b"").decode("latin-1")
    for name, value in parse_qsl(query, keep_blank_values=True):
        if "\x00" in name or "\x00" in value:
            return name.replace("\x00", "\\x00"), value
    return None


def _json_body_problem(body: bytes) -> tuple[str, str | None] | None:
    """Why a JSON body cannot be read, and the offending value (not UTF-8, as JSON must be; nested too deep; a
    number that is not finite), or ``None``."""
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as error:
        return f"the JSON body is not UTF-8 text (a bad byte at position {error.start})", None
    if json_text_too_deep(body, BODY_MAX_DEPTH):
        return f"the JSON body is nested deeper than {BODY_MAX_DEPTH} levels", None
    literal = non_finite_number(body)
    if literal is not None:
        return f"the JSON body has the number {literal[:40]}, which is not finite; expected finite numbers", literal
    return None


class InputLimits:
    """The middleware (see the module docstring)."""

    def __init__(self, app: ASGIApp, body_max_bytes: int = BODY_MAX_BYTES) -> None:
        self.app = app
        self.body_max_bytes = body_max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        problem = _url_problem(scope) if "\x00" in scope["path"] or b"%00" in scope["query_string"] else None
        if problem is not None:
            field, value = problem
            await _refuse(send, 422, "invalid_input", f"{field} contains a NUL character", field=field,
                          value=value)
            return
        if scope["method"] in _BODYLESS:
            await self.app(scope, receive, send)
            return
        limit = body_limit(scope["method"], scope["path"], self.body_max_bytes)
        headers = dict(scope.get("headers") or ())
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await _refuse(send, 413, "payload_too_large", f"the body is {int(declared)} bytes; at most {limit} are "
                          "allowed")
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await _refuse(send, 413, "payload_too_large", f"the body is over {limit} bytes, the most allowed")
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if b"json" in headers.get(b"content-type", b""):
            unreadable = _json_body_problem(body)
            if unreadable is not None:
                why, literal = unreadable
                await _refuse(send, 422, "invalid_input", why, field="body", value=literal)
                return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # the disconnect, when the client goes

        await self.app(scope, replay, send)
