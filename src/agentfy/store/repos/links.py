"""Agent links (one agent may delegate to, or hand off to, another) and an agent's MCP servers.

Who an agent may hand work to (:func:`delegation_route`) is decided here, once: a ``delegate`` link from it
to the other agent (a link has a direction: the source delegates to the target, not the reverse), or a team
both are on (as lead or member).  Any other agent of the organization is out of reach.

Both ends of a link are agents of the scope's tenant, checked before the write: the foreign key only proves
that an agent exists somewhere, and a link across tenants would leak one tenant's agent to another.
Deleting either agent deletes the link (CASCADE); deleting an agent deletes its MCP servers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import sqlalchemy as sa

from agentfy.identity import AgentId, AgentLinkId, AgentMcpServerId, OrgId, Scope, parse_id
from agentfy.store.db import Tx, now
from agentfy.store.errors import ConflictError, InvalidInputError, NotFoundError, UniqueViolation
from agentfy.store.paging import Keyset
from agentfy.store.repos import agents
from agentfy.store.repos._common import dump_json, load_json, require_label
from agentfy.store.schema import agent_links, agent_mcp_servers, team_members, teams
from agentfy.store.sql import insert_returning_id

DEFAULT_LINK_KIND: Final = "delegate"
URL_MAX_LENGTH: Final = 2048

_LINK_IN_TENANT: Final = agent_links.c.tenant_id == sa.bindparam("tenant_id")
_LINK_COLUMNS: Final = (agent_links.c.id, agent_links.c.tenant_id, agent_links.c.source_agent_id,
                        agent_links.c.target_agent_id, agent_links.c.kind, agent_links.c.created_at)
_INSERT_LINK: Final = insert_returning_id(agent_links, ["tenant_id", "source_agent_id", "target_agent_id", "kind",
                                                        "created_at"])
_LINK_BY_ID: Final = sa.select(*_LINK_COLUMNS).where(_LINK_IN_TENANT, agent_links.c.id == sa.bindparam("link_id"))
_LINK_ORDER: Final = (agent_links.c.created_at, agent_links.c.id)
LINK_PAGES: Final[Keyset[AgentLink]] = Keyset(sa.select(*_LINK_COLUMNS).where(_LINK_IN_TENANT), _LINK_ORDER,
                                                lambda link: (link.created_at, link.id))
LINKS_OF_PAGES: Final[Keyset[AgentLink]] = Keyset(
    sa.select(*_LINK_COLUMNS).where(_LINK_IN_TENANT, sa.or_(agent_links.c.source_agent_id == sa.bindparam("agent_id"),
                                                            agent_links.c.target_agent_id == sa.bindparam("agent_id"))),
    _LINK_ORDER, lambda link: (link.created_at, link.id))
_DELEGATE_LINK: Final = sa.select(agent_links.c.id).where(
    _LINK_IN_TENANT, agent_links.c.source_agent_id == sa.bindparam("source_id"),
    agent_links.c.target_agent_id == sa.bindparam("target_id"),
    agent_links.c.kind == DEFAULT_LINK_KIND).limit(1)
#: The teams an agent is on, as a member or as the lead.
_TEAMS_OF: Final = sa.union(
    sa.select(team_members.c.team_id).where(team_members.c.tenant_id == sa.bindparam("tenant_id"),
                                            team_members.c.agent_id == sa.bindparam("agent_id")),
    sa.select(teams.c.id).where(teams.c.tenant_id == sa.bindparam("tenant_id"),
                                teams.c.lead_agent_id == sa.bindparam("agent_id")))
_DELETE_LINK: Final = sa.delete(agent_links).where(_LINK_IN_TENANT, agent_links.c.id == sa.bindparam("link_id"))

_MCP_IN_TENANT: Final = agent_mcp_servers.c.tenant_id == sa.bindparam("tenant_id")
_MCP_COLUMNS: Final = (agent_mcp_servers.c.id, agent_mcp_servers.c.tenant_id, agent_mcp_servers.c.agent_id,
                       agent_mcp_servers.c.name, agent_mcp_servers.c.url, agent_mcp_servers.c.config,
                       agent_mcp_servers.c.created_at)
_INSERT_MCP: Final = insert_returning_id(agent_mcp_servers, ["tenant_id", "agent_id", "name", "url", "config",
                                                             "created_at"])
_MCP_BY_ID: Final = sa.select(*_MCP_COLUMNS).where(_MCP_IN_TENANT, agent_mcp_servers.c.id == sa.bindparam("server_id"))
MCP_PAGES: Final[Keyset[AgentMcpServer]] = Keyset(
    sa.select(*_MCP_COLUMNS).where(_MCP_IN_TENANT, agent_mcp_servers.c.agent_id == sa.bindparam("agent_id")),
    (agent_mcp_servers.c.name, agent_mcp_servers.c.id), lambda m: (m.name, m.id))
_DELETE_MCP: Final = sa.delete(agent_mcp_servers).where(_MCP_IN_TENANT,
                                                        agent_mcp_servers.c.id == sa.bindparam("server_id"))


@dataclass(frozen=True, slots=True)
class AgentLink:
    id: AgentLinkId
    tenant_id: OrgId
    source_agent_id: AgentId
    target_agent_id: AgentId
    kind: str
    created_at: str


@dataclass(frozen=True, slots=True)
class AgentMcpServer:
    id: AgentMcpServerId
    tenant_id: OrgId
    agent_id: AgentId
    name: str
    url: str
    config: dict[str, Any]
    created_at: str


def _link(row: tuple[Any, ...]) -> AgentLink:
    return AgentLink(AgentLinkId(row[0]), OrgId(row[1]), AgentId(row[2]), AgentId(row[3]), row[4], row[5])


def _mcp(row: tuple[Any, ...]) -> AgentMcpServer:
    return AgentMcpServer(AgentMcpServerId(row[0]), OrgId(row[1]), AgentId(row[2]), row[3], row[4],
                          load_json(row[5]), row[6])


# -- links ------------------------------------------------------------------------------------------------
def create_link(tx: Tx, scope: Scope, source_agent_id: str, target_agent_id: str, *,
                kind: str = DEFAULT_LINK_KIND) -> AgentLink:
    """Link two distinct agents of the tenant; the same (source, target, kind) twice is a conflict."""
    source = parse_id(source_agent_id, "agent", field="source_agent_id")
    target = parse_id(target_agent_id, "agent", field="target_agent_id")
    link_kind = require_label(kind, field="kind", max_length=50)
    if source == target:
        raise InvalidInputError(f"an agent cannot be linked to itself ({source})", field="target_agent_id",
                                value=target)
    agents.get_agent(tx, scope, source)
    agents.get_agent(tx, scope, target)
    stamp = now()
    try:
        link_id = tx.insert_minted("agent-link", _INSERT_LINK, {
            "tenant_id": scope.tenant_id, "source_agent_id": source, "target_agent_id": target, "kind": link_kind,
            "created_at": stamp})
    except UniqueViolation as error:
        if "target_agent_id" in error.columns:
            raise ConflictError(f"a {link_kind!r} link from {source} to target_agent_id {target!r} already exists",
                                field="target_agent_id", value=target) from None
        raise
    return AgentLink(AgentLinkId(link_id), scope.tenant_id, AgentId(source), AgentId(target), link_kind, stamp)


def get_link(tx: Tx, scope: Scope, link_id: str) -> AgentLink:
    link_id = parse_id(link_id, "agent-link", field="link_id")
    row = tx.one(_LINK_BY_ID, {"tenant_id": scope.tenant_id, "link_id": link_id})
    if row is None:
        raise NotFoundError("agent link", link_id)
    return _link(row)


def list_links(tx: Tx, scope: Scope, agent_id: str | None = None,
               *, after: Sequence[Any] | None = None, limit: int | None = None) -> list[AgentLink]:
    """The tenant's links, or only those with ``agent_id`` at either end (the agent must exist); all, or a
    page."""
    if agent_id is None:
        return LINK_PAGES.fetch(tx, {"tenant_id": scope.tenant_id}, _link, after=after, limit=limit)
    agent = agents.get_agent(tx, scope, parse_id(agent_id, "agent"))
    return LINKS_OF_PAGES.fetch(tx, {"tenant_id": scope.tenant_id, "agent_id": agent.id}, _link, after=after,
                                limit=limit)


def teams_of(tx: Tx, scope: Scope, agent_id: str) -> set[str]:
    """The IDs of the scope's teams ``agent_id`` is on, as a member or as the lead (empty: none, or no such
    agent in the scope)."""
    return {row[0] for row in tx.all(_TEAMS_OF, {"tenant_id": scope.tenant_id, "agent_id": agent_id})}


def delegation_route(tx: Tx, scope: Scope, source_agent_id: str, target_agent_id: str) -> str | None:
    """How the agent ``source_agent_id`` may hand work to ``target_agent_id`` (both the scope's): ``"link"``
    (a ``delegate`` link from source to target), ``"team"`` (a team both are on), or ``None``: out of reach."""
    params = {"tenant_id": scope.tenant_id, "source_id": source_agent_id, "target_id": target_agent_id}
    if tx.one(_DELEGATE_LINK, params) is not None:
        return "link"
    source_teams = teams_of(tx, scope, source_agent_id)
    if source_teams and source_teams & teams_of(tx, scope, target_agent_id):
        return "team"
    return None


def delete_link(tx: Tx, scope: Scope, link_id: str) -> None:
    link_id = parse_id(link_id, "agent-link", field="link_id")
    if tx.execute(_DELETE_LINK, {"tenant_id": scope.tenant_id, "link_id": link_id}).rowcount == 0:
        raise NotFoundError("agent link", link_id)


# -- MCP servers ------------------------------------------------------------------------------------------
def add_mcp_server(tx: Tx, scope: Scope, agent_id: str, *, name: str, url: str,
                   config: dict[str, Any] | None = None) -> AgentMcpServer:
    """Attach an MCP server to an agent of the tenant; a second server of the same name is a conflict."""
    agent_id = parse_id(agent_id, "agent")
    server_name = require_label(name, field="name")
    server_url = require_label(url, field="url", max_length=URL_MAX_LENGTH)
    config_text = dump_json(config, field="config")
    agents.get_agent(tx, scope, agent_id)
    stamp = now()
    try:
        server_id = tx.insert_minted("agent-mcp-server", _INSERT_MCP, {
            "tenant_id": scope.tenant_id, "agent_id": agent_id, "name": server_name, "url": server_url,
            "config": config_text, "created_at": stamp})
    except UniqueViolation as error:
        if "name" in error.columns:
            raise ConflictError(f"name {server_name!r} is already used by another MCP server of agent {agent_id}",
                                field="name", value=server_name) from None
        raise
    return AgentMcpServer(AgentMcpServerId(server_id), scope.tenant_id, AgentId(agent_id), server_name, server_url,
                          config or {}, stamp)


def get_mcp_server(tx: Tx, scope: Scope, server_id: str) -> AgentMcpServer:
    server_id = parse_id(server_id, "agent-mcp-server", field="server_id")
    row = tx.one(_MCP_BY_ID, {"tenant_id": scope.tenant_id, "server_id": server_id})
    if row is None:
        raise NotFoundError("MCP server", server_id)
    return _mcp(row)


def list_mcp_servers(tx: Tx, scope: Scope, agent_id: str | agents.Agent,
                     *, after: Sequence[Any] | None = None, limit: int | None = None) -> list[AgentMcpServer]:
    """The agent's MCP servers by name; an agent not in the tenant is :class:`NotFoundError` (all, or a page).

    An :class:`~agentfy.store.repos.agents.Agent` record instead of an ID is one the caller already resolved in
    the tenant (a run's agent): it is not read again, only its tenant compared with the scope's — a statement
    less on every run's opening transaction."""
    if isinstance(agent_id, agents.Agent):
        if agent_id.tenant_id != scope.tenant_id:
            raise NotFoundError("agent", agent_id.id)
        agent = agent_id
    else:
        agent = agents.get_agent(tx, scope, parse_id(agent_id, "agent"))
    return MCP_PAGES.fetch(tx, {"tenant_id": scope.tenant_id, "agent_id": agent.id}, _mcp, after=after, limit=limit)


def delete_mcp_server(tx: Tx, scope: Scope, server_id: str) -> None:
    server_id = parse_id(server_id, "agent-mcp-server", field="server_id")
    if tx.execute(_DELETE_MCP, {"tenant_id": scope.tenant_id, "server_id": server_id}).rowcount == 0:
        raise NotFoundError("MCP server", server_id)
