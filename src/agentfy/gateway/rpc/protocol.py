"""The wire format: JSON-RPC style requests and responses; errors in exactly the HTTP error shape.

Request: ``{"id": 1, "method": "agents.get", "params": {"agent": "support-bot"}}`` (``id`` an integer, a
string or absent/``null``; ``params`` an object or absent; a ``"jsonrpc"`` member is allowed and ignored).
Response: ``{"id": 1, "result": …}`` or ``{"id": 1, "error": {code, message, field, value, expected,
status}}`` — the ``error`` object of the HTTP body for the same failure (built by the same
:func:`agentfy.gateway.errors.describe`), plus the HTTP status it would have had.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from pydantic import BaseModel, ValidationError

from agentfy.errors import ApiError
from agentfy.gateway.errors import describe, invalid_request
from agentfy.store.inputs import JSON_MAX_DEPTH, json_text_too_deep, non_finite_number

MAX_MESSAGE_CHARS: Final = 64 * 1024
#: The most bytes a WebSocket frame may carry; the server refuses a larger one (close 1009) before reading it.
MAX_FRAME_BYTES: Final = 4 * MAX_MESSAGE_CHARS
#: A message's nesting may exceed a field's by the request's own structure (the message, params, a field).
MAX_MESSAGE_DEPTH: Final = JSON_MAX_DEPTH + 8
MAX_ID_CHARS: Final = 200
_MEMBERS: Final = frozenset({"id", "method", "params", "jsonrpc"})

RequestId = int | str | None
Message = dict[str, Any]
P = TypeVar("P", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class Request:
    id: RequestId
    method: str
    params: dict[str, Any]


class MalformedRequest(ApiError):
    """A message that is not a request (``invalid_request``, 400); carries its ``id`` when it had a usable one."""

    def __init__(self, message: str, *, request_id: RequestId = None, field: str | None = None) -> None:
        super().__init__(400, "invalid_request", message, field=field)
        self.request_id = request_id


def _request_id(data: dict[str, Any]) -> RequestId:
    value = data.get("id")
    if value is None or (type(value) is int) or (isinstance(value, str) and len(value) <= MAX_ID_CHARS):
        return value
    raise MalformedRequest(f"id must be an integer, a string of at most {MAX_ID_CHARS} characters, or null",
                           field="id")


def parse_request(text: str | bytes | None) -> Request:
    """``text`` as a :class:`Request`, or :class:`MalformedRequest`."""
    if not isinstance(text, str):
        raise MalformedRequest("send requests as JSON text frames")
    if len(text) > MAX_MESSAGE_CHARS:
        raise MalformedRequest(f"the message is {len(text)} characters; at most {MAX_MESSAGE_CHARS} are allowed")
    if json_text_too_deep(text, MAX_MESSAGE_DEPTH):
        raise MalformedRequest(f"the message is nested deeper than {MAX_MESSAGE_DEPTH} levels")
    literal = non_finite_number(text)
    if literal is not None:
        raise MalformedRequest(f"the message has the number {literal[:40]}, which is not finite; expected finite "
                               "numbers")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        raise MalformedRequest("the message is not valid JSON") from None
    if not isinstance(data, dict):
        raise MalformedRequest('expected a JSON object: {"id": …, "method": "…", "params": {…}}')
    request_id = _request_id(data)
    unknown = sorted(set(data) - _MEMBERS)
    if unknown:
        raise MalformedRequest(f"unknown member {unknown[0]!r}; a request has id, method and params",
                               request_id=request_id, field=unknown[0])
    method = data.get("method")
    if not isinstance(method, str) or not method:
        raise MalformedRequest("method must be a non-empty string", request_id=request_id, field="method")
    params = data.get("params")
    if params is None:
        params = {}
    elif not isinstance(params, dict):
        raise MalformedRequest("params must be a JSON object", request_id=request_id, field="params")
    return Request(request_id, method, params)


def validate(model: type[P], params: dict[str, Any]) -> P:
    """``params`` as ``model``, or the 422 the HTTP API gives for the same body (code, field, value, expected)."""
    try:
        return model.model_validate(params)
    except ValidationError as error:
        raise invalid_request(error.errors()) from None


def result_message(request_id: RequestId, result: Any) -> Message:
    return {"id": request_id, "result": result}


def error_message(request_id: RequestId, error: BaseException) -> Message:
    """``{"id": …, "error": {<the HTTP body's error object>, "status": <the HTTP status>}}``."""
    status, body = describe(error)
    return {"id": request_id, "error": {**body["error"], "status": status}}


def encode(message: Message) -> str:
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False)
