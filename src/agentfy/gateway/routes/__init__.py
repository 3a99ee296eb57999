"""The ``/v1`` routers: every module of this package with a ``router`` is mounted under ``/v1``."""

from __future__ import annotations

import importlib
import pkgutil

from fastapi import APIRouter, FastAPI

from agentfy.gateway.errors import ERROR_RESPONSES


def register(app: FastAPI) -> None:
    for module_info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        router = getattr(module, "router", None)
        if isinstance(router, APIRouter):
            app.include_router(router, prefix="/v1", responses=ERROR_RESPONSES)
