"""MCP tool-call overhead: one call of an MCP server's tool as a run makes it against the same call made with
the official SDK's client directly, measured in the same run.

Run: ``make bench-mcp`` (or ``.venv/bin/python -m bench.mcp_calls``).  On 127.0.0.1 only: a real MCP server built
with the SDK (the tests' ``WeatherServer``, Streamable HTTP) in this process's threads; an embedded SQLite
database with an organization, an agent and the server registered to it.

* **agentfy**: the tool as :meth:`agentfy.runtime.mcp.offer.McpTools.for_run` offers it to a run
  (``mcp__weather__forecast``), called through :func:`agentfy.runtime.toolbox.run_tool` — the arguments
  checked against the server's schema, the pooled connection, the result turned into the model's text;
* **sdk**: ``mcp.Client.call_tool`` on a connection of its own, opened once.

Rounds alternate (the order swapped every round); printed: calls per second of each side (median of the
rounds) and the ratio (goal: at least 1/1.2 = 0.83x, i.e. within 1.2x of the SDK's time per call).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from tests.helpers.mcp_server import WeatherServer

from agentfy.agents.router import Router
from agentfy.identity import Scope
from agentfy.permissions.channels import http_context
from agentfy.runtime.model import ToolCall
from agentfy.runtime.runner import Runtime
from agentfy.runtime.toolbox import TOOLS, run_tool
from agentfy.runtime.tools import ToolEnv
from agentfy.store.db import Database
from agentfy.store.migrate import upgrade
from agentfy.store.repos import agents, links, orgs
from bench.harness import header
from bench.verdicts import record

GOAL: float = 1 / 1.2
TOOL = "mcp__weather__forecast"
ARGUMENTS = {"city": "Oslo", "days": 2}


async def _rates(calls: int, rounds: int, url: str, db: Database, root: Path) -> tuple[list[float], list[float]]:
    with db.transaction() as tx:
        org = orgs.create_organization(tx, slug="bench", name="Bench")
        scope = Scope(org.id)
        agent = agents.create_agent(tx, scope, agent_key="bot")
        links.add_mcp_server(tx, scope, agent.id, name="weather", url=url, config={})
    runtime = Runtime(db, Router(db), workspace_root=root)
    offered = await runtime.mcp.for_run(db, agent, TOOLS)
    assert TOOL in offered.tools, offered.note
    env = ToolEnv(db, agent, "bench", root, http_context("user-1", tenant_id=org.id, role="owner"), "bench",
                  "bench", runtime)
    call = ToolCall("c1", TOOL, ARGUMENTS)

    async def ours() -> None:
        answer = await run_tool(env, call, offered.tools)
        assert "sunny" in answer, answer

    async with httpx2.AsyncClient() as http, Client(streamable_http_client(url, http_client=http)) as client:
        async def sdk() -> None:
            result = await client.call_tool("forecast", dict(ARGUMENTS))
            assert not result.is_error

        async def rate(one: Callable[[], Awaitable[None]]) -> float:
            start = time.perf_counter()
            for _ in range(calls):
                await one()
            return calls / (time.perf_counter() - start)

        for _ in range(20):  # warm-up: both connections open, imports done
            await ours()
            await sdk()
        mine: list[float] = []
        theirs: list[float] = []
        for number in range(rounds):
            if number % 2 == 0:
                mine.append(await rate(ours))
                theirs.append(await rate(sdk))
            else:
                theirs.append(await rate(sdk))
                mine.append(await rate(ours))
    await runtime.mcp.aclose()
    return mine, theirs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=300, help="calls per round (default 300)")
    parser.add_argument("--rounds", type=int, default=7, help="alternating rounds (default 7, odd)")
    options = parser.parse_args()
    logging.disable(logging.INFO)  # the server's and the HTTP clients' request lines
    header("MCP tool-call overhead: agentfy's tool vs the SDK's client, one server, Streamable HTTP")
    with tempfile.TemporaryDirectory() as folder, WeatherServer() as weather:
        db = Database(f"sqlite:///{Path(folder) / 'bench.db'}")
        try:
            upgrade(db)
            mine, theirs = asyncio.run(_rates(options.calls, options.rounds, weather.url, db, Path(folder)))
        finally:
            db.dispose()
    ours, sdk = statistics.median(mine), statistics.median(theirs)
    ratio = ours / sdk
    print(f"{'agentfy run_tool(mcp__weather__forecast)':<42} {ours:>8,.0f} calls/s  ({1000 / ours:.2f} ms/call)")
    print(f"{'mcp.Client.call_tool(forecast)':<42} {sdk:>8,.0f} calls/s  ({1000 / sdk:.2f} ms/call)")
    print(f"ratio {ratio:.2f}x (time per call {1 / ratio:.2f}x the SDK's)  goal >= {GOAL:.2f}x: "
          f"{'met' if ratio >= GOAL else 'NOT met'}")
    record("mcp", "run_tool(mcp__weather__forecast) vs Client.call_tool", f"{ratio:.2f}x (goal {GOAL:.2f}x)",
           met=ratio >= GOAL)


if __name__ == "__main__":
    main()
