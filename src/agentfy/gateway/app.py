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
from typing import Annotated, Any, Final

from fastapi import Depends, FastAPI, Request, Security
from fastapi.concurrency import run_in_threadpool
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from agentfy import __version__
from agentfy.agents.router import Router
from agentfy.gateway import errors
from agentfy.gateway.auth import Principal, bearer, lookup
from agentfy.gateway.limits import InputLimits
from agentfy.gateway.openapi import compact
from agentfy.gateway.principals import PrincipalCache
from agentfy.identity.context import set_for_task
from agentfy.permissions.access import authorize
from agentfy.store.db import Database
from agentfy.store.migrate import is_at_head

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
    stop_workers: threading.Event = field(default_factory=threading.Event)
    worker_threads: list[threading.Thread] = field(default_factory=list)


def state(request: Request) -> GatewayState:
    gateway: GatewayState = request.app.state.gateway
    return gateway


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
    return found


#: The API key or signed context, as an HTTP bearer security scheme: OpenAPI documents it (``/docs`` has an
#: Authorize button; generated clients send it as a credential, not as data).  The header itself is read by
#: :func:`principal`, which refuses anything malformed with the contract's 401.
BEARER_SCHEME: Final = HTTPBearer(auto_error=False, scheme_name="bearer",
                                  description="An API key (agfy_ok_…, agfy_tk_…) or a signed context (agfy_sc_…).")


async def principal(request: Request,
                    _credentials: Annotated[HTTPAuthorizationCredentials | None, Security(BEARER_SCHEME)]) -> Principal:
    """The request's principal from its bearer credential (401 without a good one), allowed to call the
    route's operation (403 otherwise, by the one access policy), and set as the request context.

    The operation is the route's ``operation_id``: the key of its rule in :data:`agentfy.permissions.access.
    RULES`.  Async so that the context is set in the request's own task (a sync dependency runs in a worker
    thread whose context the endpoint never sees); a cached principal costs no thread hop, and a look-up runs
    in the thread pool (inline on embedded SQLite).
    """
    gateway = state(request)
    token = bearer(request.headers.get("authorization"))
    fresh = request.method not in READ_METHODS
    who = None if fresh else gateway.principals.get(token)[0]
    if who is None:
        who = (lookup_principal(gateway, token, fresh=fresh) if gateway.inline_lookups
               else await run_in_threadpool(lambda: lookup_principal(gateway, token, fresh=fresh)))
    authorize(who, request.scope["route"].operation_id)
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
    gateway = GatewayState(db, Router(db), signing_secret or os.urandom(32), PrincipalCache(db), run_workers,
                           inline_lookups=db.dialect == "sqlite")

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if db.changes.start_listening(db.conninfo):  # PostgreSQL: other processes' changes reach this one
            await run_in_threadpool(db.changes.wait_listening, FEED_CONNECT_TIMEOUT_SECONDS)
        if gateway.run_workers:
            _start_workers(gateway)
        yield
        gateway.stop_workers.set()
        for thread in gateway.worker_threads:
            thread.join(timeout=5)
        db.changes.stop_listening()

    app = FastAPI(title="agentfy", version=__version__, lifespan=lifespan,
                  description="Identity core of the agentfy platform. Every ID parameter is shown with its "
                              "anchored pattern; errors share one shape: {error: {code, message, field, value, "
                              "expected}}.")
    app.state.gateway = gateway
    app.add_middleware(InputLimits)
    errors.install(app)

    @app.get("/healthz", tags=["health"])
    def healthz() -> dict[str, str]:
        """The process is up."""
        return {"status": "ok"}

    @app.get("/readyz", tags=["health"], responses={503: {"description": "not ready"}})
    def readyz(request: Request) -> Any:
        """The database is reachable, its schema is at the newest migration, and (PostgreSQL) this process
        hears other processes' changes."""
        database = state(request).db
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

    from agentfy.gateway.routes import register  # noqa: PLC0415 - the routes import this module's dependencies

    register(app)

    def openapi_document() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = compact(get_openapi(title=app.title, version=app.version,
                                                     description=app.description, routes=app.routes))
        return app.openapi_schema

    app.openapi = openapi_document  # type: ignore[method-assign]
    return app

