"""MCP servers and skills: an agent's MCP servers with their status, tools and last error, and the
organization's skills with each one's body.

An agent's servers are ``GET /v1/agents/{id}/mcp-servers``; each one's status is ``GET
/v1/mcp-servers/{id}/tools``, which connects now as a run would: ``connected`` with the tools the model is
offered, or ``error`` with the reason (unreachable, refused, its credential missing, its URL no longer allowed)
and no tools.  The checks run side by side, so one slow server delays the page by its own connect timeout, not
the sum.  Skills are ``GET /v1/skills`` and ``GET /v1/skills/{id}``.  Servers and skills are addressed by ID.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from agentfy.gateway.console.api import segment
from agentfy.gateway.console.layout import copyable, esc, json_block, page, table
from agentfy.gateway.console.responses import html
from agentfy.gateway.console.screens.agents import agent_url
from agentfy.gateway.console.visit import visit

router = APIRouter()
PAGE_SIZE: Final = 100


def skill_url(skill_id: str) -> str:
    return f"/console/skills/{segment(skill_id)}"


def _tool_row(tool: dict[str, Any]) -> list[str]:
    return [f"<code>{esc(tool['model_name'])}</code>", esc(tool["description"])]


def _server(server: dict[str, Any], status: dict[str, Any]) -> str:
    """One server: where it is, whether a run would reach it now and why not, and the tools it offers."""
    state = status["status"]
    error = ("" if status["error"] is None else
             f'<dt>Last error</dt><dd class="mcp-error">{esc(status["error"])}</dd>')
    config = "" if not server["config"] else f"<dt>Config</dt><dd>{json_block(server['config'])}</dd>"
    tools = table(("Tool (as the model is offered it)", "Description"), (_tool_row(t) for t in status["tools"]),
                  table_id=f"tools-{server['id']}", empty="No tools offered.")
    return (f'<section class="mcp-server" id="mcp-{esc(server["id"])}"><h2>{esc(server["name"])}</h2>'
            f'<dl class="facts"><dt>Status</dt><dd><span class="status status-{esc(state)}">{esc(state)}</span></dd>'
            f'{error}<dt>URL</dt><dd><code>{esc(server["url"])}</code></dd>{config}'
            f'<dt>ID</dt><dd>{copyable(server["id"])}</dd><dt>Added</dt><dd>{esc(server["created_at"])}</dd></dl>'
            f"{tools}</section>")


@router.get("/agents/{agent_id}/mcp-servers")
async def agent_servers(request: Request, agent_id: str) -> Response:
    current = await visit(request)
    request.state.back = agent_url(agent_id)
    agent = await current.api.get(f"/agents/{segment(agent_id)}")
    found = await current.api.get(f"/agents/{segment(agent['id'])}/mcp-servers", limit=str(PAGE_SIZE))
    servers = found["items"]
    statuses = await asyncio.gather(*(current.api.get(f"/mcp-servers/{segment(s['id'])}/tools") for s in servers))
    listed = "".join(_server(server, status) for server, status in zip(servers, statuses, strict=True))
    body = (f'<p><a href="{esc(agent_url(agent["id"]))}">Agent {esc(agent["agent_key"])}</a></p>'
            + (listed or '<p class="empty" id="no-servers">No MCP servers.</p>'))
    return html(page(f"MCP servers of {agent['agent_key']}", body, viewer=current.viewer, section="agents"))


def _skill_row(skill: dict[str, Any]) -> list[str]:
    return [f'<a href="{esc(skill_url(skill["id"]))}">{esc(skill["name"])}</a>',
            f"<code>{esc(skill['owner_id'])}</code>", esc(skill["created_at"]), copyable(skill["id"])]


@router.get("/skills")
async def list_skills(request: Request, cursor: str | None = None) -> Response:
    current = await visit(request)
    found = await current.api.get("/skills", limit=str(PAGE_SIZE), cursor=cursor)
    more = "" if found["next_cursor"] is None else (
        f'<p><a href="/console/skills?cursor={esc(segment(found["next_cursor"]))}">Next page</a></p>')
    body = table(("Skill", "Owner", "Published", "ID"), (_skill_row(skill) for skill in found["items"]),
                 table_id="skills", empty="No skills yet.") + more
    return html(page(f"Skills of {current.viewer.tenant_slug}", body, viewer=current.viewer, section="skills"))


@router.get("/skills/{skill_id}")
async def show_skill(request: Request, skill_id: str) -> Response:
    current = await visit(request)
    request.state.back = "/console/skills"
    skill = await current.api.get(f"/skills/{segment(skill_id)}")
    body = (f'<dl class="facts"><dt>Name</dt><dd id="skill-name">{esc(skill["name"])}</dd>'
            f'<dt>Owner</dt><dd><code>{esc(skill["owner_id"])}</code></dd>'
            f'<dt>Published</dt><dd>{esc(skill["created_at"])}</dd><dt>ID</dt><dd>{copyable(skill["id"])}</dd></dl>'
            f'<h2>Body</h2><pre id="skill-body">{esc(skill["content"])}</pre>')
    return html(page(f"Skill {skill['name']}", body, viewer=current.viewer, section="skills"))
