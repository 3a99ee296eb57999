"""The FastAPI application: ``create_app(db)``, the request principal, health, and the routers.

Every ``/v1`` route authenticates its caller from the bearer credential (``call: Authenticated``), binds the
request context from it, and works in the principal's tenant scope; nothing in a request can choose the
tenant.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final

from fastapi import Depends, FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, Response

from agentfy import __version__
from agentfy.agents.router import Router
from agentfy.gateway import errors
from agentfy.gateway.auth import Principal, bearer, lookup
from agentfy.gateway.limits import InputLimits
from agentfy.gateway.metrics import CONTENT_TYPE, GatewayMetrics
from agentfy.gateway.observe import RequestObservation, TenantSlugs
from agentfy.gateway.openapi import compact, declare_bearer
from agentfy.gateway.principals import PrincipalCache
from agentfy.gateway.warm_reads import WarmAgentReads
from agentfy.identity.context import set_for_task
from agentfy.keys import credentials_cipher
from agentfy.logs import bind_log_identity
from agentfy.permissions.access import authorize
from agentfy.settings import Settings
from agentfy.store.db import Database
from agentfy.store.migrate import is_at_head
from agentfy.store.repos.agents import Agent
from agentfy.store.urls import sqlite_file
from agentfy.tracing import tracer_for

if TYPE_CHECKING:
    from agentfy.runtime.runner import Runtime

#: Where agents' workspaces live: ``$AGENTFY_WORKSPACE_ROOT``, else ``workspaces/`` beside an embedded SQLite
#: database, else ``var/workspaces``.
#: How long start-up waits for the change feed's listening connection before serving anyway (uncached).
FEED_CONNECT_TIMEOUT_SECONDS: Final = 10.0


@dataclass
class GatewayState:
    """What the routes share: the database, the router and principal caches, the signing secret, workers."""

    db: Database
    router: Router
    signing_secret: bytes
    principals: PrincipalCache
    run_workers: bool = False
    #: Run short indexed look-ups (the API key, a cache miss) on the event loop instead of a worker thread:
    #: on embedded SQLite they take tens of microseconds, less than the thread hop itself.  Never on
    #: PostgreSQL, where a round trip would stall every other request on the loop.
    inline_lookups: bool = False
    #: Agents rendered as response bodies, by ID, with the record each was rendered from
    #: (:func:`agentfy.gateway.agent_ops.rendered`).
    rendered_agents: dict[str, tuple[Agent, bytes]] = field(default_factory=dict)
    #: Organization slugs for log records (filled by principal look-ups, off the event loop).
    tenant_slugs: TenantSlugs = field(init=False)
    stop_workers: threading.Event = field(default_factory=threading.Event)
    worker_threads: list[threading.Thread] = field(default_factory=list)
    #: The agent runtime the chat routes and channels call (:mod:`agentfy.runtime.runner`); set by
    #: :func:`create_app`.
    runtime: Runtime | None = None


    def __post_init__(self) -> None:
        self.tenant_slugs = TenantSlugs(self)


def gateway_of(request: Request) -> GatewayState:
    """The gateway state of the app serving ``request``."""
    gateway: GatewayState = request.app.state.gateway
    return gateway


@dataclass(frozen=True, slots=True)
class Call:
    """An authenticated request: who makes it and the gateway serving it.

    One object, so that a route has one dependency: FastAPI solves every dependency on every request, and
    each one cost more server CPU than the whole cached look-up it guarded.
    """

    who: Principal
    gateway: GatewayState


#: Methods that only read: their credential may come from the principal cache.
READ_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS"})


def lookup_principal(gateway: GatewayState, token: str, *, fresh: bool = False,
                     allow_expired: bool = False) -> Principal:
    """The principal of a bearer credential (an API key, a team key or a signed context), or 401.

    Reads may take it from the principal cache (the change feed drops an entry within milliseconds of a
    revocation committing anywhere); ``fresh`` — every write — checks the chain in the database, so no write
    is ever made with a credential revoked a moment ago in another process.  ``allow_expired``: a signed
    context's expiry is not checked (an established WebSocket connection; see ``verify_context``)."""
    found, generation = gateway.principals.get(token, allow_expired=allow_expired)
    if found is not None and not fresh:
        return found
    with gateway.db.transaction(write=False) as tx:
        found = lookup(tx, gateway.signing_secret, token, allow_expired=allow_expired)
    gateway.principals.put(token, found, generation)
    gateway.tenant_slugs.get(found.tenant_id)  # for the request's log record, read here: off the event loop
    return found


