"""Agents: the organization's agents by key (filterable), one agent's page, create, rename, archive.

Agents are addressed by ID in the console's URLs (a rename changes the key, never the ID); the list filters
the page it shows by agent key.  Each action is one API call (``POST /v1/agents``, ``PATCH`` and ``DELETE
/v1/agents/{id}``); its buttons are shown to the roles the access policy lets call it.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from agentfy.gateway.console.api import segment
from agentfy.gateway.console.layout import copyable, esc, field, notice, page, post_form, table
from agentfy.gateway.console.responses import html, redirect
from agentfy.gateway.console.screens.agent_settings import channels_section, model_section, run_state
from agentfy.gateway.console.screens.paths import agent_url
from agentfy.gateway.console.visit import Visit, checked_form, text_of, visit

__all__ = ["agent_url", "model_of", "router"]

router = APIRouter()
#: Agents per page of the list (the API's page size).
PAGE_SIZE = 100


def model_of(agent: dict[str, Any]) -> str:
    """The agent's model as its configuration names it (no ``config.model``: the built-in offline model)."""
    config = agent.get("config")
    model = config.get("model") if isinstance(config, dict) else None
    if not isinstance(model, dict):
        return "offline (default)"
    name, provider = model.get("model"), model.get("provider", "offline")
    return f"{provider}: {name}" if name else str(provider)


def _row(agent: dict[str, Any]) -> list[str]:
    link = f'<a href="{esc(agent_url(agent["id"]))}">{esc(agent["agent_key"])}</a>'
    return [link, esc(agent["display_name"]), copyable(agent["id"]), esc(model_of(agent))]


def _create_form(current: Visit) -> str:
    if not current.may("agents.create"):
        return ""
    fields = (field("agent_key", "Agent key", required=True, extra=' autocomplete="off"')
              + field("display_name", "Display name"))
    return f'<h2>Create an agent</h2>{post_form("/console/agents", current.viewer.csrf, fields, label="Create agent")}'


@router.get("/agents")
async def list_agents(request: Request, key: str = "", cursor: str | None = None,
                      archived: str | None = None) -> Response:
    current = await visit(request)
    found = await current.api.get("/agents", limit=str(PAGE_SIZE), cursor=cursor)
    wanted = key.strip()
    items = [agent for agent in found["items"] if wanted in agent["agent_key"]]
    search = ('<form method="get" action="/console/agents" class="filter" role="search">'
              f'{field("key", "Filter by agent key", value=wanted, kind="search")}'
              '<button type="submit">Filter</button></form>')
    more = "" if found["next_cursor"] is None else (
        f'<p><a href="/console/agents?cursor={esc(segment(found["next_cursor"]))}">Next page</a></p>')
    body = (notice(f"Archived {archived}.") if archived else "") + search + table(
        ("Agent key", "Display name", "ID", "Model"), (_row(agent) for agent in items), table_id="agents",
        empty="No agents match." if wanted else "No agents yet.") + more + _create_form(current)
    return html(page(f"Agents of {current.viewer.tenant_slug}", body, viewer=current.viewer, section="agents"))


@router.post("/agents")
async def create_agent(request: Request) -> Response:
    current = await visit(request)
    form = await checked_form(request, current.session)
    body: dict[str, Any] = {"agent_key": text_of(form, "agent_key").strip()}
    if display_name := text_of(form, "display_name").strip():
        body["display_name"] = display_name
    request.state.back = "/console/agents"
    created = await current.api.post("/agents", body)
    return redirect(request, agent_url(created["id"]))


def _agent_actions(current: Visit, agent: dict[str, Any]) -> str:
    parts = []
    if current.may("agents.update"):
        fields = (field("agent_key", "Agent key", value=agent["agent_key"], required=True)
                  + field("display_name", "Display name", value=agent["display_name"]))
        parts.append("<h2>Rename</h2>" + post_form(agent_url(agent["id"], "/rename"), current.viewer.csrf, fields,
                                                   label="Save"))
    if current.may("agents.delete"):
        parts.append("<h2>Archive</h2><p>Archiving removes the agent and everything it owns.</p>" + post_form(
            agent_url(agent["id"], "/archive"), current.viewer.csrf, "", label=f"Archive {agent['agent_key']}",
            extra=' class="danger"'))
    return "".join(parts)


#: What the agent page says after a change made from it (``?done=…``).
_DONE_NOTICES = {"model": "Model saved.", "credential": "Credential stored and model saved."}


def _done_notice(done: str | None, checked: str | None, answered: str | None) -> str:
    if checked is not None and checked.isdigit():
        who = f"The model {answered}" if answered else "The model"
        return notice(f"{who} answered in {checked} ms.")
    return notice(_DONE_NOTICES[done]) if done in _DONE_NOTICES else ""


@router.get("/agents/{agent_id}")
async def show_agent(request: Request, agent_id: str, done: str | None = None, checked: str | None = None,
                     answered: str | None = None) -> Response:
    current = await visit(request)
    request.state.back = "/console/agents"
    agent = await current.api.get(f"/agents/{segment(agent_id)}")
    facts = (f'<dl class="facts"><dt>Agent key</dt><dd id="agent-key">{esc(agent["agent_key"])}</dd>'
             f'<dt>Display name</dt><dd>{esc(agent["display_name"])}</dd>'
             f'<dt>ID</dt><dd>{copyable(agent["id"])}</dd><dt>Model</dt><dd>{esc(model_of(agent))}</dd>'
             f'<dt>Created</dt><dd>{esc(agent["created_at"])}</dd>'
             f'<dt>Run</dt><dd>{await run_state(current, agent)}</dd></dl>')
    links = (f'<ul class="links"><li><a href="{esc(agent_url(agent["id"], "/conversations"))}">Conversations</a>'
             f'</li><li><a href="{esc(agent_url(agent["id"], "/sessions"))}">Sessions</a></li>'
             f'<li><a href="{esc(agent_url(agent["id"], "/cron"))}">Cron jobs</a></li>'
             + ("" if not current.may("mcp_servers.list") else
                f'<li><a href="{esc(agent_url(agent["id"], "/mcp-servers"))}">MCP servers</a></li>')
             + f'<li><a href="{esc(agent_url(agent["id"], "/memory"))}">Memory and knowledge</a></li></ul>')
    body = (_done_notice(done, checked, answered) + facts + links + await model_section(current, agent)
            + await channels_section(current, agent) + _agent_actions(current, agent))
    return html(page(f"Agent {agent['agent_key']}", body, viewer=current.viewer, section="agents"))


@router.post("/agents/{agent_id}/rename")
async def rename_agent(request: Request, agent_id: str) -> Response:
    current = await visit(request)
    form = await checked_form(request, current.session)
    request.state.back = agent_url(agent_id)
    body = {"agent_key": text_of(form, "agent_key").strip()}
    if display_name := text_of(form, "display_name").strip():
        body["display_name"] = display_name
    await current.api.patch(f"/agents/{segment(agent_id)}", body)
    return redirect(request, agent_url(agent_id))


@router.post("/agents/{agent_id}/archive")
async def archive_agent(request: Request, agent_id: str) -> Response:
    current = await visit(request)
    await checked_form(request, current.session)
    request.state.back = agent_url(agent_id)
    agent = await current.api.get(f"/agents/{segment(agent_id)}")
    await current.api.delete(f"/agents/{segment(agent_id)}")
    return redirect(request, f"/console/agents?archived={segment(agent['agent_key'])}")
