"""The ASGI entry point uvicorn imports (``agentfy.gateway.server:app_from_env``, a factory).

``agentfy serve`` prepares the database once, then passes the URL, the signing secret and whether to run
the event workers to every uvicorn worker process through the environment.
"""

from __future__ import annotations

import base64
import os
from typing import Final

from fastapi import FastAPI

from agentfy.gateway.app import create_app
from agentfy.gateway.bootstrap import SIGNING_KEY_ENV, signing_secret
from agentfy.store.db import Database

RUN_WORKERS_ENV: Final = "AGENTFY_RUN_WORKERS"


def app_from_env() -> FastAPI:
    db = Database()
    secret = base64.b64decode(os.environ[SIGNING_KEY_ENV]) if os.environ.get(SIGNING_KEY_ENV) else signing_secret(db)
    return create_app(db, signing_secret=secret, run_workers=os.environ.get(RUN_WORKERS_ENV) == "1")
