"""Every HTTP request observed once, outermost: its request ID, one log record, and its metrics.

* **Request ID**: the client's ``X-Request-ID`` when it is a plausible one (1-128 characters of
  ``A-Za-z0-9._:-``; anything else could forge log lines or blow up a log store), else a new random one; it is
  on every log record made while the request is handled and is echoed in the response's ``X-Request-ID``.
* **The log record** (``agentfy.request``, INFO): method, route template, status, duration, and the
  identity people read in logs — the tenant's *slug* and the *agent key*, together (a key is unique only
  within its tenant; the IDs go to spans and metrics).  The slug is looked up once per tenant per process
  and forgotten when the organization changes.
* **Metrics**: requests and latency by route template (:class:`~agentfy.gateway.metrics.GatewayMetrics`).

A pure ASGI middleware, not Starlette's ``BaseHTTPMiddleware``: that runs the application in another task,
whose context (the request ID, the identity) this layer could not see.
"""

from __future__ import annotations

import logging
import re
import secrets
import threading
import time
from typing import TYPE_CHECKING, Any, Final

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, StatusCode, Tracer
from starlette.types import ASGIApp, Message, Receive, Send
from starlette.types import Scope as AsgiScope

from agentfy.identity import Scope
from agentfy.identity.context import current
from agentfy.identity.ids import OrgId
from agentfy.logs import LogIdentity, current_identity, reset_log_identity, set_log_identity
from agentfy.store.changefeed.changes import Change
from agentfy.store.repos import orgs

if TYPE_CHECKING:
    from agentfy.gateway.deps import GatewayState
    from agentfy.gateway.metrics import GatewayMetrics

log = logging.getLogger("agentfy.request")

_REQUEST_ID: Final = re.compile(r"[A-Za-z0-9._:-]{1,128}")
_HEADER: Final = b"x-request-id"
#: The route label of a request no route matched (a 404 on an unknown path): one value, not the raw path.
UNMATCHED: Final = "(unmatched)"

def request_id_of(headers: list[tuple[bytes, bytes]]) -> str:
    """The request's ID: the client's ``X-Request-ID`` if it is plausible, else a fresh random one."""
    for name, value in headers:
        if name == _HEADER:
            text = value.decode("latin-1")
            if _REQUEST_ID.fullmatch(text):
                return text
            break
    return secrets.token_hex(16)


def route_template(scope: AsgiScope, templates: dict[str, str]) -> str:
    """The matched route's path template as clients call it (bounded), or :data:`UNMATCHED`.

    A route of an included router knows its path without the ``/v1`` prefix; its ``operation_id`` (every
    API route has one) finds the full template in ``templates``."""
    named = scope.get("agentfy.route")
    if isinstance(named, str):
        return named
    route = scope.get("route")
    if route is None:
        return UNMATCHED
    operation = getattr(route, "operation_id", None)
    if operation is not None and operation in templates:
        return templates[operation]
    path = getattr(route, "path", None)
    return path if isinstance(path, str) else UNMATCHED


def operation_templates(app: Any) -> dict[str, str]:
    """``operation_id -> path template`` from the application's OpenAPI document."""
    templates: dict[str, str] = {}
    for path, operations in app.openapi().get("paths", {}).items():
        for operation in operations.values():
            if isinstance(operation, dict) and "operationId" in operation:
                templates[operation["operationId"]] = path
    return templates


class TenantSlugs:
    """Organization slugs by ID, for log records: read once per tenant, dropped when an organization changes."""

    def __init__(self, gateway: Any) -> None:
        self._gateway = gateway
        self._slugs: dict[str, str] = {}
        self._lock = threading.Lock()
        gateway.db.changes.on_stale(self._on_change)

    def peek(self, tenant_id: str) -> str | None:
        """The slug if known; never touches the database (the event loop calls this)."""
        return self._slugs.get(tenant_id)

    def get(self, tenant_id: str) -> str | None:
        """The slug, read from the database on a miss (call from a worker thread: the principal look-up
        does, so a tenant's first request already finds it)."""
        slug = self._slugs.get(tenant_id)
        if slug is not None:
            return slug
        try:
            with self._gateway.db.transaction(write=False) as tx:
                slug = orgs.get_organization(tx, Scope(OrgId(tenant_id))).slug
        except Exception:  # a deleted organization, a database hiccup: the record still goes out
            return None
        with self._lock:
            self._slugs[tenant_id] = slug
        return slug

    def _on_change(self, change: Change) -> None:
        if change.kind == "org" and change.tenant_id is not None:
            with self._lock:
                self._slugs.pop(change.tenant_id, None)


class RequestObservation:
    """The middleware (see the module docstring)."""

    def __init__(self, app: ASGIApp, gateway: GatewayState, metrics: GatewayMetrics | None,
                 tracer: Tracer | None = None) -> None:
        self.app = app
        self.tracer = tracer
        self.gateway = gateway
        self.metrics = metrics
        self.slugs = gateway.tenant_slugs
        self._templates: dict[str, str] | None = None

    async def __call__(self, scope: AsgiScope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        request_id = request_id_of(scope.get("headers") or [])
        token = set_log_identity(LogIdentity(request_id=request_id))
        status = 500
        encoded = request_id.encode("ascii")

        async def answer(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", ()), (_HEADER, encoded)]
            await send(message)

        started = time.perf_counter()
        span = None if self.tracer is None or scope["type"] != "http" else self.tracer.start_span(
            scope["method"], kind=SpanKind.SERVER, attributes={"http.request.method": scope["method"],
                                                               "agentfy.request_id": request_id})
        try:
            if span is None:
                await self.app(scope, receive, answer if scope["type"] == "http" else send)
            else:
                with trace.use_span(span, end_on_exit=False):
                    await self.app(scope, receive, answer)
        finally:
            if scope["type"] == "http":
                route = self._record(scope, status, time.perf_counter() - started)
                if span is not None:
                    self._finish(span, scope, route, status)
            reset_log_identity(token)

    @staticmethod
    def _finish(span: Span, scope: AsgiScope, route: str, status: int) -> None:
        span.update_name(f"{scope['method']} {route}")
        span.set_attribute("http.route", route)
        span.set_attribute("http.response.status_code", status)
        context = current()
        if context.tenant_id is not None:
            span.set_attribute("tenant_id", context.tenant_id)
        agent_id = current_identity().agent_id
        if agent_id is not None:
            span.set_attribute("agent_id", agent_id)
        if status >= 500:
            span.set_status(StatusCode.ERROR)
        span.end()

    def _record(self, scope: AsgiScope, status: int, seconds: float) -> str:
        if self._templates is None and "app" in scope:
            self._templates = operation_templates(scope["app"])
        route = route_template(scope, self._templates or {})
        if self.metrics is not None:
            self.metrics.observe(scope["method"], route, status, seconds)
        if not log.isEnabledFor(logging.INFO):
            return route
        tenant_id = current().tenant_id
        identity = current_identity()
        log.info("%s %s %d", scope["method"], route, status,
                 extra={"status": status, "duration_ms": round(seconds * 1000, 3), "path": scope["path"],
                        "tenant": identity.tenant or (self.slugs.peek(tenant_id) if tenant_id else None)})
        return route
