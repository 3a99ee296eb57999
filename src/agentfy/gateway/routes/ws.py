"""``GET /v1/ws``: the WebSocket endpoint — JSON-RPC style methods and pushed agent events.

Protocol (``docs/websocket.md``):

* **Authentication** before anything else: the ``Authorization: Bearer <API key or signed context>``
  header at connect, or — browsers cannot set headers — a first message ``{"method": "auth", "params":
  {"token": "…"}}`` (answered with the session's tenant and role).  A bad credential, or any other first
  message, gets an error and the close code 4401.  The principal decides the tenant; no parameter can.
* **Re-validation**: like the HTTP API, which looks the key up on every request, the credential is checked
  again before each request (a revoked API key, or a signed context whose signing epoch was bumped, gets
  a 401 error and the close 4401) and, at most every :data:`EVENT_REVALIDATE_SECONDS`, before events are
  pushed.
* **Requests** are answered one at a time, in order.  Events that were published before a response was
  ready are sent before it, so a client never sees the response to a change before an earlier event.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any, Final

import anyio
import anyio.abc
from fastapi import APIRouter, WebSocket
from fastapi.concurrency import run_in_threadpool
from starlette.types import Message as AsgiMessage
from starlette.websockets import WebSocketDisconnect

from agentfy.errors import ApiError
from agentfy.gateway.auth import Principal, bearer, unauthorized
from agentfy.gateway.deps import GatewayState, confirm_in_first_transaction, lookup_principal
from agentfy.gateway.routing import settle
from agentfy.gateway.rpc.broadcast import Broadcaster, Subscriber, broadcaster_for
from agentfy.gateway.rpc.methods import METHODS, READ_ONLY_METHODS, AuthParams, Call
from agentfy.gateway.rpc.protocol import (
    MalformedRequest,
    Message,
    RequestId,
    encode,
    error_message,
    parse_request,
    result_message,
    validate,
)
from agentfy.identity.context import use
from agentfy.permissions.access import authorize
from agentfy.store.repos import orgs

router = APIRouter()
logger: Final = logging.getLogger("agentfy.gateway.ws")

#: The close code for a connection without a valid credential (HTTP 401 in the 4000 range).
CLOSE_UNAUTHORIZED: Final = 4401
#: How long an unauthenticated connection may wait before its first message.
AUTH_TIMEOUT_SECONDS: Final = 10.0
#: How stale the credential check may be before events are pushed (requests always re-check).
EVENT_REVALIDATE_SECONDS: Final = 5.0
_SEND_FAILURES: Final = (WebSocketDisconnect, RuntimeError, OSError)


def _text(message: AsgiMessage) -> str | bytes | None:
    text = message.get("text")
    return text if text is not None else message.get("bytes")


class Session:
    """One WebSocket connection: its principal, its inbox, and the request loop."""

    def __init__(self, websocket: WebSocket, gateway: GatewayState) -> None:
        self.websocket = websocket
        self.gateway = gateway
        self.broadcaster: Broadcaster = broadcaster_for(gateway.db)
        self.subscriber: Subscriber | None = None
        self.who: Principal | None = None
        self.tenant_slug = ""
        self._token = ""
        self._validated_at = 0.0
        self._revoked = False
        self._closed = False
        self._send_lock = anyio.Lock()
        self._tasks: anyio.abc.TaskGroup | None = None

    # -- lifecycle ---------------------------------------------------------------------------------------------
    async def serve(self) -> None:
        await self.websocket.accept()
        self.subscriber = Subscriber(asyncio.get_running_loop())
        try:
            if not await self._authenticate():
                return
            async with anyio.create_task_group() as tasks:
                self._tasks = tasks
                tasks.start_soon(self._push_events)
                await self._serve_requests()
                tasks.cancel_scope.cancel()
        finally:
            self.broadcaster.unsubscribe(self.subscriber)

    async def _close(self, code: int) -> None:
        async with self._send_lock:
            if self._closed:
                return
            self._closed = True
            with contextlib.suppress(*_SEND_FAILURES):
                await self.websocket.close(code=code)

    async def _send(self, message: Message) -> None:
        """Send ``message`` after every event already waiting (so events are never overtaken); a connection
        whose credential was revoked gets no more events."""
        async with self._send_lock:
            if self._closed:
                return
            events = self.subscriber.take() if self.subscriber is not None else []
            try:
                for event in () if self._revoked else events:
                    await self.websocket.send_text(encode(event))
                await self.websocket.send_text(encode(message))
            except _SEND_FAILURES:
                self._closed = True

    # -- authentication ------------------------------------------------------------------------------------------
    async def _authenticate(self) -> bool:
        """Authenticate by header or by a first ``auth`` message; ``False`` (closed 4401) if that fails."""
        header = self.websocket.headers.get("authorization")
        request_id: RequestId = None
        try:
            if header is not None:
                token = bearer(header)
            else:
                with anyio.fail_after(AUTH_TIMEOUT_SECONDS):
                    message = await self.websocket.receive()
                if message["type"] == "websocket.disconnect":
                    return False
                try:
                    request = parse_request(_text(message))
                except MalformedRequest as malformed:
                    request_id = malformed.request_id
                    raise
                request_id = request.id
                if request.method != "auth":
                    raise unauthorized('authenticate first: connect with "Authorization: Bearer <credential>" or '
                                       'send {"method": "auth", "params": {"token": "<credential>"}}')
                token = validate(AuthParams, request.params).token
            await run_in_threadpool(self._login, token)
        except TimeoutError:
            await self._refuse(None, unauthorized(f"no credential within {AUTH_TIMEOUT_SECONDS:g} seconds"))
            return False
        except WebSocketDisconnect:
            return False
        except Exception as error:
            await self._refuse(request_id, error)
            return False
        if header is None:
            await self._send(result_message(request_id, self._session_info()))
        return True

    def _login(self, token: str) -> None:
        """Worker thread: the principal of ``token`` (checked as for HTTP, its whole chain) and its tenant slug."""
        who = lookup_principal(self.gateway, token)
        with self.gateway.db.transaction(write=False) as tx:
            slug = orgs.get_organization(tx, who.scope).slug
        self.who, self.tenant_slug, self._token = who, slug, token
        self._validated_at = time.monotonic()
        logger.info("ws.authenticated", extra={"tenant": slug, "role": who.role, "credential": who.credential})

    def _session_info(self) -> dict[str, Any]:
        assert self.who is not None
        return {"tenant_id": self.who.tenant_id, "tenant_slug": self.tenant_slug, "role": self.who.role,
                "credential": self.who.credential}

    async def _refuse(self, request_id: RequestId, error: BaseException) -> None:
        await self._send(error_message(request_id, error))
        await self._close(CLOSE_UNAUTHORIZED)

    def _revalidate(self) -> Principal:
        """Worker thread: the credential still holds — its whole chain, as on every HTTP request (the
        principal cache answers until the change feed reports a revocation, removal, demotion, deletion or
        epoch bump; a write confirms it in its own transaction, see :meth:`_invoke`) — or 401, and the
        connection is marked for closing."""
        try:
            who = lookup_principal(self.gateway, self._token, allow_expired=True)
        except ApiError as error:
            if error.status == 401:
                self._revoked = True
            raise
        self.who, self._validated_at = who, time.monotonic()
        return who

    # -- requests ------------------------------------------------------------------------------------------------
    async def _serve_requests(self) -> None:
        while not self._closed:
            message = await self.websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            await self._send(await self._answer(_text(message)))
            if self._revoked:
                await self._close(CLOSE_UNAUTHORIZED)
                return

    async def _answer(self, text: str | bytes | None) -> Message:
        request_id: RequestId = None
        try:
            request = parse_request(text)
            request_id = request.id
            if request.method == "auth":
                raise ApiError(400, "invalid_request", "the connection is already authenticated",
                               field="method", value="auth")
            if request.method not in METHODS:
                raise ApiError(404, "method_not_found", f"unknown method {request.method[:100]!r}",
                               field="method", value=request.method[:100], expected=", ".join(sorted(METHODS)))
            result = await run_in_threadpool(self._invoke, request.method, request.params)
        except MalformedRequest as malformed:
            return error_message(malformed.request_id, malformed)
        except Exception as error:
            return error_message(request_id, error)
        return result_message(request_id, result)

    def _invoke(self, method: str, params: dict[str, Any]) -> Any:
        """Worker thread: re-check the credential, apply the access policy (the same rule as the HTTP
        operation), then run the method in the principal's request context.  A write's credential is
        confirmed in the database by the first transaction the method begins (before it answers if it begins
        none), as over HTTP (:func:`agentfy.gateway.deps.confirm_in_first_transaction`): a 401 there closes
        the connection too."""
        who = self._revalidate()
        authorize(who, method)
        assert self.subscriber is not None
        call = Call(self.gateway, who, self.tenant_slug, self.subscriber)
        if method not in READ_ONLY_METHODS:  # this call's own context (a copy per call): only its transactions
            confirm_in_first_transaction(self.gateway, self._token, who, method, allow_expired=True)
        try:
            with use(who.context()):
                result = METHODS[method](call, params)
            settle()
        except ApiError as error:
            if error.status == 401:
                self._revoked = True
            raise
        return result

    # -- events --------------------------------------------------------------------------------------------------
    async def _push_events(self) -> None:
        """Send events as they arrive (re-checking a stale credential first)."""
        assert self.subscriber is not None
        while not self._closed:
            await self.subscriber.wait()
            if time.monotonic() - self._validated_at > EVENT_REVALIDATE_SECONDS:
                try:
                    await run_in_threadpool(self._revalidate)
                except Exception as error:
                    if self._revoked:
                        self.broadcaster.unsubscribe(self.subscriber)
                        await self._refuse(None, error)  # drops the waiting events
                        if self._tasks is not None:
                            self._tasks.cancel_scope.cancel()
                        return
                    logger.warning("ws.revalidation_failed", exc_info=error)
            async with self._send_lock:
                if self._closed:
                    return
                try:
                    for event in self.subscriber.take():
                        await self.websocket.send_text(encode(event))
                except _SEND_FAILURES:
                    self._closed = True


@router.websocket("/ws")
async def websocket_endpoint(websocket: WebSocket) -> None:
    """The WebSocket API (see the module docstring and ``docs/websocket.md``)."""
    gateway: GatewayState = websocket.app.state.gateway
    await Session(websocket, gateway).serve()
