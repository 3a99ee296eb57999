"""The FastAPI application: ``create_app(db)`` builds the gateway's state, the runtime, the middleware, the
health checks and the chat channels, and mounts the ``/v1`` routes (:mod:`agentfy.gateway.routes.mount`).

What the routes depend on (the state, the principal look-up, ``Authenticated``) is in
:mod:`agentfy.gateway.deps`, below them.  This module is the gateway's top: no module of the gateway imports
it, so it imports everything it assembles at its top.
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any, Final

from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, Response
from fastapi.telemetry import TelemetryConfig

from agentfy import __version__
from agentfy.agents.router import Router
from agentfy.channels.outbound import deliver_announcement
from agentfy.channels.state import install as install_channels
from agentfy.events.consolidation import handlers
from agentfy.events.embedding import MEMORY_EMBED
from agentfy.events.runner import start_workers
from agentfy.gateway import dispatch, errors
from agentfy.gateway.console.app import mount_console
from agentfy.gateway.deps import GatewayState, gateway_of
from agentfy.gateway.limits import InputLimits
from agentfy.gateway.metrics import CONTENT_TYPE, GatewayMetrics
from agentfy.gateway.observe import RequestObservation
from agentfy.gateway.openapi import compact, declare_bearer
from agentfy.gateway.principals import PrincipalCache
from agentfy.gateway.routes.mount import register
from agentfy.gateway.rpc.broadcast import broadcaster_for
from agentfy.gateway.warm_reads import WarmAgentReads
from agentfy.keys import credentials_cipher
from agentfy.runtime.mcp.offer import McpTools
from agentfy.runtime.memory_embedder import MemoryEmbedder
from agentfy.runtime.memory_models import AgentModels, ModelCalls, ModelExtractor, ModelSummariser
from agentfy.runtime.providers import Providers
from agentfy.runtime.runner import Runtime
from agentfy.runtime.scheduler import Firing, Scheduler
from agentfy.runtime.scheduler_settings import SchedulerSettings
from agentfy.runtime.task_sweep import TaskSweep
from agentfy.settings import Settings
from agentfy.store.db import Database
from agentfy.store.migrate import is_at_head
from agentfy.store.repos.credentials import CredentialCipher
from agentfy.store.urls import sqlite_file
from agentfy.tracing import tracer_for

#: FastAPI's own OpenTelemetry spans, metrics and logs, off: the gateway observes every request itself
#: (:class:`~agentfy.gateway.observe.RequestObservation`: one span named by the route template, with the
#: tenant's and agent's IDs, and its own metrics), so the framework's would be a second span and a second
#: histogram of the same request once a tracer provider is set — and it asks the global providers whether
#: they are configured on every request.
FRAMEWORK_TELEMETRY_OFF: Final[TelemetryConfig] = {"tracing": False, "metrics": False, "logs": False,
                                                   "operation_spans": False}
#: How long start-up waits for the change feed's listening connection before serving anyway (uncached).
FEED_CONNECT_TIMEOUT_SECONDS: Final = 10.0


def _required_cipher(settings: Settings, database_url: str) -> CredentialCipher:
    """The credentials cipher the channels encrypt bot tokens with (made on first use; see ``install_channels``)."""
    cipher = credentials_cipher(settings, database_url, create=True, required=True)
    assert cipher is not None  # required: no key is CredentialKeyError
    return cipher


def _runtime(gateway: GatewayState, settings: Settings, workspace_root: Path | None) -> Runtime:
    cipher = credentials_cipher(settings, gateway.db.url, create=True, required=False)
    root = workspace_root or settings.workspace_root or default_workspace_root(gateway.db)
    return Runtime(gateway.db, gateway.router, workspace_root=root,
                   providers=Providers(cipher=cipher, policy=settings.runtime.call_policy()),
                   events=broadcaster_for(gateway.db), settings=settings.runtime,
                   mcp=McpTools(settings.mcp, cipher=cipher))


def _start_workers(gateway: GatewayState, settings: Settings) -> None:
    """The event workers; their summariser and extractor use each agent's own model when it has one."""
    cipher = credentials_cipher(settings, gateway.db.url, create=True, required=False)
    gateway.model_calls = ModelCalls(Providers(cipher=cipher, policy=settings.runtime.call_policy()))
    models = AgentModels(gateway.db, gateway.model_calls)
    pipeline = {**handlers(settings=settings.consolidation, bus=settings.events, summariser=ModelSummariser(models),
                           extractor=ModelExtractor(models)),
                MEMORY_EMBED: MemoryEmbedder(gateway.model_calls, bus=settings.events)}
    gateway.worker_threads.extend(start_workers(gateway.db, pipeline, stop=gateway.stop_workers,
                                                settings=settings.events))


