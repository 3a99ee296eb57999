"""What every route depends on: the gateway's state, the principal look-up, and the one ``Authenticated``
dependency.

A leaf below the routes and the app factory: the routes, the WebSocket methods and the middleware import
these from here, and :mod:`agentfy.gateway.app` — which builds the app and mounts the routes — imports them
too, so nothing imports the module that builds the app.

Every ``/v1`` route authenticates its caller from the bearer credential (``call: Authenticated``), binds the
request context from it, and works in the principal's tenant scope; nothing in a request can choose the
tenant.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Annotated, Final

from fastapi import Depends, Request
from fastapi.concurrency import run_in_threadpool

from agentfy.agents.router import Router
from agentfy.errors import ApiError
from agentfy.gateway.auth import Principal, bearer, lookup
from agentfy.gateway.observe import TenantSlugs
from agentfy.gateway.principals import PrincipalCache
from agentfy.identity.context import set_for_task
from agentfy.identity.roles import role_rank
from agentfy.logs import bind_log_identity
from agentfy.permissions.access import authorize
from agentfy.store.db import Database, Tx, check_first
from agentfy.store.repos.agents import Agent

if TYPE_CHECKING:
    from agentfy.runtime.memory_models import ModelCalls
    from agentfy.runtime.runner import Runtime


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
    #: :func:`agentfy.gateway.app.create_app`.
    runtime: Runtime | None = None
    #: The event loop and providers of the consolidation workers' model calls (:mod:`agentfy.runtime.memory_models`),
    #: while the workers run; closed after them.
    model_calls: ModelCalls | None = None

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


#: Methods that only read: their credential may come from the principal cache alone.
READ_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS"})


def lookup_principal(gateway: GatewayState, token: str, *, allow_expired: bool = False) -> Principal:
    """The principal of a bearer credential (an API key, a team key or a signed context), or 401.

    From the principal cache when it has it (the change feed drops an entry within milliseconds of a
    revocation committing anywhere), else checked against its whole chain in the database and cached.  A
    write does not rely on the cache alone: its credential is confirmed by its own transaction
    (:func:`confirm_in_first_transaction`), so no write is ever made with a credential revoked a moment ago in
    another process.  ``allow_expired``: a signed context's expiry is not checked (an established WebSocket
    connection; see ``verify_context``)."""
    found, generation = gateway.principals.get(token, allow_expired=allow_expired)
    if found is not None:
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
    in the thread pool (inline on embedded SQLite).  A write whose principal is cached is authorized by it
    and its credential confirmed in the database by the first transaction the request begins
    (:func:`confirm_credential`), before anything is written: one transaction per write, not two.  The header
    is read here, not through a FastAPI security class (another dependency per request); the OpenAPI document
    declares the bearer scheme on every operation that depends on this
    (:func:`agentfy.gateway.openapi.declare_bearer`).
    """
    gateway = gateway_of(request)
    token = bearer(request.headers.get("authorization"))
    operation = request.scope["route"].operation_id
    who = gateway.principals.get(token)[0]
    if who is None:
        who = (lookup_principal(gateway, token) if gateway.inline_lookups
               else await run_in_threadpool(lookup_principal, gateway, token))
    elif request.method not in READ_METHODS:
        confirm_in_first_transaction(gateway, token, who, operation)
    authorize(who, operation)
    set_for_task(who.context())
    bind_log_identity(tenant=gateway.tenant_slugs.peek(who.tenant_id))  # the slug: logs name tenants by it
    return Call(who, gateway)


def confirm_in_first_transaction(gateway: GatewayState, token: str, who: Principal, operation: str, *,
                                 allow_expired: bool = False) -> None:
    """Have the first transaction begun in the current context confirm ``token``'s cached principal ``who``
    (:func:`agentfy.store.db.check_first`): a write is then checked in its own transaction, and a unit of work
    that begins none is checked when it ends (:func:`agentfy.gateway.routing.settle`)."""
    check_first(gateway.db, lambda tx: confirm_credential(tx, gateway, token, who, operation,
                                                          allow_expired=allow_expired))


def confirm_credential(tx: Tx, gateway: GatewayState, token: str, who: Principal, operation: str, *,
                       allow_expired: bool = False) -> None:
    """``token``'s chain read in ``tx`` still gives ``who``, the principal the request was authorized as.

    No write is made with a credential revoked a moment ago in another process, before the change feed told
    this one: revoked, expired, its person removed, its organization deleted, the epoch bumped — 401, as a
    fresh look-up gives.  A role narrowed meanwhile is refused as that role would be (403); a narrowed role
    that may still call the operation is 409 ``conflict``, since the route may already have decided something
    by the wider role (nothing was written: send it again).  A role widened meanwhile goes on with the
    narrower one the request was authorized as.  ``allow_expired``: as :func:`lookup_principal`'s."""
    found = lookup(tx, gateway.signing_secret, token, allow_expired=allow_expired)
    if found == who:
        return
    authorize(found, operation)
    widened = found == replace(who, role=found.role) and role_rank(found.role) > role_rank(who.role)
    if not widened:
        raise ApiError(409, "conflict", f"the credential changed while the request was served (its role is now "
                                        f"{found.role}); nothing was done: send it again")
#: The one dependency of every ``/v1`` route: ``call: Authenticated``, then ``call.who`` and ``call.gateway``.
Authenticated = Annotated[Call, Depends(authenticate)]
