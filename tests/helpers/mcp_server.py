"""A real MCP server for tests, built with the official SDK (``MCPServer``, which version 2 of the SDK calls
what version 1 called ``FastMCP``) and served over Streamable HTTP and SSE on a free port of 127.0.0.1 by
:class:`~tests.helpers.served.ServedApp`.  Usage::

    with WeatherServer() as weather:
        weather.url                      # http://127.0.0.1:<port>/mcp (Streamable HTTP)
        weather.sse_url                  # http://127.0.0.1:<port>/sse
        weather.calls                    # [("forecast", {"city": "Oslo", "days": 2}), ...] as the server got them
        weather.headers                  # each HTTP request's headers (lower-case names)

Its tools: ``forecast(city, days=1)`` (text and structured content), ``fail()`` (raises: an error result),
``slow(seconds)`` (sleeps: a timeout test).
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Mapping
from typing import Any, Self

from mcp.server import MCPServer
from mcp_types import CallToolResult, Tool
from starlette.applications import Starlette
from starlette.routing import Mount

from agentfy.runtime.mcp.connections import McpConnections, McpUnavailable, ServerKey
from agentfy.runtime.mcp.servers import ServerTarget
from agentfy.runtime.mcp.settings import McpSettings
from tests.helpers.served import ServedApp


class _Recording:
    """ASGI middleware keeping each HTTP request's headers."""

    def __init__(self, app: Any, headers: list[Mapping[str, str]], lock: threading.Lock) -> None:
        self.app, self.headers, self.lock = app, headers, lock

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            with self.lock:
                self.headers.append({k.decode().lower(): v.decode() for k, v in scope["headers"]})
        await self.app(scope, receive, send)


class WeatherServer:
    """The MCP server described in the module docstring (``name`` is its server name; ``port``: a free one
    when 0)."""

    def __init__(self, name: str = "weather", *, port: int = 0) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.headers: list[Mapping[str, str]] = []
        self._lock = threading.Lock()
        server = MCPServer(name)

        @server.tool()
        def forecast(city: str, days: int = 1) -> dict[str, Any]:
            """The weather forecast for a city."""
            self._record("forecast", {"city": city, "days": days})
            return {"city": city, "days": days, "sky": "sunny"}

        @server.tool()
        def fail() -> str:
            """Always fails."""
            self._record("fail", {})
            raise ValueError("the weather station is on fire")

        @server.tool()
        async def slow(seconds: float) -> str:
            """Answers after a while."""
            self._record("slow", {"seconds": seconds})
            await asyncio.sleep(seconds)
            return "finally"

        streamable = server.streamable_http_app()
        sse = server.sse_app()
        # One lifespan (the streamable app's session manager), both transports' routes.
        app = Starlette(routes=[*streamable.routes, Mount("/", routes=sse.routes)],
                        lifespan=streamable.router.lifespan_context)
        self._served = ServedApp(_Recording(app, self.headers, self._lock), name=f"mcp-{name}", lifespan="on",
                                  port=port)

    def _record(self, tool: str, arguments: dict[str, Any]) -> None:
        with self._lock:
            self.calls.append((tool, arguments))

    @property
    def url(self) -> str:
        return f"{self._served.url}/mcp"

    @property
    def sse_url(self) -> str:
        return f"{self._served.url}/sse"

    def start(self) -> Self:
        self._served.start()
        return self

    def stop(self) -> None:
        self._served.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def closed_port_url() -> str:
    """An http URL on 127.0.0.1 where nothing listens (a server that is down): a port bound and released."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/mcp"


class NoNetwork(McpConnections):
    """Connections that never open a socket: every server is unavailable.  For tests whose MCP server URLs are
    generated (Schemathesis) and must never reach the network, as the model's URLs reach a mock."""

    def __init__(self) -> None:
        super().__init__(McpSettings())

    async def list_tools(self, key: ServerKey, target: ServerTarget, headers: Mapping[str, str]) -> list[Tool]:
        raise McpUnavailable("connecting failed: this test reaches no network")

    async def call_tool(self, key: ServerKey, target: ServerTarget, headers: Mapping[str, str], name: str,
                        arguments: Mapping[str, Any]) -> CallToolResult:
        raise McpUnavailable("the call failed: this test reaches no network")


if __name__ == "__main__":  # the stdio server of the allowed-command test: `python -m tests.helpers.mcp_server`
    stdio = MCPServer("local")

    @stdio.tool()
    def forecast(city: str) -> dict[str, Any]:
        """The weather forecast for a city."""
        return {"city": city, "sky": "sunny"}

    stdio.run("stdio")
