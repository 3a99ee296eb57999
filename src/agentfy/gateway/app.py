"""The FastAPI application: ``create_app(db)``, the request principal, health, and the routers.

Every route gets its principal from the API key (``Depends(principal)``), binds the request context from
it, and works in the principal's tenant scope; nothing in a request can choose the tenant.
"""

from __future__ import annotations

import os
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Header, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from agentfy import __version__
from agentfy.agents.router import Router
from agentfy.gateway import errors
from agentfy.gateway.auth import SIGNED_CONTEXT_PREFIX, Principal, bearer, principal_from_key, verify_context
from agentfy.identity.context import set_for_task
from agentfy.store.db import Database
from agentfy.store.migrate import is_at_head


@dataclass
class GatewayState:
    """What the routes share: the database, the router cache, the signing secret, in-process workers."""

    db: Database
    router: Router
    signing_secret: bytes
    run_workers: bool = False
    #: Run short indexed look-ups (the API key, a cache miss) on the event loop instead of a worker thread:
    #: on embedded SQLite they take tens of microseconds, less than the thread hop itself.  Never on
    #: PostgreSQL, where a round trip would stall every other request on the loop.
    inline_lookups: bool = False
    stop_workers: threading.Event = field(default_factory=threading.Event)
    worker_threads: list[threading.Thread] = field(default_factory=list)


def state(request: Request) -> GatewayState:
    gateway: GatewayState = request.app.state.gateway
    return gateway


def lookup_principal(gateway: GatewayState, token: str) -> Principal:
    """The principal of a bearer credential (an API key or a signed context), or 401."""
    with gateway.db.transaction(write=False) as tx:
        if token.startswith(SIGNED_CONTEXT_PREFIX):
            return verify_context(tx, gateway.signing_secret, token)
        return principal_from_key(tx, token)


async def principal(request: Request, authorization: Annotated[str | None, Header()] = None) -> Principal:
    """The request's principal from its bearer credential (401 without one), set as the request context.

    Async so that the context is set in the request's own task (a sync dependency runs in a worker thread
    whose context the endpoint never sees); the database look-up itself runs in the thread pool.
    """
    gateway = state(request)
    token = bearer(authorization)
    if gateway.inline_lookups:
        who = lookup_principal(gateway, token)
    else:
        who = await run_in_threadpool(lookup_principal, gateway, token)
    set_for_task(who.context())
    return who


Authenticated = Annotated[Principal, Depends(principal)]
Gateway = Annotated[GatewayState, Depends(state)]


def _start_workers(gateway: GatewayState) -> None:
    from agentfy.events.consolidation import handlers  # noqa: PLC0415 - only when workers run in-process
    from agentfy.events.runner import start_workers  # noqa: PLC0415

    gateway.worker_threads.extend(start_workers(gateway.db, handlers(), stop=gateway.stop_workers))


def create_app(db: Database, *, signing_secret: bytes | None = None, run_workers: bool = False) -> FastAPI:
    """The application on ``db``; ``run_workers`` runs the consolidation workers in a thread of this process."""
    gateway = GatewayState(db, Router(db), signing_secret or os.urandom(32), run_workers,
                           inline_lookups=db.dialect == "sqlite")

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if gateway.run_workers:
            _start_workers(gateway)
        yield
        gateway.stop_workers.set()
        for thread in gateway.worker_threads:
            thread.join(timeout=5)

    app = FastAPI(title="agentfy", version=__version__, lifespan=lifespan,
                  description="Identity core of the agentfy platform. Every ID parameter is shown with its "
                              "anchored pattern; errors share one shape: {error: {code, message, field, value, "
                              "expected}}.")
    app.state.gateway = gateway
    errors.install(app)

    @app.get("/healthz", tags=["health"])
    def healthz() -> dict[str, str]:
        """The process is up."""
        return {"status": "ok"}

    @app.get("/readyz", tags=["health"], responses={503: {"description": "not ready"}})
    def readyz(request: Request) -> Any:
        """The database is reachable and its schema is at the newest migration."""
        try:
            ready = is_at_head(state(request).db)
        except Exception:
            ready = False
        if not ready:
            return JSONResponse(errors.error_body("not_ready", "the database is unreachable or not migrated"),
                                status_code=503)
        return {"status": "ready"}

    from agentfy.gateway.routes import register  # noqa: PLC0415 - the routes import this module's dependencies

    register(app)
    return app
