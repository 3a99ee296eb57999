"""OpenAI's error shape, under the OpenAI-compatible routes only: ``{"error": {"message", "type", "param",
"code"}}``, so an OpenAI SDK raises its own classes (``AuthenticationError``, ``NotFoundError``, …).

Every other route keeps agentfy's shape (:mod:`agentfy.gateway.errors`).  This module only reshapes: the
status, the message and the field of an error are decided where they are for every route
(:func:`agentfy.gateway.errors.describe`, which also keeps SQL text and stack traces out), and only these are
said differently here:

* a bad, unknown or revoked key: 401, code ``invalid_api_key``;
* a body that is not what the operation takes: 400 (agentfy's 422, with its code: ``invalid_input``, …),
  ``param`` naming the field;
* an unknown agent, or another organization's (the same answer): 404, code ``model_not_found``;
* a model that cannot answer: 502 (``model_error``), or 504 (``timeout``) when it did not answer in time.

:class:`OpenAIRoute` applies it: a route of that class answers every error it raises — its authentication
(which runs inside the route), its body's validation, its own work — in this shape.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, Final

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from agentfy.gateway.errors import ErrorBody, describe, invalid_request
from agentfy.gateway.routing import ApiRoute
from agentfy.runtime.model import ModelError
from agentfy.runtime.providers import ModelConfigError


class OpenAIErrorDetail(BaseModel):
    message: str = Field(description="For people; never SQL text, a secret or another tenant's data.")
    type: str = Field(description="invalid_request_error (4xx) or api_error (5xx).")
    param: str | None = Field(default=None, description="The request field at fault, when one is.")
    code: str | None = Field(default=None, description="invalid_api_key, model_not_found, invalid_input, …")


class OpenAIErrorBody(BaseModel):
    """OpenAI's error shape (the OpenAI-compatible routes only)."""

    error: OpenAIErrorDetail


class OpenAIError(Exception):
    """An error these routes raise themselves, already in OpenAI's terms."""

    def __init__(self, status: int, message: str, *, code: str | None, param: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.param = param


def model_not_found(model: str) -> OpenAIError:
    """The one 404 of a ``model`` naming no agent of the caller's organization (missing, deleted, malformed or
    another organization's: the same words, so the answer never says which)."""
    return OpenAIError(404, f"The model {model!r} does not exist or you do not have access to it.",
                       code="model_not_found", param="model")


def bad_messages(message: str) -> OpenAIError:
    return OpenAIError(400, message, code="invalid_input", param="messages")


#: agentfy's codes said as OpenAI's, where an OpenAI client expects its own.
_CODES: Final = {"unauthorized": "invalid_api_key", "revoked": "invalid_api_key"}


def model_failure(error: ModelError | ModelConfigError) -> OpenAIError:
    """502 for a model that could not answer (or an agent whose model configuration is unusable); 504 when it
    did not answer in time.  The message names the model's server, never its credential."""
    if isinstance(error, ModelError) and error.timed_out:
        return OpenAIError(504, str(error), code="timeout")
    return OpenAIError(502, str(error), code="model_error")


def shaped(error: BaseException) -> tuple[int, dict[str, Any]]:
    """``(status, body)`` of any exception, in OpenAI's shape (see the module docstring)."""
    if isinstance(error, ModelError | ModelConfigError):
        error = model_failure(error)
    if isinstance(error, OpenAIError):
        status, code, message, param = error.status, error.code, error.message, error.param
    else:
        if isinstance(error, RequestValidationError):
            error = invalid_request(error.errors())
        status, body = describe(error)
        detail = body["error"]
        code = _CODES.get(detail["code"], detail["code"])
        message, param = detail["message"], detail.get("field")
        if status == 422:  # OpenAI's status for a body that is not what the operation takes
            status = 400
    kind = "api_error" if status >= 500 else "invalid_request_error"
    return status, {"error": {"message": message, "type": kind, "param": param, "code": code}}


def response_of(error: BaseException) -> JSONResponse:
    status, body = shaped(error)
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse(body, status_code=status, headers=headers)


class OpenAIRoute(ApiRoute):
    """A route whose errors are in OpenAI's shape: FastAPI solves a route's dependencies (authentication), reads
    its body and runs it inside the handler this wraps, so every error of the operation passes here."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()

        async def handle_openai(request: Request) -> Response:
            try:
                return await handle(request)
            except Exception as error:  # every error of the operation, shaped (describe logs the unexpected)
                return response_of(error)

        return handle_openai


def _documented(description: str) -> dict[str, Any]:
    return {"model": OpenAIErrorBody, "description": description}


#: The responses of every OpenAI-compatible operation (they replace agentfy's :data:`~agentfy.gateway.errors.
#: ERROR_RESPONSES`; a body too large is refused before any route, in agentfy's shape).
ERROR_RESPONSES: Final[dict[int | str, dict[str, Any]]] = {
    400: _documented("the body is not what the operation takes (param names the field)"),
    401: _documented("no, bad or revoked API key (code invalid_api_key)"),
    403: _documented("the key may not do this (a key that acts as nobody cannot converse)"),
    404: _documented("no such agent in the caller's organization (code model_not_found)"),
    413: {"model": ErrorBody, "description": "too large (refused before the route, in agentfy's error shape)"},
    500: _documented("an unexpected failure (no details are given)"),
    503: _documented("the database is unavailable for now; retry later"),
}
#: Also for the operations that run a model.
MODEL_ERROR_RESPONSES: Final[dict[int | str, dict[str, Any]]] = {
    **ERROR_RESPONSES,
    502: _documented("the agent's model could not answer (code model_error)"),
    504: _documented("the agent's model did not answer in time (code timeout)"),
}

