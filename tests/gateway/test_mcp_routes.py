"""An agent's MCP servers over HTTP: registration refuses what a run would never connect to (naming the field,
nothing stored), and ``GET /v1/mcp-servers/{id}/tools`` shows a real server's tools or the reason it is
unavailable, for the caller's organization only (both engines)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from agentfy.gateway.app import create_app
from agentfy.runtime.mcp.settings import McpSettings
from agentfy.settings import Settings
from agentfy.store.db import Database
from tests.helpers.mcp_server import WeatherServer, closed_port_url
from tests.helpers.tenants import Tenant

ALLOWED = "mcp-server-time --local-timezone UTC"


@pytest.fixture(scope="module")
def weather() -> Iterator[WeatherServer]:
    with WeatherServer() as server:
        yield server


@pytest.fixture
def allowing(db: Database) -> Iterator[TestClient]:
    """A gateway whose platform allows one stdio command, and connects within 5 seconds."""
    settings = Settings(mcp=McpSettings(allowed_commands=(ALLOWED,), connect_timeout_seconds=5))
    with TestClient(create_app(db, signing_secret=b"s" * 32, settings=settings)) as test_client:
        yield test_client


def _register(client: TestClient, tenant: Tenant, body: dict[str, Any]) -> Any:
    client.post("/v1/agents", json={"agent_key": "bot"}, headers=tenant.headers())
    return client.post("/v1/agents/bot/mcp-servers", json=body, headers=tenant.headers("operator"))


@pytest.mark.parametrize(("url", "config", "field", "says"), [
    ("file:///etc/passwd", None, "url", "is not an http(s) URL"),
    ("ftp://tools.example/mcp", None, "url", "is not an http(s) URL"),
    ("stdio:rm -rf /", None, "url", "not among this platform's allowed MCP commands (setting mcp.allowed_commands)"),
    (f"stdio:{ALLOWED} --extra", None, "url", "not among this platform's allowed MCP commands"),
    ("https://tools.example/mcp", {"transport": "websocket"}, "config.transport", "is unknown"),
    ("https://tools.example/mcp", {"transport": "stdio"}, "config.transport", "is unknown"),
    ("https://tools.example/mcp", {"credential": "Not A Slug"}, "config.credential", "lower-case slug"),
    ("https://tools.example/mcp", {"header": "Bad Header:"}, "config.header", "not an HTTP header name"),
    ("https://tools.example/mcp", {"timeout": 0}, "config.timeout", "above 0"),
    ("https://tools.example/mcp", {"timeout": True}, "config.timeout", "number of seconds"),
    ("https://tools.example/mcp", {"command": "sh"}, "config.command", "is unknown"),
    (f"stdio:{ALLOWED}", {"credential": "token"}, "config.credential", "HTTP transports only"),
])
def test_registration_refuses_what_a_run_would_never_connect_to(allowing: TestClient, acme: Tenant, url: str,
                                                                 config: dict[str, Any] | None, field: str,
                                                                 says: str) -> None:
    answer = _register(allowing, acme, {"name": "tools", "url": url, "config": config})
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert (error["code"], error["field"]) == ("invalid_input", field) and says in error["message"], error
    assert error["expected"]
    assert allowing.get("/v1/agents/bot/mcp-servers", headers=acme.headers("operator")).json()["items"] == []


def test_an_allowed_command_and_the_http_transports_are_registered(allowing: TestClient, acme: Tenant) -> None:
    for name, url, config in (("time", f"stdio:{ALLOWED}", None),
                              ("search", "https://tools.example/mcp", {"credential": "search", "timeout": 20}),
                              ("legacy", "https://tools.example/sse", {"transport": "sse", "header": "X-Api-Key"})):
        assert _register(allowing, acme, {"name": name, "url": url, "config": config}).status_code == 201


def test_no_command_is_allowed_by_default(client: TestClient, acme: Tenant) -> None:
    answer = _register(client, acme, {"name": "time", "url": f"stdio:{ALLOWED}"})
    assert answer.status_code == 422 and answer.json()["error"]["field"] == "url"


def test_the_tools_route_shows_a_servers_tools_or_why_it_is_unavailable(allowing: TestClient, acme: Tenant,
                                                                        globex: Tenant,
                                                                        weather: WeatherServer) -> None:
    up = _register(allowing, acme, {"name": "weather", "url": weather.url}).json()
    down = _register(allowing, acme, {"name": "gone", "url": closed_port_url()}).json()

    listed = allowing.get(f"/v1/mcp-servers/{up['id']}/tools", headers=acme.headers("operator"))
    assert listed.status_code == 200, listed.text
    body = listed.json()
    assert (body["server_id"], body["name"], body["status"], body["error"]) == (up["id"], "weather", "connected",
                                                                                None)
    tools = {tool["model_name"]: tool for tool in body["tools"]}
    assert set(tools) == {"mcp__weather__forecast", "mcp__weather__fail", "mcp__weather__slow"}
    assert tools["mcp__weather__forecast"]["name"] == "forecast"
    assert tools["mcp__weather__forecast"]["input_schema"]["required"] == ["city"]

    unavailable = allowing.get(f"/v1/mcp-servers/{down['id']}/tools", headers=acme.headers("operator")).json()
    assert unavailable["status"] == "error" and unavailable["tools"] == []
    assert unavailable["error"].startswith("connecting failed")

    # Another organization's server is not found, exactly like one that does not exist.
    theirs = allowing.get(f"/v1/mcp-servers/{up['id']}/tools", headers=globex.headers("operator"))
    assert theirs.status_code == 404 and theirs.json()["error"]["code"] == "not_found"
    assert allowing.get(f"/v1/mcp-servers/{up['id']}/tools", headers=acme.headers("member")).status_code == 403
