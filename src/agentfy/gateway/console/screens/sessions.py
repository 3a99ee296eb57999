"""Sessions: an agent's conversations, newest activity first, filterable by memory scope and state, each opening
in the Conversations screen.

Everything is the sessions API (``GET /v1/agents/{id}/sessions?user_id=&status=&cursor=``): which sessions a
key sees is that API's rule (a member acting as a person: its own person's; naming another scope is the API's
403, shown as its message), and a bad cursor or filter is the API's error.  A session is addressed by its key.
"""

from __future__ import annotations

from typing import Any, Final

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from agentfy.gateway.console.api import segment
from agentfy.gateway.console.layout import esc, field, page, table
from agentfy.gateway.console.responses import html
from agentfy.gateway.console.screens.agents import agent_url
from agentfy.gateway.console.screens.conversations import conversation_url
from agentfy.gateway.console.visit import visit

router = APIRouter()
#: Sessions per page.
PAGE_SIZE: Final = 50
#: The states a session can be in, as the API names them.
STATES: Final = ("open", "completed")


def sessions_url(agent_id: str, *, scope: str = "", state: str = "", cursor: str | None = None) -> str:
    """The screen's address with its filters (an empty filter is left out: every scope, every state)."""
    query = [f"{name}={segment(value)}" for name, value in (("scope", scope), ("state", state), ("cursor", cursor))
             if value]
    return agent_url(agent_id, "/sessions") + ("?" + "&".join(query) if query else "")


def _scope(value: str) -> str:
    return "<em>the agent's own</em>" if value == "" else f"<code>{esc(value)}</code>"


def _row(agent_id: str, session: dict[str, Any]) -> list[str]:
    key = session["session_key"]
    return [f'<a href="{esc(conversation_url(agent_id, key))}"><code>{esc(key)}</code></a>', _scope(session["user_id"]),
            f'<span class="status status-{esc(session["status"])}">{esc(session["status"])}</span>',
            esc(session["message_count"]), esc(session["last_activity_at"]), esc(session.get("channel") or "none")]


def _filter(agent_id: str, scope: str, state: str) -> str:
    options = "".join(f'<option value="{esc(s)}"{" selected" if s == state else ""}>{esc(s)}</option>'
                      for s in STATES)
    pairs = (field("scope", "Scope (a user ID or group:…)", value=scope,
                   extra=' autocomplete="off" placeholder="every scope"'),
             '<label for="state">State</label><select id="state" name="state">'
             f'<option value="">every state</option>{options}</select>')
    return (f'<form method="get" action="{esc(agent_url(agent_id, "/sessions"))}" class="filter" role="search">'
            + "".join(f'<div class="pair">{pair}</div>' for pair in pairs)
            + '<button type="submit">Filter</button></form>')


@router.get("/agents/{agent_id}/sessions")
async def agent_sessions(request: Request, agent_id: str, scope: str = "", state: str = "",
                         cursor: str | None = None) -> Response:
    current = await visit(request)
    request.state.back = agent_url(agent_id)
    agent = await current.api.get(f"/agents/{segment(agent_id)}")
    found = await current.api.get(f"/agents/{segment(agent['id'])}/sessions", user_id=scope or None,
                                  status=state or None, limit=str(PAGE_SIZE), cursor=cursor)
    following = found["next_cursor"]
    more = "" if following is None else (
        f'<p><a id="next-page" href="{esc(sessions_url(agent["id"], scope=scope, state=state, cursor=following))}">'
        "Next page</a></p>")
    empty = "No sessions match the filter." if scope or state else "No sessions yet."
    body = (f'<p><a href="{esc(agent_url(agent["id"]))}">Agent {esc(agent["agent_key"])}</a></p>'
            + _filter(agent["id"], scope, state)
            + table(("Session", "Scope", "State", "Messages", "Last activity", "Channel"),
                    (_row(agent["id"], session) for session in found["items"]), table_id="sessions", empty=empty)
            + more)
    return html(page(f"Sessions of {agent['agent_key']}", body, viewer=current.viewer, section="agents"))
