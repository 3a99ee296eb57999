"""Live events: the organization's agent events as they arrive, filterable by agent key.

The page's script (``static/events.js``) connects to ``/console/events/ws``; the console joins that socket to
the API's own WebSocket in-process as the signed-in key (:mod:`agentfy.gateway.console.bridge`), so the events
are what the API's ``subscribe`` gives that key, under its checks.  The socket is refused without a session, or
from a page of another origin (the cookie is ``SameSite=Strict`` as well).
"""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response
from starlette.websockets import WebSocket

from agentfy.gateway.console.bridge import join
from agentfy.gateway.console.layout import STATIC, field, page
from agentfy.gateway.console.responses import html
from agentfy.gateway.console.visit import gateway_app_of, seal_of, visit

router = APIRouter()
#: The close code of a refused socket (as the API's for a missing credential).
CLOSE_UNAUTHORIZED = 4401


@router.get("/events")
async def live_events(request: Request, agent: str = "") -> Response:
    current = await visit(request)
    body = (f'<form class="filter" role="search" onsubmit="return false">'
            f'{field("agent-filter", "Filter by agent key", value=agent, kind="search")}</form>'
            '<p id="events-status" role="status" data-state="connecting">Connecting…</p>'
            '<div class="scroll"><table id="events-table"><thead><tr><th scope="col">Time</th>'
            '<th scope="col">Event</th><th scope="col">Agent key</th><th scope="col">Tenant</th>'
            '<th scope="col">Detail</th></tr></thead><tbody id="events"></tbody></table></div>'
            f'<script src="{STATIC}/events.js" defer></script>')
    return html(page("Live events", body, viewer=current.viewer, section="events"))


@router.websocket("/events/ws")
async def events_socket(websocket: WebSocket) -> None:
    session = seal_of(websocket).read(websocket)
    origin = websocket.headers.get("origin")
    host = websocket.headers.get("host")
    same_origin = origin is None or origin.split("://", 1)[-1] == host
    if session is None or session.api_key is None or not same_origin:
        await websocket.close(code=CLOSE_UNAUTHORIZED)
        return
    await join(websocket, gateway_app_of(websocket), session.api_key)  # type: ignore[arg-type]
