"""The ``/v1`` routers: every module of this package with a ``router`` is mounted under ``/v1``.

Every route must name its operation (``operation_id``), the key of its rule in the access policy
(``agentfy.permissions.access.RULES``): a route without one would have no rule to check, so mounting refuses.
"""

from __future__ import annotations

import importlib
import pkgutil

from fastapi import APIRouter, FastAPI
from fastapi.routing import APIRoute

from agentfy.gateway.errors import ERROR_RESPONSES
from agentfy.permissions.access import RULES


def register(app: FastAPI) -> None:
    for module_info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        router = getattr(module, "router", None)
        if isinstance(router, APIRouter):
            for route in router.routes:
                if isinstance(route, APIRoute) and route.operation_id not in RULES:
                    raise RuntimeError(f"route {sorted(route.methods or ())} {route.path} has operation_id "
                                       f"{route.operation_id!r}, which is not in agentfy.permissions.access.RULES")
            app.include_router(router, prefix="/v1", responses=ERROR_RESPONSES)
