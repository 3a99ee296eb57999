"""The process's MCP connections: reused by the runs of one event loop, and found again after the server was
down or restarted (a real MCP server on a fixed local port; both engines)."""

from __future__ import annotations

import asyncio
import socket

from agentfy.runtime.mcp.offer import McpTools
from agentfy.runtime.mcp.settings import McpSettings
from agentfy.runtime.toolbox import TOOLS
from agentfy.store.db import Database
from agentfy.store.repos import links
from tests.helpers.mcp_server import WeatherServer
from tests.helpers.tenants import make_tenant
from tests.runtime.helpers import run

FORECAST = "mcp__weather__forecast"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_runs_reuse_the_connection_and_find_a_server_again_after_it_was_down_or_restarted(db: Database) -> None:
    acme = make_tenant(db, "acme", agent_key="bot")
    assert acme.bot is not None
    port = _free_port()
    with db.transaction() as tx:
        links.add_mcp_server(tx, acme.scope, acme.bot.id, name="weather", url=f"http://127.0.0.1:{port}/mcp")
    mcp = McpTools(McpSettings(connect_timeout_seconds=5))

    async def scenario() -> None:
        try:
            down = await mcp.for_run(db, acme.bot, TOOLS)
            assert FORECAST not in down.tools and "'weather' (connecting failed" in down.note

            with WeatherServer(port=port) as weather:
                up = await mcp.for_run(db, acme.bot, TOOLS)
                assert FORECAST in up.tools and up.note == ""
                opened = len(weather.headers)
                again = await mcp.for_run(db, acme.bot, TOOLS)
                assert FORECAST in again.tools
                assert len(weather.headers) - opened == 1  # one tools/list over the open connection

            with WeatherServer(port=port) as restarted:  # the old connection's server is gone
                back = await mcp.for_run(db, acme.bot, TOOLS)
                assert FORECAST in back.tools and back.note == ""
                assert restarted.headers
        finally:
            await mcp.aclose()

    run(scenario())


def test_a_server_that_never_answers_delays_a_run_by_the_connect_timeout_at_most(db: Database) -> None:
    acme = make_tenant(db, "acme", agent_key="bot")
    assert acme.bot is not None
    with socket.socket() as silent:  # accepts connections (the backlog) and never says a word
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        with db.transaction() as tx:
            links.add_mcp_server(tx, acme.scope, acme.bot.id, name="weather",
                                 url=f"http://127.0.0.1:{silent.getsockname()[1]}/mcp")
        mcp = McpTools(McpSettings(connect_timeout_seconds=0.5))

        async def scenario() -> tuple[float, str, bool]:
            loop = asyncio.get_running_loop()
            started = loop.time()
            try:
                offered = await mcp.for_run(db, acme.bot, TOOLS)
                return loop.time() - started, offered.note, FORECAST in offered.tools
            finally:
                await mcp.aclose()

        elapsed, note, offered = run(scenario())
    assert not offered and "'weather' (" in note
    assert elapsed < 2.0
