"""``mount_console(app)``: the operator console at ``/console``, a sub-application of its own.

The console is mounted after the API's routes and adds no middleware to the gateway: the API's requests never
pass through it.  It serves HTML pages and its vendored static files (``static/``: htmx, its CSS and
script), and gets every piece of data by calling the gateway's own API in-process
(:mod:`agentfy.gateway.console.api`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from starlette.requests import Request
from starlette.responses import Response

from agentfy.gateway.console import responses
from agentfy.gateway.console.api import ApiFailure
from agentfy.gateway.console.screens import (
    agent_settings,
    agents,
    conversations,
    cron,
    events,
    mcp_skills,
    memory,
    operations,
    sessions,
    sign_in,
    tasks,
    usage,
)
from agentfy.gateway.console.session import SessionSeal
from agentfy.gateway.console.visit import CsrfRefused, SignInNeeded
from agentfy.gateway.deps import GatewayState

CONSOLE_PATH: Final = "/console"
STATIC_DIR: Final = Path(__file__).with_name("static")
SCREENS: Final = (sign_in.router, agents.router, conversations.router, cron.router, events.router,
           operations.router, tasks.router, mcp_skills.router, usage.router, agent_settings.router,
           memory.router, sessions.router)


def console_app(gateway_app: FastAPI) -> FastAPI:
    """The console for ``gateway_app`` (whose API it calls, with its signing secret sealing the sessions)."""
    gateway: GatewayState = gateway_app.state.gateway
    console = FastAPI(title="agentfy console", openapi_url=None, docs_url=None, redoc_url=None)
    console.state.gateway_app = gateway_app
    console.state.seal = SessionSeal(gateway.signing_secret)
    console.mount("/static", StaticFiles(directory=STATIC_DIR), name="console-static")
    for router in SCREENS:
        console.include_router(router)
    console.add_exception_handler(ApiFailure, responses.on_failure)
    console.add_exception_handler(SignInNeeded, responses.on_sign_in_needed)
    console.add_exception_handler(CsrfRefused, responses.on_csrf_refused)

    @console.get("/")
    async def home(request: Request) -> Response:
        return responses.redirect(request, sign_in.HOME)

    return console


def mount_console(app: FastAPI) -> None:
    """Serve the console for ``app`` at ``/console``."""
    app.mount(CONSOLE_PATH, console_app(app), name="console")
