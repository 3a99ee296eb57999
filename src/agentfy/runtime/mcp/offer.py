"""An agent's MCP tools for one run, and one server's status for the admin API.

For a run: the agent's server records are read in the run's opening transaction (:meth:`McpTools.servers_in`,
in the runtime's worker thread with the rest of the turn, so an agent with no servers costs one query and no
hop of its own; :meth:`McpTools.for_run` reads them in a transaction of its own) — the agent's tenant, the
agent's ID: another organization's agent of the same key has other rows, and never these — each checked by
:func:`~agentfy.runtime.mcp.servers.parse_target` — a record that no longer passes (a command since removed
from ``mcp.allowed_commands``) is skipped with a log line — and given its credential header.  Every server is
then listed at once, on the event loop with no transaction open (:meth:`McpTools.offer`), each within
``mcp.connect_timeout_seconds``; each tool becomes a :class:`~agentfy.runtime.tools.Tool` named
``mcp__<server>__<tool>`` (:mod:`agentfy.runtime.mcp.naming`) with
the server's own input schema.  A server that cannot be reached, or whose credential is missing, offers no
tools in that run, and the run's system prompt says so (:attr:`RunTools.note`): the run goes on.

A call's result, or its error, is the tool's answer (:mod:`agentfy.runtime.mcp.results`): the model reads it
and the run goes on; a call slower than its timeout is answered as an error too.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from agentfy.identity import Scope
from agentfy.runtime.mcp.connections import McpConnections, McpUnavailable, ServerKey
from agentfy.runtime.mcp.naming import model_tool_name
from agentfy.runtime.mcp.results import result_text
from agentfy.runtime.mcp.servers import ServerTarget, parse_target
from agentfy.runtime.mcp.settings import DEFAULT_MCP_SETTINGS, McpSettings
from agentfy.runtime.model import ToolSpec
from agentfy.runtime.tools import Tool, ToolEnv, ToolError
from agentfy.store.db import Database, Tx
from agentfy.store.errors import InvalidInputError, NotFoundError
from agentfy.store.repos import credentials, links
from agentfy.store.repos.agents import Agent
from agentfy.store.repos.credentials import CredentialCipher, CredentialDecryptionError
from agentfy.store.repos.links import AgentMcpServer

if TYPE_CHECKING:
    from mcp_types import Tool as McpTool

logger: Final = logging.getLogger("agentfy.runtime.mcp")

#: The longest tool description shown to the model (characters): a server's text is not ours to trust in size.
DESCRIPTION_MAX_LENGTH: Final = 2_000
CONNECTED: Final = "connected"
ERROR: Final = "error"


@dataclass(frozen=True, slots=True)
class RunTools:
    """What one run offers: the built-in tools and the agent's MCP tools by name, and ``note`` — text for the
    end of the system prompt naming the servers that are unavailable in this run (``""`` when none is)."""

    tools: Mapping[str, Tool]
    note: str = ""


@dataclass(frozen=True, slots=True)
class OfferedTool:
    """One MCP tool: the name the model is shown, the server's own name for it, its description and schema."""

    model_name: str
    name: str
    description: str
    input_schema: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """A server as a run would find it now: ``status`` :data:`CONNECTED` with its tools, or :data:`ERROR`
    with the reason."""

    server: AgentMcpServer
    status: str
    error: str | None
    tools: tuple[OfferedTool, ...] = ()


@dataclass(frozen=True, slots=True)
class _Reachable:
    """A record ready to connect to, with its credential's header (``problem``: why it cannot be, this run)."""

    record: AgentMcpServer
    target: ServerTarget
    headers: Mapping[str, str]
    problem: str | None = None

    @property
    def key(self) -> ServerKey:
        return ServerKey(self.record.tenant_id, self.record.id)


#: An agent's servers as a run found them (:meth:`McpTools.servers_in`): opaque to the runtime.
McpServers = tuple[_Reachable, ...]


