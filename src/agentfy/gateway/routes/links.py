"""Agent links (``/v1/agents/{agent}/links``, ``/v1/links/{link_id}``) and an agent's MCP servers
(``/v1/agents/{agent}/mcp-servers``, ``/v1/mcp-servers/{server_id}``, its tools ``.../tools``).

Both ends of a link are agents of the caller's organization, each named by ID or agent_key.  An MCP server's
URL and config are checked by the runtime's rule (:mod:`agentfy.runtime.mcp.servers`) before it is stored:
what a run would refuse is never registered.
"""

from __future__ import annotations

from fastapi import APIRouter, Response

from agentfy.errors import ApiError
from agentfy.gateway.deps import Authenticated, GatewayState
from agentfy.gateway.errors import fields_as_sent
from agentfy.gateway.pages import Cursor, Limit, Page, paged
from agentfy.gateway.resolve import agent_in, agent_loop
from agentfy.gateway.routes.agents import AgentRef
from agentfy.gateway.routes.schemas_admin import (
    LinkIdPath,
    LinkIn,
    LinkOut,
    McpServerIdPath,
    McpServerIn,
    McpServerOut,
    McpServerToolsOut,
    McpToolOut,
)
from agentfy.gateway.routing import ApiRoute
from agentfy.runtime.mcp.offer import McpTools, ServerStatus
from agentfy.runtime.mcp.servers import parse_target
from agentfy.runtime.mcp.settings import DEFAULT_MCP_SETTINGS
from agentfy.store.paging import DEFAULT_LIMIT
from agentfy.store.repos import links
from agentfy.store.repos.links import AgentLink, AgentMcpServer

router = APIRouter(tags=["links"], route_class=ApiRoute)


def link_out(link: AgentLink) -> LinkOut:
    return LinkOut(id=link.id, source_agent_id=link.source_agent_id, target_agent_id=link.target_agent_id,
                   kind=link.kind, created_at=link.created_at)


def mcp_out(server: AgentMcpServer) -> McpServerOut:
    return McpServerOut(id=server.id, agent_id=server.agent_id, name=server.name, url=server.url,
                        config=server.config, created_at=server.created_at)


# -- links ------------------------------------------------------------------------------------------------
@router.post("/agents/{agent}/links", operation_id="links.create", status_code=201, response_model=LinkOut)
def create_link(agent: AgentRef, body: LinkIn, call: Authenticated) -> LinkOut:
    """Link the agent to ``target`` (another agent, by ID or agent_key) with ``kind`` (operator).  The same
    link twice: 409; an agent linked to itself: 422."""
    with call.gateway.db.transaction() as tx:
        source = agent_in(tx, call.who, agent).id
        target = agent_in(tx, call.who, body.target, field="target").id
        with fields_as_sent(target_agent_id="target"):
            return link_out(links.create_link(tx, call.who.scope, source, target, kind=body.kind))


@router.get("/agents/{agent}/links", operation_id="links.list", response_model=Page[LinkOut])
def list_links(agent: AgentRef, call: Authenticated,
               limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None) -> Page[LinkOut]:
    """The links with the agent at either end, oldest first, a page at a time."""
    agent_id = agent_loop(call.gateway, call.who, agent).agent.id
    return paged(call.gateway, call.who, "links.list", links.LINKS_OF_PAGES, fetch=lambda tx, **page: links.list_links(
        tx, call.who.scope, agent_id, **page), out=link_out, limit=limit, cursor=cursor)


@router.delete("/links/{link_id}", operation_id="links.delete", status_code=204, response_class=Response)
def delete_link(link_id: LinkIdPath, call: Authenticated) -> Response:
    """Delete a link (operator); its agents stay."""
    with call.gateway.db.transaction() as tx:
        links.delete_link(tx, call.who.scope, link_id)
    return Response(status_code=204)


# -- MCP servers ------------------------------------------------------------------------------------------
def _mcp_of(gateway: GatewayState) -> McpTools | None:
    return None if gateway.runtime is None else gateway.runtime.mcp


def tools_out(status: ServerStatus) -> McpServerToolsOut:
    return McpServerToolsOut(server_id=status.server.id, name=status.server.name,
                             status="connected" if status.error is None else "error", error=status.error,
                             tools=[McpToolOut(name=tool.name, model_name=tool.model_name,
                                               description=tool.description, input_schema=dict(tool.input_schema))
                                    for tool in status.tools])


@router.post("/agents/{agent}/mcp-servers", operation_id="mcp_servers.add",
             status_code=201, response_model=McpServerOut)
def add_mcp_server(agent: AgentRef, body: McpServerIn, call: Authenticated) -> McpServerOut:
    """Attach an MCP server to the agent (operator): an http(s) URL (Streamable HTTP; ``config.transport``
    ``"sse"`` for SSE), or ``stdio:<command>`` for a command the platform allows (``mcp.allowed_commands``);
    ``config`` may name the organization's ``credential`` to send in ``header`` (default Authorization, as
    ``Bearer <secret>``) and a call ``timeout`` in seconds.  Anything else is 422 naming the field; a second
    server of the same name: 409."""
    mcp = _mcp_of(call.gateway)
    parse_target(body.url, body.config, DEFAULT_MCP_SETTINGS if mcp is None else mcp.settings)
    with call.gateway.db.transaction() as tx:
        agent_id = agent_in(tx, call.who, agent).id
        return mcp_out(links.add_mcp_server(tx, call.who.scope, agent_id, name=body.name, url=body.url,
                                            config=body.config))


@router.get("/agents/{agent}/mcp-servers", operation_id="mcp_servers.list", response_model=Page[McpServerOut])
def list_mcp_servers(agent: AgentRef, call: Authenticated,
                     limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None) -> Page[McpServerOut]:
    """The agent's MCP servers, by name, a page at a time (operator: their configuration may hold connection
    details)."""
    agent_id = agent_loop(call.gateway, call.who, agent).agent.id
    return paged(call.gateway, call.who, "mcp_servers.list", links.MCP_PAGES,
                 fetch=lambda tx, **page: links.list_mcp_servers(tx, call.who.scope, agent_id, **page),
                 out=mcp_out, limit=limit, cursor=cursor)


@router.delete("/mcp-servers/{server_id}", operation_id="mcp_servers.delete", status_code=204, response_class=Response)
def delete_mcp_server(server_id: McpServerIdPath, call: Authenticated) -> Response:
    """Detach an MCP server (operator)."""
    with call.gateway.db.transaction() as tx:
        links.delete_mcp_server(tx, call.who.scope, server_id)
    return Response(status_code=204)


@router.get("/mcp-servers/{server_id}/tools", operation_id="mcp_servers.tools", response_model=McpServerToolsOut)
async def list_mcp_server_tools(server_id: McpServerIdPath, call: Authenticated) -> McpServerToolsOut:
    """The server's tools as its agent's runs are offered them, found by connecting now: ``status``
    ``connected`` with the tools, or ``error`` with the reason (unreachable, refused, its credential missing)
    and no tools (operator).  Another organization's server: 404."""
    mcp = _mcp_of(call.gateway)
    if mcp is None:
        raise ApiError(503, "unavailable", "this server runs no agent runtime")
    return tools_out(await mcp.status(call.gateway.db, call.who.scope, server_id))
