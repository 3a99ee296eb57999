"""The ASGI entry point uvicorn imports (``agentfy.gateway.server:app_from_env``, a factory): the edge of a
server process, where its settings are built.

``agentfy serve`` resolves the settings once (options, file, environment; the signing key included), prepares
the database, and hands them to every uvicorn worker process as one JSON value in
``$AGENTFY_RESOLVED_SETTINGS`` (:func:`agentfy.settings.serialized`): each process serves with exactly those
settings and reads neither the environment nor the config file again.  A uvicorn started by hand on this
factory (without that variable) builds its settings like any command: :func:`agentfy.settings.load_settings`.
"""

from __future__ import annotations

import gc

from fastapi import FastAPI

from agentfy.gateway.app import create_app
from agentfy.keys import signing_secret
from agentfy.settings import inherited_settings, load_settings
from agentfy.store.db import Database


def app_from_env() -> FastAPI:
    settings = inherited_settings() or load_settings()
    db = Database(settings.database_url, pool=settings.db)
    app = create_app(db, signing_secret=signing_secret(settings), run_workers=settings.serve.event_workers,
                     settings=settings)
    settle_heap()
    return app


def settle_heap() -> None:
    """Take what the process has built so far out of the cyclic garbage collector's full passes.

    A started gateway holds some 250,000 objects that live as long as the process (modules, routes, models,
    schemas, compiled statements).  Python's full collection visits every one of them, which took ~100 ms on
    a 2-core machine, and under load it ran every few seconds: every request in flight waited it out, which
    set the p99 of every route (~100 ms for a one-statement read at 1,400 requests/s).  Frozen
    (:func:`gc.freeze`), they are left out of every collection; the full pass then takes ~1-10 ms.  Garbage
    is collected first, so nothing unreachable is frozen; a frozen object is still freed when its last
    reference goes.  Once per process, at its edge: a test process that builds many apps must not freeze
    each one's leftovers."""
    gc.collect()
    gc.freeze()
