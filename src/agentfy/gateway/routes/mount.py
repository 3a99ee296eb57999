"""Mounting the ``/v1`` routers: under ``/v1``, in the order of :data:`ROUTERS`.

The list is explicit (a module is mounted because it is named here, not because it happens to be in this
package), and its order is the order routes are matched in: the hottest read, ``GET /v1/agents/{agent}``,
comes first.

Mounting refuses a route that would escape the access policy: every HTTP route must name its operation
(``operation_id``, the key of its rule in ``agentfy.permissions.access.RULES``) and authenticate its caller
(a ``call: Authenticated`` parameter).  WebSocket routes authenticate their messages themselves.
"""

from __future__ import annotations

from typing import Final

from fastapi import APIRouter, FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from agentfy.gateway.app import authenticate
from agentfy.gateway.errors import ERROR_RESPONSES
from agentfy.gateway.routes import (
    agents,
    chat,
    cron,
    grants,
    heartbeat,
    ids,
    knowledge,
    links,
    memory,
    orgs,
    sessions,
    skills,
    teams,
    vault,
    ws,
)
from agentfy.permissions.access import RULES

ROUTERS: Final[tuple[APIRouter, ...]] = (
    agents.router, sessions.router, memory.router, knowledge.router, teams.router, orgs.router, skills.router,
    cron.router, links.router, grants.router, vault.router, ids.router, heartbeat.router, chat.router, ws.router,
)


def _authenticates(dependant: Dependant) -> bool:
    return any(sub.call is authenticate or _authenticates(sub) for sub in dependant.dependencies)


def register(app: FastAPI) -> frozenset[str]:
    """Mount :data:`ROUTERS` under ``/v1``; returns the operation IDs of the routes that authenticate (every
    HTTP route), for the OpenAPI document's security requirements."""
    authenticated: set[str] = set()
    for router in ROUTERS:
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
            authenticated.add(route.operation_id)
        app.include_router(router, prefix="/v1", responses=ERROR_RESPONSES)
    return frozenset(authenticated)