async def authenticate(request: Request) -> Call:
    """The request's principal from its bearer credential (401 without a good one), allowed to call the
    route's operation (403 otherwise, by the one access policy), and set as the request context.

    The operation is the route's ``operation_id``: the key of its rule in :data:`agentfy.permissions.access.
    RULES`.  Async so that the context is set in the request's own task (a sync dependency runs in a worker
    thread whose context the endpoint never sees); a cached principal costs no thread hop, and a look-up runs
    in the thread pool (inline on embedded SQLite).  The header is read here, not through a FastAPI security
    class (another dependency per request); the OpenAPI document declares the bearer scheme on every
    operation that depends on this (:func:`agentfy.gateway.openapi.declare_bearer`).
    """
    gateway = gateway_of(request)
    token = bearer(request.headers.get("authorization"))
    fresh = request.method not in READ_METHODS
    who = None if fresh else gateway.principals.get(token)[0]
    if who is None:
        who = (lookup_principal(gateway, token, fresh=fresh) if gateway.inline_lookups
               else await run_in_threadpool(lambda: lookup_principal(gateway, token, fresh=fresh)))
    authorize(who, request.scope["route"].operation_id)
    set_for_task(who.context())
    bind_log_identity(tenant=gateway.tenant_slugs.peek(who.tenant_id))  # the slug: logs name tenants by it
    return Call(who, gateway)


#: The one dependency of every ``/v1`` route: ``call: Authenticated``, then ``call.who`` and ``call.gateway``.
Authenticated = Annotated[Call, Depends(authenticate)]


def _runtime(gateway: GatewayState, settings: Settings, workspace_root: Path | None) -> Runtime:
    from agentfy.gateway.rpc.broadcast import broadcaster_for  # noqa: PLC0415 - the runtime imports the gateway
    from agentfy.runtime.providers import Providers  # noqa: PLC0415
    from agentfy.runtime.runner import Runtime  # noqa: PLC0415

    cipher = credentials_cipher(settings, gateway.db.url, create=True, required=False)
    root = workspace_root or settings.workspace_root or default_workspace_root(gateway.db)
    return Runtime(gateway.db, gateway.router, workspace_root=root, providers=Providers(cipher=cipher),
                   events=broadcaster_for(gateway.db))


def _start_workers(gateway: GatewayState, settings: Settings) -> None:
    from agentfy.events.consolidation import handlers  # noqa: PLC0415 - only when workers run in-process
    from agentfy.events.runner import start_workers  # noqa: PLC0415

    pipeline = handlers(settings=settings.consolidation, bus=settings.events)
    gateway.worker_threads.extend(start_workers(gateway.db, pipeline, stop=gateway.stop_workers,
                                                settings=settings.events))


def _attach_channels(app: FastAPI, gateway: GatewayState, settings: Settings) -> None:
    """The chat channels' state (``app.state.channels``), handing every channel's messages to this process's
    runtime, and what its subagents and teammates announce later back to their chat."""
    from agentfy.channels.outbound import deliver_announcement  # noqa: PLC0415 - the channels import the gateway
    from agentfy.channels.state import install  # noqa: PLC0415

    channels = install(app, gateway.db, settings)
    runtime = gateway.runtime
    assert runtime is not None
    channels.handler = runtime
    if runtime.outbound is None:
        runtime.outbound = functools.partial(deliver_announcement, channels)


def default_workspace_root(db: Database) -> Path:
    """Where agents' workspaces live when the ``workspace_root`` setting is unset: ``workspaces/`` beside the
    SQLite file, else ``var/workspaces``."""
    database = sqlite_file(db.engine.url)
    if database is not None:
        return database.parent / "workspaces"
    return Path("var/workspaces")


