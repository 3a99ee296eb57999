"""Agent links (``/v1/agents/{agent}/links``, ``/v1/links/{link_id}``) and an agent's MCP servers
(``/v1/agents/{agent}/mcp-servers``, ``/v1/mcp-servers/{server_id}``).

Both ends of a link are agents of the caller's organization, each named by ID or agent_key.
"""

from __future__ import annotations

from fastapi import APIRouter, Response

from agentfy.gateway.deps import Authenticated
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
)
from agentfy.store.paging import DEFAULT_LIMIT
from agentfy.store.repos import links
from agentfy.store.repos.links import AgentLink, AgentMcpServer

router = APIRouter(tags=["links"])


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
@router.post("/agents/{agent}/mcp-servers", operation_id="mcp_servers.add",
             status_code=201, response_model=McpServerOut)
def add_mcp_server(agent: AgentRef, body: McpServerIn, call: Authenticated) -> McpServerOut:
    """Attach an MCP server to the agent (operator).  A second server of the same name: 409."""
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