def _parameters(tool: McpTool) -> dict[str, Any] | None:
    """The tool's input schema as a model's tool parameters (an object schema), or ``None`` if it is none."""
    schema = dict(tool.input_schema) if isinstance(tool.input_schema, Mapping) else {}
    schema.setdefault("type", "object")
    if schema["type"] != "object":
        return None
    schema.setdefault("properties", {})
    return schema


class McpTools:
    """The agent's MCP tools (see the module docstring), over this process's pooled connections.

    ``cipher`` decrypts the organization's credentials a server's ``config.credential`` names (``None``: a
    server that needs one is unavailable, saying why)."""

    def __init__(self, settings: McpSettings | None = None, *, cipher: CredentialCipher | None = None) -> None:
        self.settings = settings if settings is not None else DEFAULT_MCP_SETTINGS
        self.cipher = cipher
        self.connections = McpConnections(self.settings)

    async def aclose(self) -> None:
        """Close this loop's connections (shutdown)."""
        await self.connections.aclose()

    # -- a run --------------------------------------------------------------------------------------------
    async def for_run(self, db: Database, agent: Agent, builtin: Mapping[str, Tool]) -> RunTools:
        """``builtin`` and the agent's MCP tools, and the note on servers unavailable in this run."""
        return await self.offer(agent, await asyncio.to_thread(self._servers_of, db, agent), builtin)

    def servers_in(self, tx: Tx, agent: Agent) -> McpServers:
        """The agent's servers a run can try, read in ``tx`` (the run's own transaction, in its worker thread):
        hand them to :meth:`offer` once the transaction is over."""
        scope = Scope(agent.tenant_id)
        records = links.list_mcp_servers(tx, scope, agent)  # the run's record: not read again
        return tuple(server for record in records if (server := self._reachable(tx, scope, record)) is not None)

    async def offer(self, agent: Agent, servers: McpServers, builtin: Mapping[str, Tool]) -> RunTools:
        """``builtin`` and the tools of ``servers`` (:meth:`servers_in`), listed at once, and the note on
        servers unavailable in this run."""
        if not servers:
            return RunTools(builtin)
        listed = await asyncio.gather(*(self._listed(server) for server in servers))
        tools = dict(builtin)
        down: list[str] = []
        for server, (found, problem) in zip(servers, listed, strict=True):
            if problem is not None:
                logger.warning("mcp.server_unavailable", extra={"tenant_id": agent.tenant_id,
                                                                "server_id": server.record.id, "reason": problem})
                down.append(f"{server.record.name!r} ({problem})")
                continue
            for offered in self._offered(server, found, taken=tools):
                tools[offered.model_name] = self._tool(server, offered)
        return RunTools(MappingProxyType(tools), _note(down))

    def _servers_of(self, db: Database, agent: Agent) -> McpServers:
        """Worker thread: the agent's records that pass the rule, each with its credential header."""
        with db.transaction(write=False) as tx:
            return self.servers_in(tx, agent)

    def _reachable(self, tx: Tx, scope: Scope, record: AgentMcpServer) -> _Reachable | None:
        try:
            target = parse_target(record.url, record.config, self.settings)
        except InvalidInputError as error:
            logger.warning("mcp.server_ignored", extra={"tenant_id": record.tenant_id, "server_id": record.id,
                                                        "reason": str(error)})
            return None
        if target.credential is None:
            return _Reachable(record, target, {})
        if self.cipher is None:
            return _Reachable(record, target, {}, f"credential {target.credential!r} cannot be read: this server "
                                                  f"has no credentials key (${credentials.KEY_ENV})")
        try:
            secret = credentials.get_credential(tx, scope, self.cipher, target.credential).decode()
        except NotFoundError:
            return _Reachable(record, target, {}, f"credential {target.credential!r} is not stored in this "
                                                  "organization")
        except (CredentialDecryptionError, UnicodeDecodeError):
            return _Reachable(record, target, {}, f"credential {target.credential!r} cannot be decrypted here")
        return _Reachable(record, target, {target.header: target.header_value(secret)})

    async def _listed(self, server: _Reachable) -> tuple[list[McpTool], str | None]:
        """The server's tools, or why there are none: connecting and listing (a retry included) take at most
        ``mcp.connect_timeout_seconds`` together, so a slow server delays a run by that at most."""
        if server.problem is not None:
            return [], server.problem
        from mcp import MCPError  # noqa: PLC0415 (the SDK is imported with the first connection, not at start)

        budget = self.settings.connect_timeout_seconds
        try:
            listing = self.connections.list_tools(server.key, server.target, server.headers)
            return await asyncio.wait_for(listing, budget), None
        except TimeoutError:
            return [], f"no answer within {budget:g} seconds"
        except (McpUnavailable, MCPError) as error:
            return [], str(error)

    def _offered(self, server: _Reachable, found: list[McpTool], *, taken: Mapping[str, object]) -> list[OfferedTool]:
        offered: list[OfferedTool] = []
        names = set(taken)
        for tool in found:
            parameters = _parameters(tool)
            if parameters is None:
                logger.warning("mcp.tool_skipped", extra={"server_id": server.record.id, "tool": tool.name[:100],
                                                          "reason": "its input schema is not an object schema"})
                continue
            name = model_tool_name(server.record.name, tool.name, taken=names)
            names.add(name)
            text = tool.description or tool.title or ""
            description = f"(MCP server {server.record.name!r}) {text}".strip()[:DESCRIPTION_MAX_LENGTH]
            offered.append(OfferedTool(name, tool.name, description, parameters))
        return offered

    def _tool(self, server: _Reachable, offered: OfferedTool) -> Tool:
        """The runtime's tool for one MCP tool: its answer is the call's result, or the reason it failed."""
        timeout = server.target.timeout or self.settings.call_timeout_seconds

        async def run(env: ToolEnv, arguments: Mapping[str, Any]) -> str:
            from mcp import MCPError  # noqa: PLC0415 (imported by the connection that listed this tool)

            try:
                result = await self.connections.call_tool(server.key, server.target, server.headers, offered.name,
                                                           arguments)
            except TimeoutError:
                raise ToolError(f"{offered.model_name}: MCP server {server.record.name!r} did not answer within "
                                f"{timeout:g} seconds") from None
            except McpUnavailable as error:
                raise ToolError(f"{offered.model_name}: MCP server {server.record.name!r} is unavailable: "
                                f"{error}") from None
            except MCPError as error:
                raise ToolError(f"{offered.model_name}: MCP server {server.record.name!r} refused the call: "
                                f"{error}") from None
            return result_text(result)

        return Tool(ToolSpec(offered.model_name, offered.description, offered.input_schema), run)

    # -- the admin API ------------------------------------------------------------------------------------
    async def status(self, db: Database, scope: Scope, server_id: str) -> ServerStatus:
        """The server ``server_id`` of the scope's tenant (:class:`NotFoundError` otherwise, another tenant's
        included) as a run would find it now: connected with its tools, or the reason it is not."""
        def read() -> tuple[AgentMcpServer, _Reachable | None, str | None]:
            with db.transaction(write=False) as tx:
                record = links.get_mcp_server(tx, scope, server_id)
                try:
                    parse_target(record.url, record.config, self.settings)
                except InvalidInputError as error:
                    return record, None, f"ignored by runs: {error}"
                return record, self._reachable(tx, scope, record), None

        record, server, refused = await asyncio.to_thread(read)
        if server is None:
            return ServerStatus(record, ERROR, refused)
        found, problem = await self._listed(server)
        if problem is not None:
            return ServerStatus(record, ERROR, problem)
        return ServerStatus(record, CONNECTED, None, tuple(self._offered(server, found, taken={})))


def _note(down: list[str]) -> str:
    if not down:
        return ""
    return ("\n\n## Unavailable tools\nThese MCP servers could not be reached for this run, so their tools are "
            f"not offered: {'; '.join(down)}.  Tell the person if they ask for something only those tools do.")
