"""The route class of every ``/v1`` router: a sync endpoint and its response model cost one thread hop, not two.

FastAPI runs a plain ``def`` endpoint in the thread pool, and then — because the endpoint was not a coroutine —
validates its return value against the response model in the thread pool *again*
(``fastapi.routing.serialize_response``), before serializing it on the event loop.  Each hop is a hand-off to a
worker thread and back (about 0.1 ms quiet, several times that when the process is busy); on a cached read
the second hop costs more than the read.  Validating there buys nothing: the value is a model the endpoint
just built (validated when it was made), and validating an instance of the declared model returns it as it is.

:class:`ApiRoute` wraps such an endpoint in a coroutine that runs it in the thread pool once (the same
:func:`~starlette.concurrency.run_in_threadpool` FastAPI uses, so the request's context — the caller's
identity, the log record's — is copied to the worker thread as before); FastAPI then sees a coroutine and
validates on the event loop.  After the endpoint, in the same hop, it settles the request's credential check
when no transaction of the endpoint ran it (:func:`settle`): a write's credential is confirmed by the first
transaction it begins, and one that begins none is confirmed before its answer goes out.

The endpoint's signature, name and docstring are its own (``functools.wraps``):
parameters, dependencies, the operation ID and the OpenAPI document are unchanged.  ``async def`` endpoints
only get the settling; generators (streamed answers) are left as they are.

Mounting refuses a ``/v1`` route of another class (:func:`agentfy.gateway.routes.mount.register`), so a new
router cannot silently pay the second hop.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from fastapi.routing import APIRoute
from starlette.concurrency import run_in_threadpool

from agentfy.store.db import pending_first_check


def in_one_hop(endpoint: Callable[..., Any]) -> Callable[..., Any]:
    """``endpoint`` as a coroutine running it in the thread pool, its pending credential check settled after
    it (an ``async def`` endpoint: only the settling added; generators unchanged)."""
    if not inspect.isfunction(endpoint) or inspect.isgeneratorfunction(endpoint) \
            or inspect.isasyncgenfunction(endpoint):
        return endpoint
    if inspect.iscoroutinefunction(endpoint):
        @functools.wraps(endpoint)
        async def then_settled(**values: Any) -> Any:
            result = await endpoint(**values)
            if pending_first_check() is not None:
                await run_in_threadpool(settle)
            return result

        return then_settled

    def run_and_settle(**values: Any) -> Any:
        result = endpoint(**values)
        settle()
        return result

    @functools.wraps(endpoint)
    async def run_in_a_worker(**values: Any) -> Any:
        return await run_in_threadpool(run_and_settle, **values)

    return run_in_a_worker


def settle() -> None:
    """The request's credential check, if no transaction of the endpoint ran it (it began none): a write
    request's credential is confirmed before its answer is sent, whatever the endpoint did
    (:func:`agentfy.gateway.deps.confirm_in_first_transaction`)."""
    first = pending_first_check()
    if first is not None:
        first.settle()


class ApiRoute(APIRoute):
    """An API route whose sync endpoint runs in one thread hop (see the module docstring)."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(path, in_one_hop(endpoint), **kwargs)
