"""Runs with an agent's MCP servers: a real MCP server (the official SDK, Streamable HTTP and SSE on a local
port) and the local OpenAI-compatible model.  The model is offered ``mcp__<server>__<tool>`` with the server's
schema; its call reaches the server with its arguments and the result goes back in the next request; a
failing, slow or unreachable server never fails the run; another organization's agent of the same key is
never offered the tools (both engines)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentfy.agents.router import Router
from agentfy.permissions.channels import telegram_context
from agentfy.runtime.inbound import Reply
from agentfy.runtime.mcp.offer import McpTools
from agentfy.runtime.mcp.settings import McpSettings
from agentfy.runtime.providers import Providers
from agentfy.runtime.runner import Runtime
from agentfy.store.db import Database
from agentfy.store.repos import credentials, links
from agentfy.store.repos.credentials import CredentialCipher
from tests.helpers.fake_openai import Completion, FakeOpenAI, FakeToolCall
from tests.helpers.mcp_server import WeatherServer, closed_port_url
from tests.helpers.tenants import Tenant, make_tenant
from tests.runtime.helpers import inbound, run

CIPHER = CredentialCipher(os.urandom(32))


@pytest.fixture(scope="module")
def weather_server() -> Iterator[WeatherServer]:
    with WeatherServer() as server:
        yield server


@pytest.fixture
def weather(weather_server: WeatherServer) -> WeatherServer:
    weather_server.calls.clear()
    weather_server.headers.clear()
    return weather_server


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def _tenant(db: Database, slug: str, fake: FakeOpenAI) -> Tenant:
    return make_tenant(db, slug, agent_key="bot", config={"model": {
        "provider": "openai", "base_url": fake.url, "model": "gpt-test"}})


def _register(db: Database, tenant: Tenant, url: str, config: dict[str, Any] | None = None,
              name: str = "weather") -> None:
    assert tenant.bot is not None
    with db.transaction() as tx:
        links.add_mcp_server(tx, tenant.scope, tenant.bot.id, name=name, url=url, config=config)


def _send(db: Database, tmp_path: Path, tenant: Tenant, text: str, *,
          settings: McpSettings | None = None) -> Reply:
    providers = Providers(cipher=CIPHER)
    mcp = McpTools(settings, cipher=CIPHER)
    runtime = Runtime(db, Router(db), workspace_root=tmp_path, providers=providers, mcp=mcp)

    async def go() -> Reply:
        try:
            return await runtime(inbound(tenant, telegram_context(555, 1001, is_group=False,
                                                                  tenant_id=tenant.id), text))
        finally:
            await providers.aclose()
            await mcp.aclose()

    try:
        return run(go())
    finally:
        runtime.close()


def _offered(body: Any) -> dict[str, Any]:
    return {tool["function"]["name"]: tool["function"] for tool in body.get("tools", ())}


def test_the_model_is_offered_the_tool_and_its_call_reaches_the_server(db: Database, tmp_path: Path,
                                                                       fake: FakeOpenAI,
                                                                       weather: WeatherServer) -> None:
    acme = _tenant(db, "acme", fake)
    _register(db, acme, weather.url)
    fake.script(Completion(tool_calls=[FakeToolCall("c1", "mcp__weather__forecast", {"city": "Oslo", "days": 2})]),
                Completion(text="Sunny in Oslo for two days."))

    reply = _send(db, tmp_path, acme, "weather in Oslo?")

    assert reply.text == "Sunny in Oslo for two days."
    first, second = fake.requests
    forecast = _offered(first.body)["mcp__weather__forecast"]
    assert "The weather forecast for a city." in forecast["description"]
    assert forecast["parameters"]["properties"]["city"]["type"] == "string"
    assert forecast["parameters"]["properties"]["days"]["type"] == "integer"
    assert forecast["parameters"]["required"] == ["city"]
    assert "search_memory" in _offered(first.body)  # the built-in tools are still there
    assert weather.calls == [("forecast", {"city": "Oslo", "days": 2})]
    result = second.body["messages"][-1]
    assert result["role"] == "tool" and result["tool_call_id"] == "c1"
    assert json.loads(result["content"]) == {"city": "Oslo", "days": 2, "sky": "sunny"}


def test_sse_with_the_organizations_credential_and_a_tool_error_the_model_reads(db: Database, tmp_path: Path,
                                                                                  fake: FakeOpenAI,
                                                                                  weather: WeatherServer) -> None:
    acme = _tenant(db, "acme", fake)
    with db.transaction() as tx:
        credentials.put_credential(tx, acme.scope, CIPHER, "weather-token", b"wt-secret")
    _register(db, acme, weather.sse_url, {"transport": "sse", "credential": "weather-token"})
    fake.script(Completion(tool_calls=[FakeToolCall("c1", "mcp__weather__fail", {})]),
                Completion(text="The station is down, sorry."))

    reply = _send(db, tmp_path, acme, "weather?")

    assert reply.text == "The station is down, sorry."
    assert weather.calls == [("fail", {})]
    assert weather.headers and all(h.get("authorization") == "Bearer wt-secret" for h in weather.headers)
    result = fake.requests[1].body["messages"][-1]["content"]
    assert result.startswith("error: ") and "fail" in result


def test_a_call_slower_than_its_timeout_is_an_error_result(db: Database, tmp_path: Path, fake: FakeOpenAI,
                                                            weather: WeatherServer) -> None:
    acme = _tenant(db, "acme", fake)
    _register(db, acme, weather.url)
    fake.script(Completion(tool_calls=[FakeToolCall("c1", "mcp__weather__slow", {"seconds": 3})]),
                Completion(text="It took too long."))

    reply = _send(db, tmp_path, acme, "slow please", settings=McpSettings(call_timeout_seconds=0.3))

    assert reply.text == "It took too long."
    result = fake.requests[1].body["messages"][-1]["content"]
    assert result == "error: mcp__weather__slow: MCP server 'weather' did not answer within 0.3 seconds"


def test_a_server_that_is_down_leaves_its_tools_out_and_the_model_is_told(db: Database, tmp_path: Path,
                                                                          fake: FakeOpenAI) -> None:
    acme = _tenant(db, "acme", fake)
    _register(db, acme, closed_port_url())
    fake.script(Completion(text="I cannot check the weather right now."))

    reply = _send(db, tmp_path, acme, "weather?", settings=McpSettings(connect_timeout_seconds=5))

    assert reply.text == "I cannot check the weather right now."
    (request,) = fake.requests
    assert not [name for name in _offered(request.body) if name.startswith("mcp__")]
    system = request.body["messages"][0]
    assert system["role"] == "system" and "Unavailable tools" in system["content"]
    assert "'weather' (connecting failed" in system["content"]


def test_a_missing_credential_makes_the_server_unavailable_not_the_run(db: Database, tmp_path: Path,
                                                                       fake: FakeOpenAI,
                                                                       weather: WeatherServer) -> None:
    acme = _tenant(db, "acme", fake)
    _register(db, acme, weather.url, {"credential": "nowhere"})
    fake.script(Completion(text="No weather today."))

    assert _send(db, tmp_path, acme, "weather?").text == "No weather today."
    system = fake.requests[0].body["messages"][0]["content"]
    assert "credential 'nowhere' is not stored in this organization" in system
    assert weather.headers == []  # never connected


def test_another_organizations_agent_of_the_same_key_is_never_offered_the_tools(db: Database, tmp_path: Path,
                                                                                fake: FakeOpenAI,
                                                                                weather: WeatherServer) -> None:
    acme, globex = _tenant(db, "acme", fake), _tenant(db, "globex", fake)
    _register(db, acme, weather.url)
    fake.script(Completion(tool_calls=[FakeToolCall("c1", "mcp__weather__forecast", {"city": "Oslo"})]),
                Completion(text="I have no such tool."))

    reply = _send(db, tmp_path, globex, "weather in Oslo?")

    assert reply.text == "I have no such tool."
    first, second = fake.requests
    assert not [name for name in _offered(first.body) if name.startswith("mcp__")]
    assert second.body["messages"][-1]["content"].startswith("error: there is no tool 'mcp__weather__forecast'")
    assert weather.calls == []


def test_a_stdio_server_runs_only_when_its_command_is_allowed(db: Database, tmp_path: Path,
                                                              fake: FakeOpenAI) -> None:
    command = f"{sys.executable} -m tests.helpers.mcp_server"
    acme = _tenant(db, "acme", fake)
    _register(db, acme, f"stdio:{command}", name="local")
    # The server is a new Python process importing the MCP SDK: on a loaded machine its start alone can take
    # longer than the default connect timeout, and this test is about the allow-list, not about that timeout.
    allowed = McpSettings(allowed_commands=(command,), connect_timeout_seconds=60)
    fake.script(Completion(tool_calls=[FakeToolCall("c1", "mcp__local__forecast", {"city": "Rome"})]),
                Completion(text="Sunny in Rome."), Completion(text="Nothing to offer."))

    assert _send(db, tmp_path, acme, "Rome?", settings=allowed).text == "Sunny in Rome."
    assert json.loads(fake.requests[1].body["messages"][-1]["content"])["city"] == "Rome"

    # The platform no longer allows it: the record is ignored (a log line), never run.
    assert _send(db, tmp_path, acme, "Rome?").text == "Nothing to offer."
    assert "mcp__local__forecast" not in _offered(fake.requests[2].body)
