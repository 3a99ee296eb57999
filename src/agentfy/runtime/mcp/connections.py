"""This process's connections to MCP servers, pooled: one per (event loop, tenant, server ID), reused by every
run of the agent, replaced when the server's URL or credential changes, and reconnected after a failure.

A connection is an :class:`mcp.Client` entered and left by a task of its own (the SDK's transports are anyio
task groups, which must be left by the task that entered them), so runs in any task of the loop share it.
When listing or calling fails on a connection (the server restarted and forgot the session, the network
broke), the connection is dropped; listing then tries once more on a fresh one, so a server that came back
is found again within the same run.  A tool call is not retried: it may have done its work before failing.

Keyed by the tenant and the server's ID (a server's ID is one tenant's row, and the pool never hands one
tenant's connection to another's key), and by the event loop, because a connection's sockets belong to the
loop that opened them.  :meth:`McpConnections.aclose` closes those of the running loop (shutdown).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from agentfy.runtime.mcp.servers import SSE, STDIO, ServerTarget
from agentfy.runtime.mcp.settings import McpSettings

if TYPE_CHECKING:  # the SDK is imported when a connection opens (see _open), not with the gateway
    from mcp import Client
    from mcp_types import CallToolResult, Tool

logger: Final = logging.getLogger("agentfy.runtime.mcp")

#: How long an SSE or streamable-HTTP stream may stay silent before the SDK gives it up (seconds).
STREAM_READ_TIMEOUT_SECONDS: Final = 300.0
#: How long closing one connection may take at shutdown or replacement (seconds).
CLOSE_TIMEOUT_SECONDS: Final = 5.0
#: The longest failure reason kept (a server's error text can be long).
REASON_MAX_LENGTH: Final = 300
#: The most tool-list pages read from one server (a server whose cursor never ends cannot hang a run).
LIST_PAGES_MAX: Final = 20


class McpUnavailable(Exception):
    """The server could not be reached or did not answer; ``str()`` is the reason, safe to show (no secret)."""


def reason_of(error: BaseException) -> str:
    """A short reason for ``error``: the first leaf of an exception group, its type and message."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    if isinstance(error, TimeoutError):
        return "timed out"
    text = str(error).strip()
    reason = f"{type(error).__name__}: {text}" if text else type(error).__name__
    return reason if len(reason) <= REASON_MAX_LENGTH else reason[:REASON_MAX_LENGTH] + "…"


@dataclass(frozen=True, slots=True)
class ServerKey:
    """Which connection: the tenant and the server's ID (never one without the other)."""

    tenant_id: str
    server_id: str


@dataclass(eq=False)
class _Connection:
    loop: asyncio.AbstractEventLoop
    fingerprint: str
    ready: asyncio.Future[Client]
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None

    async def close(self) -> None:
        self.stop.set()
        if self.task is not None and not self.task.done():
            try:
                await asyncio.wait_for(asyncio.shield(self.task), CLOSE_TIMEOUT_SECONDS)
            except (TimeoutError, asyncio.CancelledError):
                self.task.cancel()


def _fingerprint(target: ServerTarget, headers: Mapping[str, str]) -> str:
    """What a connection was opened with (a changed URL or a rotated credential means a new connection); a
    digest, so no secret is kept in the pool's keys."""
    text = repr((target.transport, target.url, target.command, sorted(headers.items())))
    return hashlib.sha256(text.encode()).hexdigest()


