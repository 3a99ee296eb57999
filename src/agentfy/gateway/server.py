"""The ASGI entry point uvicorn imports (``agentfy.gateway.server:app_from_env``, a factory): the edge of a
server process, where its settings are built.

``agentfy serve`` resolves the settings once (options, file, environment; the signing key included), prepares
the database, and hands them to every uvicorn worker process as one JSON value in
``$AGENTFY_RESOLVED_SETTINGS`` (:func:`agentfy.settings.serialized`): each process serves with exactly those
settings and reads neither the environment nor the config file again.  A uvicorn started by hand on this
factory (without that variable) builds its settings like any command: :func:`agentfy.settings.load_settings`.
"""

from __future__ import annotations

from fastapi import FastAPI

from agentfy.gateway.app import create_app
from agentfy.keys import signing_secret
from agentfy.settings import inherited_settings, load_settings
from agentfy.store.db import Database


def app_from_env() -> FastAPI:
    settings = inherited_settings() or load_settings()
    db = Database(settings.database_url, pool=settings.db)
    return create_app(db, signing_secret=signing_secret(settings), run_workers=settings.serve.event_workers,
                      settings=settings)