def create_app(db: Database, *, signing_secret: bytes | None = None, run_workers: bool = False,
               settings: Settings | None = None, workspace_root: Path | None = None,
               runtime: Runtime | None = None) -> FastAPI:
    """The application on ``db``; ``run_workers`` runs the consolidation workers in a thread of this process.
    ``settings``: limits, caches, workers, keys, as the caller built them (:func:`agentfy.settings.load_settings`
    at its edge); when ``None``, the defaults (the app reads no configuration itself).

    The agent runtime is ``runtime`` or a new one on the gateway's router, with the offline model as every
    unconfigured agent's default, the OpenAI-compatible provider for the others (their credentials decrypted
    with the credentials key when one is configured), and run events to this database's WebSocket subscribers;
    the chat channels (Telegram, Discord, web) hand their messages to it."""
    settings = settings if settings is not None else Settings()
    gateway = GatewayState(db, Router(db, ttl=settings.cache.router_ttl_seconds), signing_secret or os.urandom(32),
                           PrincipalCache(db, ttl=settings.cache.principal_ttl_seconds), run_workers,
                           inline_lookups=db.dialect == "sqlite")
    gateway.runtime = runtime if runtime is not None else _runtime(gateway, settings, workspace_root)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if db.changes.start_listening(db.conninfo):  # PostgreSQL: other processes' changes reach this one
            await run_in_threadpool(db.changes.wait_listening, FEED_CONNECT_TIMEOUT_SECONDS)
        if gateway.run_workers:
            _start_workers(gateway, settings)
        yield
        await app.state.channels.aclose()
        if gateway.runtime is not None:
            await run_in_threadpool(gateway.runtime.close)
        gateway.stop_workers.set()
        for thread in gateway.worker_threads:
            thread.join(timeout=5)
        db.changes.stop_listening()

    app = FastAPI(title="agentfy", version=__version__, lifespan=lifespan,
                  description="Identity core of the agentfy platform. Every ID parameter is shown with its "
                              "anchored pattern; errors share one shape: {error: {code, message, field, value, "
                              "expected}}.")
    app.state.gateway = gateway
    metrics = GatewayMetrics(gateway) if settings.telemetry.metrics else None
    app.state.metrics = metrics
    app.add_middleware(WarmAgentReads, gateway=gateway)  # inside InputLimits: added first
    app.add_middleware(InputLimits, body_max_bytes=settings.body_max_bytes)
    tracer = tracer_for(settings.telemetry)
    db.tracer = tracer
    app.add_middleware(RequestObservation, gateway=gateway, metrics=metrics, tracer=tracer)  # outermost
    errors.install(app)

    @app.get("/healthz", tags=["health"])
    def healthz() -> dict[str, str]:
        """The process is up."""
        return {"status": "ok"}

    if metrics is not None:
        @app.get("/metrics", tags=["health"], include_in_schema=False)
        def prometheus_metrics() -> Response:
            """This process's metrics in the Prometheus text format (unauthenticated, like the health checks:
            route templates and counts only, no tenant's data)."""
            return Response(metrics.render(), media_type=CONTENT_TYPE)

    @app.get("/readyz", tags=["health"], responses={503: {"description": "not ready"}})
    def readyz(request: Request) -> Any:
        """The database is reachable, its schema is at the newest migration, and (PostgreSQL) this process
        hears other processes' changes."""
        database = gateway_of(request).db
        try:
            ready = is_at_head(database)
        except Exception:
            ready = False
        if not ready:
            return JSONResponse(errors.error_body("not_ready", "the database is unreachable or not migrated"),
                                status_code=503)
        if not database.changes.cacheable:
            return JSONResponse(errors.error_body("not_ready", "the change feed is not connected yet"),
                                status_code=503)
        return {"status": "ready"}

    from agentfy.gateway.routes.mount import register  # noqa: PLC0415 - the routes import this module

    _attach_channels(app, gateway, settings)
    authenticated = register(app)

    def openapi_document() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = get_openapi(title=app.title, version=app.version, description=app.description,
                                   routes=app.routes)
            app.openapi_schema = declare_bearer(compact(document), authenticated)
        return app.openapi_schema

    app.openapi = openapi_document  # type: ignore[method-assign]
    return app