def _stop_workers(gateway: GatewayState) -> None:
    """Stop the event workers (what they finished is written), then their model calls' loop."""
    gateway.stop_workers.set()
    for thread in gateway.worker_threads:
        thread.join(timeout=5)
    if gateway.model_calls is not None:
        gateway.model_calls.close()


@asynccontextmanager
async def _cron_scheduler(gateway: GatewayState, settings: SchedulerSettings) -> AsyncIterator[None]:
    """The cron scheduler, with the event workers: on this event loop, beside the runtime it fires through.
    With many processes each runs one, and the claim gives every due job to exactly one of them."""
    if not gateway.run_workers or gateway.runtime is None:
        yield
        return
    stop = asyncio.Event()
    scheduler = Scheduler(gateway.db, Firing(gateway.db, gateway.runtime), settings=settings)
    task = asyncio.create_task(scheduler.run(stop))
    try:
        yield
    finally:
        stop.set()
        await task


@asynccontextmanager
async def _task_sweep(gateway: GatewayState) -> AsyncIterator[None]:
    """The team task sweep (overdue work times out), with the event workers: each process runs one, and
    each task times out once however many sweep."""
    if not gateway.run_workers:
        yield
        return
    stop = asyncio.Event()
    task = asyncio.create_task(TaskSweep(gateway.db).run(stop))
    try:
        yield
    finally:
        stop.set()
        await task


def _attach_channels(app: FastAPI, gateway: GatewayState, settings: Settings) -> None:
    """The chat channels' state (``app.state.channels``), handing every channel's messages to this process's
    runtime, and what its subagents and teammates announce later back to their chat."""
    channels = install_channels(app, gateway.db, settings.channels(), make_cipher=partial(
        _required_cipher, settings, gateway.db.url))
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


def _console_then_dispatch(app: FastAPI, settings: Settings) -> None:
    """The operator console, unless ``serve.console`` is off: mounted after the API's routes, with no middleware
    of its own on them, so no API request passes through it.  Then every route is in place, and requests are
    dispatched by the routes' literal prefixes (:mod:`agentfy.gateway.dispatch`: the framework's outcome
    without trying every route)."""
    if settings.serve.console:
        mount_console(app)
    dispatch.install(app)


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
        async with _cron_scheduler(gateway, settings.scheduler), _task_sweep(gateway):
            yield
        await app.state.channels.aclose()
        if gateway.runtime is not None:
            await gateway.runtime.providers.aclose()  # the model SDK's connections
            await gateway.runtime.mcp.aclose()  # the MCP servers' connections
            await run_in_threadpool(gateway.runtime.close)
        await run_in_threadpool(_stop_workers, gateway)
        db.changes.stop_listening()

    app = FastAPI(title="agentfy", version=__version__, lifespan=lifespan, telemetry=FRAMEWORK_TELEMETRY_OFF,
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

    _attach_channels(app, gateway, settings)
    authenticated = register(app)
    _console_then_dispatch(app, settings)

    def openapi_document() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = get_openapi(title=app.title, version=app.version, description=app.description,
                                   routes=app.routes)
            app.openapi_schema = declare_bearer(compact(document), authenticated)
        return app.openapi_schema

    app.openapi = openapi_document  # type: ignore[method-assign]
    return app

