"""The ASGI entry point uvicorn imports (``agentfy.gateway.server:app_from_env``, a factory).

``agentfy serve`` prepares the database once, then hands its effective settings (the signing key included) to
every uvicorn worker process as ``AGENTFY_*`` variables, which :func:`agentfy.settings.load_settings` reads.
"""

from __future__ import annotations

from fastapi import FastAPI

from agentfy.gateway.app import create_app
from agentfy.gateway.bootstrap import signing_secret
from agentfy.settings import load_settings
from agentfy.store.db import Database


def app_from_env() -> FastAPI:
    settings = load_settings()
    db = Database(settings.database_url, pool=settings.pool_settings())
    return create_app(db, signing_secret=signing_secret(settings), run_workers=settings.serve.event_workers,
                      settings=settings)