class McpConnections:
    """The pool (see the module docstring)."""

    def __init__(self, settings: McpSettings) -> None:
        self.settings = settings
        self._connections: dict[tuple[int, ServerKey], _Connection] = {}

    def __repr__(self) -> str:  # never the keys' headers
        return f"McpConnections({len(self._connections)} open)"

    async def list_tools(self, key: ServerKey, target: ServerTarget, headers: Mapping[str, str]) -> list[Tool]:
        """The server's tools; on a failure, once more on a fresh connection, then :class:`McpUnavailable`."""
        for attempt in (1, 2):
            client = await self._client(key, target, headers)
            try:
                return await asyncio.wait_for(_all_tools(client), self.settings.connect_timeout_seconds)
            except (Exception, asyncio.CancelledError) as error:
                if isinstance(error, asyncio.CancelledError) and _cancelling():
                    raise
                await self.drop(key)
                if attempt == 2:
                    raise McpUnavailable(f"listing its tools failed: {reason_of(error)}") from error
        raise AssertionError("unreachable")

    async def call_tool(self, key: ServerKey, target: ServerTarget, headers: Mapping[str, str], name: str,
                        arguments: Mapping[str, Any]) -> CallToolResult:
        """One call, within the server's timeout (its ``config.timeout``, else the setting); a timeout is
        :class:`TimeoutError`, a broken connection :class:`McpUnavailable` (and the connection is dropped)."""
        timeout = target.timeout or self.settings.call_timeout_seconds
        client = await self._client(key, target, headers)
        try:
            return await asyncio.wait_for(client.call_tool(name, dict(arguments)), timeout)
        except TimeoutError:
            raise
        except Exception as error:
            await self.drop(key)
            raise McpUnavailable(f"the call failed: {reason_of(error)}") from error

    async def drop(self, key: ServerKey) -> None:
        """Close the loop's connection for ``key``, if any: the next use reconnects."""
        connection = self._connections.pop((id(asyncio.get_running_loop()), key), None)
        if connection is not None:
            await connection.close()

    async def aclose(self) -> None:
        """Close every connection of the running loop (the others' loops are gone, and their sockets)."""
        loop = asyncio.get_running_loop()
        mine = [slot for slot, connection in self._connections.items() if connection.loop is loop]
        closing = [self._connections.pop(slot) for slot in mine]
        await asyncio.gather(*(connection.close() for connection in closing), return_exceptions=True)
        self._connections = {slot: c for slot, c in self._connections.items() if not c.loop.is_closed()}

    async def _client(self, key: ServerKey, target: ServerTarget, headers: Mapping[str, str]) -> Client:
        """The loop's open client for ``key`` (opened now when there is none, or when it was opened with
        another URL or credential, or its task has ended), within the connect timeout."""
        loop = asyncio.get_running_loop()
        slot = (id(loop), key)
        fingerprint = _fingerprint(target, headers)
        connection = self._connections.get(slot)
        if connection is not None and (connection.loop is not loop or connection.fingerprint != fingerprint
                                       or (connection.task is not None and connection.task.done())):
            del self._connections[slot]
            if connection.loop is loop:
                await connection.close()
            connection = None
        if connection is None:
            connection = self._connections[slot] = _Connection(loop, fingerprint, loop.create_future())
            connection.task = loop.create_task(self._hold(connection, target, dict(headers)),
                                               name=f"mcp:{key.tenant_id}:{key.server_id}")
        try:
            return await asyncio.wait_for(asyncio.shield(connection.ready), self.settings.connect_timeout_seconds)
        except (Exception, asyncio.CancelledError) as error:
            if isinstance(error, asyncio.CancelledError) and _cancelling():
                raise
            if self._connections.get(slot) is connection:
                del self._connections[slot]
            await connection.close()
            raise McpUnavailable(f"connecting failed: {reason_of(error)}") from error

    async def _hold(self, connection: _Connection, target: ServerTarget, headers: dict[str, str]) -> None:
        """The connection's own task: open the client, hand it over, keep it until told to stop."""
        try:
            async with AsyncExitStack() as stack:
                client = await stack.enter_async_context(await self._open(stack, target, headers))
                connection.ready.set_result(client)
                await connection.stop.wait()
        except Exception as error:
            if not connection.ready.done():
                connection.ready.set_exception(error)
            else:
                logger.info("mcp.connection_lost", extra={"reason": reason_of(error)})
        finally:
            if not connection.ready.done():
                connection.ready.set_exception(McpUnavailable("the connection closed before it was ready"))
            # An exception nobody awaited (the run gave up first) must not be logged as never retrieved.
            with contextlib.suppress(BaseException):
                connection.ready.exception()

    async def _open(self, stack: AsyncExitStack, target: ServerTarget, headers: dict[str, str]) -> Client:
        """A client for ``target`` (not entered yet); the HTTP client it needs is closed with ``stack``.

        The SDK is imported here, by the first connection a process opens: it costs seconds of CPU to import,
        and every gateway and worker process would pay that at start whether or not any agent has a server."""
        import httpx2  # noqa: PLC0415
        from mcp import Client, StdioServerParameters  # noqa: PLC0415
        from mcp.client.sse import sse_client  # noqa: PLC0415
        from mcp.client.streamable_http import streamable_http_client  # noqa: PLC0415

        if target.transport == STDIO:
            return Client(StdioServerParameters(command=target.command[0], args=list(target.command[1:])))
        assert target.url is not None
        connect = self.settings.connect_timeout_seconds
        if target.transport == SSE:
            return Client(sse_client(target.url, headers=headers, timeout=connect,
                                     sse_read_timeout=STREAM_READ_TIMEOUT_SECONDS))
        http = await stack.enter_async_context(httpx2.AsyncClient(
            headers=headers, timeout=httpx2.Timeout(connect, read=STREAM_READ_TIMEOUT_SECONDS)))
        return Client(streamable_http_client(target.url, http_client=http))


def _cancelling() -> bool:
    """Whether the current task itself is being cancelled (not just an awaited operation)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


async def _all_tools(client: Client) -> list[Tool]:
    tools: list[Tool] = []
    cursor: str | None = None
    for _ in range(LIST_PAGES_MAX):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools
