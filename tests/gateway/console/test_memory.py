"""The Memory and knowledge screen: an agent's memory documents, episodic summaries and knowledge graph (a picture
and tables, everything escaped), and the agent's own memory search in a named scope; a refused search shows the
API's error in place; a member sees its own person's memory only; another organization's memory never
appears; on both engines."""

from __future__ import annotations

import re
from typing import Any

from fastapi.testclient import TestClient

from agentfy.store.db import Database
from agentfy.store.repos import agents, api_keys, memory, orgs
from tests.gateway.console.conftest import SignedIn
from tests.gateway.console.helpers import sign_in
from tests.helpers.tenants import Tenant

GROUP = "group:telegram:7"


def _remember(client: TestClient, tenant: Tenant, agent_id: str, documents: list[dict[str, Any]]) -> None:
    answer = client.post(f"/v1/agents/{agent_id}/memory/documents:batch-upsert", json={"documents": documents},
                         headers=tenant.headers("operator"))
    assert answer.status_code == 200, answer.text


def _ingest(client: TestClient, tenant: Tenant, agent_id: str, names: list[str], relation: str = "knows",
            user_id: str = "") -> list[str]:
    body = {"entities": [{"agent": agent_id, "user_id": user_id, "name": name, "entity_type": "person"}
                         for name in names],
            "relations": [{"agent": agent_id, "source": i, "target": i + 1, "relation": relation}
                          for i in range(len(names) - 1)]}
    answer = client.post("/v1/knowledge/ingest", json=body, headers=tenant.headers("operator"))
    assert answer.status_code == 201, answer.text
    ids: list[str] = answer.json()["entity_ids"]
    return ids


def test_the_screen_shows_memory_and_the_graph_and_searches_as_the_agent(signed_in: SignedIn, db: Database,
                                                                          acme: Tenant, globex: Tenant) -> None:
    with db.transaction() as tx:
        agent = agents.create_agent(tx, acme.scope, agent_key="support")
        other = agents.create_agent(tx, globex.scope, agent_key="support")
        memory.create_episodic_summary(tx, acme.scope, agent_id=agent.id, user_id=GROUP, session_key="tg-7",
                                       compaction_count=0, summary="the team chose the blue logo")
    client = signed_in("operator")
    _remember(client, acme, agent.id, [{"user_id": GROUP, "path": "remembered/logo.md",
                                        "content": "the logo is blue with a white kite"}])
    _remember(client, globex, other.id, [{"user_id": GROUP, "path": "remembered/globex.md",
                                          "content": "globex logo kite secret"}])
    ada, grace = _ingest(client, acme, agent.id, ["Ada", "Grace"], relation="mentors")
    _ingest(client, globex, other.id, ["Globex Person"])

    assert f'href="/console/agents/{agent.id}/memory"' in client.get(f"/console/agents/{agent.id}").text
    screen = f"/console/agents/{agent.id}/memory"
    page = client.get(screen).text
    assert "remembered/logo.md" in page and "the team chose the blue logo" in page and "tg-7" in page
    svg = re.search(r'<svg id="graph".*?</svg>', page, re.S)
    assert svg is not None and ">Ada</text>" in svg.group(0) and ">Grace</text>" in svg.group(0)
    assert ">mentors</text>" in svg.group(0) and 'role="img"' in svg.group(0)
    assert f'data-entity="{ada}"' in svg.group(0) and f'data-entity="{grace}"' in svg.group(0)
    assert re.search(r'<table id="relations">.*<td>Ada</td><td>mentors</td><td>Grace</td>', page, re.S)
    assert client.get(screen).text == page  # the layout is deterministic
    assert "globex" not in page.lower() and other.id not in page
    assert f'<option value="{GROUP}">' in page  # the scopes of the rows shown are offered

    found = client.get(screen, params={"q": "white kite", "scope": GROUP}).text
    hits = re.search(r'<table id="hits">.*?</table>', found, re.S)
    assert hits is not None and "remembered/logo.md" in hits.group(0) and "globex" not in hits.group(0)
    assert "Nothing in this scope" in client.get(screen, params={"q": "white kite", "scope": ""}).text
    assert "Nothing in this scope" in client.get(screen, params={"q": "kite secret", "scope": GROUP}).text


def test_names_and_memory_are_escaped_everywhere(signed_in: SignedIn, db: Database, acme: Tenant) -> None:
    with db.transaction() as tx:
        agent = agents.create_agent(tx, acme.scope, agent_key="support")
    client = signed_in("operator")
    hostile = '<script>alert("x")</script>'
    _remember(client, acme, agent.id, [{"path": "<b>p</b>.md", "content": f"kite {hostile}"}])
    _ingest(client, acme, agent.id, [hostile, "B&B"], relation='<img src=x onerror="y">')
    page = client.get(f"/console/agents/{agent.id}/memory", params={"q": "kite", "scope": ""}).text
    assert "<script>alert" not in page and "<b>p</b>" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page and "B&amp;B" in page


def test_a_refused_search_shows_the_apis_error_and_the_rest_of_the_page(signed_in: SignedIn, db: Database,
                                                                        acme: Tenant) -> None:
    with db.transaction() as tx:
        agent = agents.create_agent(tx, acme.scope, agent_key="support")
    client = signed_in("operator")
    _remember(client, acme, agent.id, [{"path": "MEMORY.md", "content": "kites"}])
    blank = client.get(f"/console/agents/{agent.id}/memory", params={"q": "  ", "scope": ""})
    assert blank.status_code == 200
    assert 'role="alert"' in blank.text and "invalid_input, HTTP 422" in blank.text
    assert "field <code>query</code>" in blank.text
    assert "MEMORY.md" in blank.text  # the rest of the page is still there


def test_a_member_sees_and_searches_its_own_persons_memory_only(signed_in: SignedIn, db: Database, acme: Tenant,
                                                                globex: Tenant) -> None:
    with db.transaction() as tx:
        agent = agents.create_agent(tx, acme.scope, agent_key="support")
        other = agents.create_agent(tx, globex.scope, agent_key="support")
        person = orgs.create_user(tx, display_name="Member").id
        orgs.add_member(tx, acme.scope, person, "member")
        acme.keys["member-person"] = api_keys.create_api_key(tx, acme.scope, name="member person", role="member",
                                                             user_id=person).key
    operator = signed_in("operator")
    _remember(operator, acme, agent.id, [{"user_id": person, "path": "mine.md", "content": "my kite"},
                                         {"user_id": GROUP, "path": "group.md", "content": "the group kite"}])
    member = signed_in("member-person")
    screen = f"/console/agents/{agent.id}/memory"
    page = member.get(screen).text
    assert "mine.md" in page and "group.md" not in page
    own = member.get(screen, params={"q": "kite", "scope": person}).text
    assert "mine.md" in re.search(r'<table id="hits">.*?</table>', own, re.S).group(0)  # type: ignore[union-attr]
    refused = member.get(screen, params={"q": "kite", "scope": GROUP})
    assert refused.status_code == 200 and "forbidden, HTTP 403" in refused.text and 'id="hits"' not in refused.text
    foreign = member.get(f"/console/agents/{other.id}/memory")
    assert foreign.status_code == 404 and "not_found" in foreign.text


def test_the_screen_needs_a_session(db: Database, acme: Tenant) -> None:
    from agentfy.gateway.app import create_app

    with db.transaction() as tx:
        agent = agents.create_agent(tx, acme.scope, agent_key="support")
    with TestClient(create_app(db, signing_secret=b"s" * 32)) as client:
        answer = client.get(f"/console/agents/{agent.id}/memory", follow_redirects=False)
        assert answer.status_code == 303 and answer.headers["location"] == "/console/sign-in"
        assert sign_in(client, acme.keys["owner"]).status_code == 303
        assert client.get(f"/console/agents/{agent.id}/memory").status_code == 200


def test_the_picture_leaves_loops_and_entities_beyond_its_bound_to_the_tables() -> None:
    from agentfy.gateway.console.graph import MAX_NODES, graph_svg, positions, relations_table

    assert positions(1) == [(320.0, 320.0)] and positions(4)[0] == (320.0, 110.0)  # the first at the top
    entities = [{"id": f"kg-entity-{i}", "name": f"e{i:03}", "entity_type": "thing"} for i in range(MAX_NODES + 5)]
    loop = {"id": "kg-relation-1", "source_entity_id": "kg-entity-0", "target_entity_id": "kg-entity-0",
            "relation": "is"}
    beyond = {"id": "kg-relation-2", "source_entity_id": "kg-entity-0", "target_entity_id": f"kg-entity-{MAX_NODES}",
              "relation": "far"}
    svg = graph_svg(entities, [loop, beyond])
    assert svg.count('<g class="node"') == MAX_NODES and '<g class="edge"' not in svg
    assert f"{MAX_NODES} entities drawn" in svg and "5 more entities are in the table only" in svg
    words = relations_table(entities, [loop, beyond])
    assert "<td>e000</td><td>is</td><td>e000</td>" in words and f"<td>e{MAX_NODES:03}</td>" in words
