"""The error contract: one JSON shape for every HTTP and WebSocket error.

``{"error": {"code": "...", "message": "...", "field": ..., "value": ..., "expected": ...}}`` — a stable
code, a human message, and for ID errors the field, the value and the expected format.  A malformed ID or
key: 422.  Unknown, deleted or another tenant's: 404, with the same body either way.  A duplicate: 409.
No or bad key: 401; role too low: 403.  The database unavailable for now: 503.  Never SQL text, a stack trace
or another tenant's data: anything unexpected is a 500 with a generic message (the cause goes to the log only).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Final

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from agentfy.errors import ApiError
from agentfy.identity import InvalidAgentKeyError, InvalidIdError
from agentfy.identity.keys import InvalidTenantSlugError
from agentfy.permissions.access import AccessDenied
from agentfy.store.errors import ConflictError, InvalidInputError, NotFoundError, StoreError, UnavailableError
from agentfy.store.inputs import safe_text, shown

logger: Final = logging.getLogger("agentfy.gateway")


class ErrorDetail(BaseModel):
    code: str = Field(description="Stable machine-readable code, e.g. invalid_id, not_found, conflict.")
    message: str = Field(description="For people; never SQL text or another tenant's data.")
    field: str | None = None
    value: Any = None
    expected: str | None = None
    status: int | None = Field(default=None, description="WebSocket errors only: the HTTP status it matches.")


class ErrorBody(BaseModel):
    """The one error shape of the HTTP and WebSocket API."""

    error: ErrorDetail


#: Documented on every /v1 route, so OpenAPI (and schemathesis) know the error contract.
ERROR_RESPONSES: Final[dict[int | str, dict[str, Any]]] = {
    status: {"model": ErrorBody, "description": description}
    for status, description in ((401, "no or bad API key"), (403, "the key's role is too low"),
                                (404, "unknown, deleted, or another organization's"),
                                (409, "a duplicate (agent_key, slug, path, …)"),
                                (413, "too large"),
                                (422, "a malformed ID or key, or another invalid field"),
                                (500, "an unexpected failure (no details are given)"),
                                (503, "the database is unavailable for now (unreachable, busy, or the connection "
                                      "was lost mid-request); retry later"))
}


#: The longest message an error carries (a message quoting input stays bounded whatever the input).
MESSAGE_MAX_CHARS: Final = 1000


#: Fields whose value is a secret (a credential, a bot token): an error about one never echoes the value, whoever
#: raised it (the request's validation, a route, the store).  Matched on the field's last name
#: (``secret``, ``channels[0].bot_token``).
SECRET_FIELDS: Final = frozenset({"secret", "secret_token", "bot_token", "api_key", "token", "password"})


def is_secret_field(field: object) -> bool:
    """Whether ``field`` (a field path as an error names it) holds a secret: see :data:`SECRET_FIELDS`."""
    return isinstance(field, str) and field.rsplit(".", 1)[-1].split("[", 1)[0] in SECRET_FIELDS


def error_body(code: str, message: str, **details: Any) -> dict[str, Any]:
    """The one error body.  It can always be sent, whatever input it quotes: the echoed ``value`` is truncated
    to 200 characters and a lone surrogate anywhere (value, field, message) is escaped.  The value of a secret
    field (:data:`SECRET_FIELDS`) is never echoed: this is the one place every error body is made."""
    body: dict[str, Any] = {"code": code, "message": safe_text(message[:MESSAGE_MAX_CHARS])}
    secret = is_secret_field(details.get("field"))
    for name, detail in details.items():
        if name == "value" and secret:
            continue
        if name == "value":
            echoed = shown(detail)
        elif isinstance(detail, str):
            echoed = safe_text(detail[:MESSAGE_MAX_CHARS])
        else:
            echoed = detail
        if echoed is not None:
            body[name] = echoed
    return {"error": body}


#: Where a request-validation error says a value came from: not part of the field's name.
_VALUE_SOURCES: Final = frozenset({"body", "query", "path", "header", "form", "cookie"})


def invalid_request(errors: Sequence[Mapping[str, Any]]) -> ApiError:
    """The 422 for a request that failed model validation, HTTP body or WebSocket ``params`` alike, so a client
    gets the same code, field, value and expected format from either API.

    Built from the first error: the field as a client writes it (``config.tools[0]``, without the HTTP
    source such as ``body``), the offending value when it is a scalar (a nested object is not echoed),
    ``invalid_id`` when an ID failed its format and ``invalid_input`` otherwise.
    """
    first: Mapping[str, Any] = errors[0] if errors else {}
    location = list(first.get("loc", ()))
    if location and location[0] in _VALUE_SOURCES:
        location = location[1:]
    field = "".join(f"[{part}]" if isinstance(part, int) else (f".{part}" if i else str(part))
                    for i, part in enumerate(location))
    value = first.get("input")
    code = "invalid_id" if first.get("type") == "invalid_id" else "invalid_input"
    return ApiError(422, code, str(first.get("msg", "invalid request")), field=field or None,
                    value=value if isinstance(value, str | int | float) else None,
                    expected=(first.get("ctx") or {}).get("expected"))


@contextmanager
def fields_as_sent(**sent: str) -> Iterator[None]:
    """Errors raised inside name the request's fields, not the repository's parameters.

    A repository names what it was given (``user_id_scope``, ``target_agent_id``); a route that passes it a
    request field under another name says so here (``fields_as_sent(user_id_scope="user_id")``), so the client
    reads back the field it sent, as everywhere else."""
    try:
        yield
    except (InvalidInputError, ConflictError) as error:
        field = sent.get(error.field or "")
        if field is None:
            raise
        message = str(error)
        own = f"invalid {error.field} "
        renamed = type(error)(f"invalid {field} {message[len(own):]}" if message.startswith(own) else message,
                              field=field, value=error.value)
        if isinstance(error, InvalidInputError) and isinstance(renamed, InvalidInputError):
            renamed.expected = error.expected
        raise renamed from error


def describe(error: BaseException) -> tuple[int, dict[str, Any]]:
    """``(status, body)`` for any exception, by the contract above."""
    if isinstance(error, ApiError):
        return error.status, error_body(error.code, error.message, **error.details)
    if isinstance(error, AccessDenied):
        return error.status, error_body("forbidden" if error.status == 403 else "not_found", error.message)
    if isinstance(error, InvalidIdError):
        value = error.value if isinstance(error.value, str) else None
        return 422, error_body("invalid_id", str(error), field=error.field, value=value, expected=error.expected)
    if isinstance(error, InvalidAgentKeyError):
        value = error.value if isinstance(error.value, str) else None
        return 422, error_body("invalid_agent_key", str(error), field=error.field, value=value,
                               expected="an agent ID or a lower-case agent_key slug")
    if isinstance(error, InvalidTenantSlugError):
        return 422, error_body("invalid_slug", str(error), field=error.field)
    if isinstance(error, InvalidInputError):
        return 422, error_body("invalid_input", str(error), field=error.field, value=error.value,
                               expected=error.expected)
    if isinstance(error, NotFoundError):
        return 404, error_body("not_found", f"{error.entity} not found", field=error.field,
                               value=error.ref if isinstance(error.ref, str) else None)
    if isinstance(error, ConflictError):
        value = error.value if isinstance(error.value, str) else None
        return 409, error_body("conflict", str(error), field=error.field, value=value)
    if isinstance(error, UnavailableError):
        logger.warning("gateway.database_unavailable", exc_info=error)
        return 503, error_body("unavailable", str(error))
    if isinstance(error, StoreError):
        logger.error("gateway.store_error", exc_info=error)
        return 500, error_body("internal_error", "the request could not be completed")
    logger.error("gateway.unexpected_error", exc_info=error)
    return 500, error_body("internal_error", "the request could not be completed")


#: The methods a 405's ``Allow`` can name (what the API's routes use, and HEAD with GET).
_METHODS: Final = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def allowed_methods(request: Request) -> str:
    """The ``Allow`` header of a 405: every method some route of the path takes.

    The framework names only the methods of the first route whose path matched, while several routes may share a
    path (``GET`` and ``POST /v1/agents``); HTTP requires all of them.  Each method is tried against the app's
    routes as the router itself would match it (only on a 405, so the cost is the error's)."""
    routes = request.app.router.routes
    return ", ".join(method for method in _METHODS
                     if any(route.matches({**request.scope, "method": method})[0] is Match.FULL for route in routes))


def install(app: FastAPI) -> None:
    """Route every error through :func:`describe`."""

    async def handle(request: Request, error: Exception) -> JSONResponse:
        status, body = describe(error)
        return JSONResponse(body, status_code=status)

    async def handle_validation(request: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, RequestValidationError)
        status, body = describe(invalid_request(error.errors()))
        return JSONResponse(body, status_code=status)

    async def handle_http(request: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, StarletteHTTPException)
        if error.status_code == 400:
            # The framework could not read the body (a broken multipart form, say): like any other input that
            # is not what the operation takes, 422 naming the body and what was expected.
            expected = request.headers.get("content-type", "").split(";", 1)[0] or "a body the operation takes"
            return JSONResponse(error_body("invalid_input", f"the request body could not be read: {error.detail}",
                                           field="body", expected=f"a well-formed {expected}"), status_code=422)
        code = {404: "not_found", 405: "method_not_allowed", 401: "unauthorized", 403: "forbidden"}.get(
            error.status_code, "http_error")
        # The framework's headers stay: a 405 must say which methods the path has (``Allow``), a 401 how to
        # authenticate (``WWW-Authenticate``).
        headers = dict(error.headers or {})
        if error.status_code == 405:
            headers["Allow"] = allowed_methods(request) or headers.get("Allow", "")
        return JSONResponse(error_body(code, str(error.detail)), status_code=error.status_code, headers=headers)

    app.add_exception_handler(RequestValidationError, handle_validation)
    app.add_exception_handler(StarletteHTTPException, handle_http)
    for known in (ApiError, AccessDenied, InvalidIdError, InvalidAgentKeyError, InvalidTenantSlugError, StoreError):
        app.add_exception_handler(known, handle)
    app.add_exception_handler(Exception, handle)  # the 500 of last resort (Starlette's server-error hook)
