"""Mounting the ``/v1`` routers: under ``/v1``, in the order of :data:`ROUTERS`, then
:data:`OWN_ERROR_SHAPE_ROUTERS`.

The list is explicit (a module is mounted because it is named here, not because it happens to be in this
package), and its order is the order routes are matched in (the first that matches wins): the hottest read,
``GET /v1/agents/{agent}``, comes first.  A route mounted late no longer pays for the ones before it: the
dispatch (:mod:`agentfy.gateway.dispatch`) tries only the routes a path's segments can reach, in this order.

Mounting refuses a route that would escape the access policy: every HTTP route must name its operation
(``operation_id``, the key of its rule in ``agentfy.permissions.access.RULES``) and authenticate its caller
(a ``call: Authenticated`` parameter), and be an :class:`~agentfy.gateway.routing.ApiRoute` (a sync endpoint
costs one thread hop, not two).  WebSocket routes authenticate their messages themselves.

The one exception, deliberate and narrow: the chat platforms' webhooks (:data:`CHANNEL_ROUTERS`), which no
API key can reach (Telegram and Discord cannot send one).  Each of their routes must instead depend on one of
the channels' verifiers (:data:`agentfy.channels.webhooks.VERIFIERS`: a secret token, a signature, checked
against the binding that names the tenant), have an operation ID under ``channels.``, and stay out of the
OpenAPI document; mounting refuses one that does not.  They are mounted after the API's routes, under the
same input limits.
"""

from __future__ import annotations

from typing import Final

from fastapi import APIRouter, FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from agentfy.channels import webhooks
from agentfy.gateway.deps import authenticate
from agentfy.gateway.errors import ERROR_RESPONSES
from agentfy.gateway.openai import routes as openai
from agentfy.gateway.routes import (
    agent_embeddings,
    agent_model,
    agents,
    bus,
    channel_access,
    channels,
    chat,
    credentials,
    cron,
    grants,
    heartbeat,
    ids,
    knowledge,
    links,
    memory,
    orgs,
    prices,
    sessions,
    skills,
    tasks,
    teams,
    usage,
    vault,
    ws,
)
from agentfy.gateway.routing import ApiRoute
from agentfy.permissions.access import RULES

ROUTERS: Final[tuple[APIRouter, ...]] = (
    agents.router, sessions.router, memory.router, knowledge.router, teams.router, orgs.router, skills.router,
    cron.router, links.router, grants.router, vault.router, ids.router, heartbeat.router, channels.router,
    channel_access.router, usage.router, credentials.router, agent_model.router, chat.router, ws.router,
    tasks.router,
    agent_embeddings.router,
    bus.router,
    prices.router,
)

#: Routers whose routes declare their own error responses, in another error shape: the OpenAI-compatible
#: endpoint answers in OpenAI's (:mod:`agentfy.gateway.openai.errors`).  The same access checks apply.
OWN_ERROR_SHAPE_ROUTERS: Final[tuple[APIRouter, ...]] = (openai.router,)

#: The chat platforms' webhooks: verified by the platform's proof, not by an API key (see the docstring).
CHANNEL_ROUTERS: Final[tuple[APIRouter, ...]] = webhooks.CHANNEL_ROUTERS


def _authenticates(dependant: Dependant) -> bool:
    return any(sub.call is authenticate or _authenticates(sub) for sub in dependant.dependencies)


def _verifies_a_platform(dependant: Dependant) -> bool:
    return any(sub.call in webhooks.VERIFIERS or _verifies_a_platform(sub) for sub in dependant.dependencies)


def _register_webhooks(app: FastAPI) -> None:
    for router in CHANNEL_ROUTERS:
        for route in router.routes:
            if not isinstance(route, APIRoute):
                raise RuntimeError(f"channel router route {route!r} is not an HTTP route")
            where = f"webhook {sorted(route.methods or ())} {route.path}"
            if not (route.operation_id or "").startswith(webhooks.OPERATION_PREFIX):
                raise RuntimeError(f"{where} has operation_id {route.operation_id!r}; a webhook's starts with "
                                   f"{webhooks.OPERATION_PREFIX!r}")
            if route.include_in_schema:
                raise RuntimeError(f"{where} is in the OpenAPI document; webhooks are not API operations")
            if not _verifies_a_platform(route.dependant):
                raise RuntimeError(f"{where} does not verify the platform: give it a dependency of "
                                   "agentfy.channels.webhooks.VERIFIERS")
        app.include_router(router, prefix="/v1")


def register(app: FastAPI) -> frozenset[str]:
    """Mount :data:`ROUTERS`, then :data:`CHANNEL_ROUTERS`, under ``/v1``; returns the operation IDs of the
    routes that authenticate (every API route), for the OpenAPI document's security requirements."""
    authenticated: set[str] = set()
    for router in (*ROUTERS, *OWN_ERROR_SHAPE_ROUTERS):
        for route in router.routes:
            if not isinstance(route, APIRoute):
                continue
            where = f"route {sorted(route.methods or ())} {route.path}"
            if route.operation_id not in RULES:
                raise RuntimeError(f"{where} has operation_id {route.operation_id!r}, which is not in "
                                   "agentfy.permissions.access.RULES")
            if not _authenticates(route.dependant):
                raise RuntimeError(f"{where} does not authenticate its caller: give it a `call: Authenticated` "
                                   "parameter")
            if not isinstance(route, ApiRoute):
                raise RuntimeError(f"{where} is a {type(route).__name__}: make its router with "
                                   "route_class=agentfy.gateway.routing.ApiRoute (one thread hop per request)")
            authenticated.add(route.operation_id)
        app.include_router(router, prefix="/v1", responses={} if router in OWN_ERROR_SHAPE_ROUTERS
                           else ERROR_RESPONSES)
    _register_webhooks(app)
    return frozenset(authenticated)
