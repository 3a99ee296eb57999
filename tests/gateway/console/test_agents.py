"""The Agents screen: the organization's agents (key, display name, ID, model), filtered by key; create, rename
and archive through the API, each shown to the roles that may do it; another organization's agents never
appear; the API's refusals shown as its errors; on both engines."""

from __future__ import annotations

import re

from agentfy.store.db import Database
from agentfy.store.repos import agents
from tests.gateway.console.conftest import SignedIn
from tests.gateway.console.helpers import post_form
from tests.helpers.tenants import Tenant


def _agent_keys(page: str) -> list[str]:
    return re.findall(r'<a href="/console/agents/agent-[^"]+">([^<]+)</a>', page)


def test_the_list_shows_this_organizations_agents_only(signed_in: SignedIn, db: Database, acme: Tenant,
                                                       globex: Tenant) -> None:
    with db.transaction() as tx:
        support = agents.create_agent(tx, acme.scope, agent_key="support", display_name="Support <desk>")
        agents.create_agent(tx, acme.scope, agent_key="sales", config={"model": {
            "provider": "openai", "model": "gpt-x", "base_url": "http://m.test/v1"}})
        secret = agents.create_agent(tx, globex.scope, agent_key="globex-secret")
    page = signed_in("member").get("/console/agents").text
    assert _agent_keys(page) == ["sales", "support"]
    assert support.id in page and "Support &lt;desk&gt;" in page and "openai: gpt-x" in page
    assert "offline (default)" in page
    assert "globex-secret" not in page and secret.id not in page
    answer = signed_in("owner").get(f"/console/agents/{secret.id}")
    assert answer.status_code == 404 and "not_found" in answer.text and "globex-secret" not in answer.text


def test_the_list_filters_by_agent_key(signed_in: SignedIn, db: Database, acme: Tenant) -> None:
    with db.transaction() as tx:
        for key in ("support", "support-eu", "sales"):
            agents.create_agent(tx, acme.scope, agent_key=key)
    client = signed_in("member")
    assert _agent_keys(client.get("/console/agents", params={"key": "support"}).text) == ["support", "support-eu"]
    assert "No agents match." in client.get("/console/agents", params={"key": "nobody"}).text


def test_an_operator_creates_and_renames_an_agent(signed_in: SignedIn, db: Database, acme: Tenant) -> None:
    client = signed_in("operator")
    created = post_form(client, "/console/agents", "/console/agents",
                        {"agent_key": "helper", "display_name": "Helper"})
    assert created.status_code == 303
    with db.transaction(write=False) as tx:
        (agent,) = agents.list_agents(tx, acme.scope)
    assert created.headers["location"] == f"/console/agents/{agent.id}"
    assert (agent.agent_key, agent.display_name) == ("helper", "Helper")
    page = client.get(created.headers["location"]).text
    assert '<dd id="agent-key">helper</dd>' in page and 'action="/console/agents/' in page
    assert "Archive helper" not in page  # archiving is the admin's

    renamed = post_form(client, f"/console/agents/{agent.id}", f"/console/agents/{agent.id}/rename",
                        {"agent_key": "helper-2", "display_name": "Helper Two"})
    assert renamed.status_code == 303 and renamed.headers["location"] == f"/console/agents/{agent.id}"
    with db.transaction(write=False) as tx:
        assert agents.get_agent(tx, acme.scope, agent.id).agent_key == "helper-2"


def test_a_taken_or_malformed_key_is_shown_the_apis_error(signed_in: SignedIn, db: Database,
                                                          acme: Tenant) -> None:
    with db.transaction() as tx:
        agents.create_agent(tx, acme.scope, agent_key="support")
    client = signed_in("operator")
    taken = post_form(client, "/console/agents", "/console/agents", {"agent_key": "support"})
    assert taken.status_code == 409 and 'role="alert"' in taken.text and "conflict" in taken.text
    bad = post_form(client, "/console/agents", "/console/agents", {"agent_key": "Not A Key!"})
    assert bad.status_code == 422 and "HTTP 422" in bad.text and "Not A Key!" in bad.text
    with db.transaction(write=False) as tx:
        assert [a.agent_key for a in agents.list_agents(tx, acme.scope)] == ["support"]


def test_an_admin_archives_an_agent(signed_in: SignedIn, db: Database, acme: Tenant) -> None:
    with db.transaction() as tx:
        agent = agents.create_agent(tx, acme.scope, agent_key="old")
    client = signed_in("admin")
    page = f"/console/agents/{agent.id}"
    assert "Archive old" in client.get(page).text
    answer = post_form(client, page, f"/console/agents/{agent.id}/archive", {})
    assert answer.status_code == 303 and answer.headers["location"] == "/console/agents?archived=old"
    listed = client.get(answer.headers["location"]).text
    assert "Archived old." in listed and _agent_keys(listed) == []


def test_a_member_sees_no_actions_and_the_api_refuses_them(signed_in: SignedIn, db: Database,
                                                           acme: Tenant) -> None:
    with db.transaction() as tx:
        agent = agents.create_agent(tx, acme.scope, agent_key="support")
    client = signed_in("member")
    listed = client.get("/console/agents").text
    assert "Create an agent" not in listed
    shown = client.get(f"/console/agents/{agent.id}").text
    assert "Rename" not in shown and "Archive" not in shown
    refused = post_form(client, "/console/agents", "/console/agents", {"agent_key": "sneaky"})
    assert refused.status_code == 403 and "needs the operator role or higher" in refused.text
    archive = post_form(client, "/console/agents", f"/console/agents/{agent.id}/archive", {})
    assert archive.status_code == 403 and "forbidden" in archive.text
    with db.transaction(write=False) as tx:
        assert [a.agent_key for a in agents.list_agents(tx, acme.scope)] == ["support"]


def test_every_change_needs_the_sessions_csrf_token(signed_in: SignedIn, db: Database, acme: Tenant) -> None:
    client = signed_in("owner")
    for token in ({}, {"csrf": "forged"}):
        answer = client.post("/console/agents", data={"agent_key": "x", **token}, follow_redirects=False)
        assert answer.status_code == 403 and "csrf_token_invalid" in answer.text
    other = signed_in("admin")  # another session's token is not this one's
    token = re.search(r'name="csrf" value="([^"]+)"', other.get("/console/agents").text)
    assert token is not None
    answer = client.post("/console/agents", data={"agent_key": "x", "csrf": token.group(1)},
                         follow_redirects=False)
    assert answer.status_code == 403
    with db.transaction(write=False) as tx:
        assert agents.list_agents(tx, acme.scope) == []
