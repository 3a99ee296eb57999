"""The MCP servers and Skills screens: an agent's MCP servers with their status, tools and last error (a real
MCP server connected, a down one with its reason), the organization's skills and a skill's body; a member gets
no MCP link and the API's 403, but reads skills; another organization's servers and skills never appear; on
both engines."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.gateway.console.conftest import SignedIn
from tests.helpers.mcp_server import WeatherServer, closed_port_url
from tests.helpers.tenants import Tenant


@pytest.fixture(scope="module")
def weather() -> Iterator[WeatherServer]:
    with WeatherServer() as server:
        yield server


def _post(client: TestClient, path: str, body: Any, headers: dict[str, str]) -> Any:
    answer = client.post(f"/v1{path}", json=body, headers=headers)
    assert answer.status_code == 201, answer.text
    return answer.json()


def test_an_agents_servers_show_their_status_tools_and_last_error(signed_in: SignedIn, acme: Tenant,
                                                                  globex: Tenant, weather: WeatherServer) -> None:
    client = signed_in("operator")
    agent = _post(client, "/agents", {"agent_key": "forecaster"}, acme.headers())
    up = _post(client, f"/agents/{agent['id']}/mcp-servers", {"name": "weather", "url": weather.url}, acme.headers())
    down = _post(client, f"/agents/{agent['id']}/mcp-servers", {"name": "gone", "url": closed_port_url()},
                 acme.headers())
    theirs = _post(client, "/agents", {"agent_key": "forecaster"}, globex.headers())
    hidden = _post(client, f"/agents/{theirs['id']}/mcp-servers", {"name": "globex-tools", "url": weather.url},
                   globex.headers())

    assert f"/console/agents/{agent['id']}/mcp-servers" in client.get(f"/console/agents/{agent['id']}").text
    page = client.get(f"/console/agents/{agent['id']}/mcp-servers").text
    connected = page.split(f'id="mcp-{up["id"]}"')[1].split("</section>")[0]
    assert '<span class="status status-connected">connected</span>' in connected and "Last error" not in connected
    assert "mcp__weather__forecast" in connected and "The weather forecast for a city." in connected
    failing = page.split(f'id="mcp-{down["id"]}"')[1].split("</section>")[0]
    assert '<span class="status status-error">error</span>' in failing and "No tools offered." in failing
    assert '<dd class="mcp-error">connecting failed' in failing
    assert hidden["id"] not in page and "globex-tools" not in page

    foreign = client.get(f"/console/agents/{theirs['id']}/mcp-servers")
    assert foreign.status_code == 404 and "not_found" in foreign.text and "globex-tools" not in foreign.text


def test_an_agent_without_servers_says_so_and_a_member_is_refused(signed_in: SignedIn, acme: Tenant) -> None:
    owner = signed_in("owner")
    agent = _post(owner, "/agents", {"agent_key": "plain"}, acme.headers())
    assert "No MCP servers." in owner.get(f"/console/agents/{agent['id']}/mcp-servers").text
    member = signed_in("member")
    assert "MCP servers" not in member.get(f"/console/agents/{agent['id']}").text  # the link is an operator's
    refused = member.get(f"/console/agents/{agent['id']}/mcp-servers")
    assert refused.status_code == 403 and "needs the operator role or higher" in refused.text


def test_skills_are_listed_and_a_skills_page_shows_its_body(signed_in: SignedIn, acme: Tenant, globex: Tenant,
                                                             person: str) -> None:
    client = signed_in("member")  # a member reads skills
    mine = _post(client, "/skills", {"name": "greet", "content": "Say hello.\n<script>alert(1)</script>"},
                 acme.headers("person"))
    gus = _post(client, "/org/members", {"display_name": "Gus", "role": "operator"}, globex.headers())
    key = _post(client, "/org/api-keys", {"name": "gus", "role": "operator", "user_id": gus["user_id"]},
                globex.headers())["key"]
    theirs = _post(client, "/skills", {"name": "globex-secret", "content": "Globex's own body"},
                   {"Authorization": f"Bearer {key}"})

    listed = client.get("/console/skills").text
    assert f"/console/skills/{mine['id']}" in listed and "greet" in listed
    assert "globex-secret" not in listed and theirs["id"] not in listed
    page = client.get(f"/console/skills/{mine['id']}").text
    assert '<dd id="skill-name">greet</dd>' in page and person in page
    assert "Say hello.\n&lt;script&gt;alert(1)&lt;/script&gt;</pre>" in page and "<script>alert" not in page
    foreign = client.get(f"/console/skills/{theirs['id']}")
    assert foreign.status_code == 404 and "Globex" not in foreign.text
    malformed = client.get("/console/skills/not-an-id")
    assert malformed.status_code == 422 and "not-an-id" in malformed.text
