"""The Agents screen: the organization's agents (key, display name, ID, model), filtered by key; create, rename
and archive through the API, each shown to the roles that may do it; another organization's agents never
appear; the API's refusals shown as its errors; the agent page sets the model (a credential chosen or stored
inline, never shown back) and checks it against a local OpenAI-compatible server, lists the channels and shows
the run state; on both engines."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from agentfy.gateway.app import create_app
from agentfy.runtime.openai_compat import CallPolicy
from agentfy.settings import Settings
from agentfy.store.db import Database
from agentfy.store.repos import agents
from tests.gateway.console.conftest import SignedIn
from tests.gateway.console.helpers import post_form, sign_in
from tests.helpers.fake_openai import Completion, Failure, FakeOpenAI
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


# -- the model, its credential, the channels, the run state -------------------------------------------------------
SECRET = "sk-console-0123456789abcdefWXYZ"


@pytest.fixture
def model_server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def admin_client(db: Database, acme: Tenant) -> Iterator[TestClient]:
    """The admin of acme signed in, on a gateway that can store credentials; model checks tried once."""
    settings = Settings(credentials_key=SecretStr(base64.b64encode(b"c" * 32).decode()))
    app = create_app(db, signing_secret=b"s" * 32, settings=settings)
    app.state.gateway.runtime.providers.policy = CallPolicy(attempts=1, timeout_seconds=5)
    with TestClient(app, base_url="http://testserver") as client:
        assert sign_in(client, acme.keys["admin"]).status_code == 303
        yield client


def test_an_admin_stores_a_credential_sets_the_model_and_checks_it(
        admin_client: TestClient, db: Database, acme: Tenant, model_server: FakeOpenAI) -> None:
    with db.transaction() as tx:
        agent = agents.create_agent(tx, acme.scope, agent_key="support")
    page = f"/console/agents/{agent.id}"
    shown = admin_client.get(page).text
    assert 'id="model-form"' in shown and '<option value="offline" selected>' in shown
    saved = post_form(admin_client, page, f"{page}/model", {
        "provider": "openai", "base_url": model_server.url, "model": "gpt-console", "credential": "",
        "new_credential": "llm", "secret": SECRET, "context_window": "", "max_tokens": ""})
    assert saved.status_code == 303 and saved.headers["location"] == f"{page}?done=credential"
    with db.transaction(write=False) as tx:
        assert agents.get_agent(tx, acme.scope, agent.id).config["model"] == {
            "provider": "openai", "base_url": model_server.url, "model": "gpt-console", "credential": "llm",
            "context_window": 8000}  # the default, as the validator states it
    shown = admin_client.get(saved.headers["location"]).text
    assert "Credential stored and model saved." in shown and "openai: gpt-console" in shown
    assert '<option value="llm" selected>' in shown and SECRET not in shown and SECRET[-4:] not in shown

    model_server.script(Completion(text="pong"))
    checked = post_form(admin_client, page, f"{page}/model/check", {})
    assert checked.status_code == 303 and checked.headers["location"].startswith(f"{page}?checked=")
    assert "The model gpt-console answered in" in admin_client.get(checked.headers["location"]).text
    assert model_server.requests[-1].headers["authorization"] == f"Bearer {SECRET}"

    model_server.script(Failure(401, message="bad key"))
    failed = post_form(admin_client, page, f"{page}/model/check", {})
    assert failed.status_code == 502 and "model_error" in failed.text and SECRET not in failed.text


def test_the_apis_validation_errors_are_shown_as_given_and_nothing_is_saved(
        admin_client: TestClient, db: Database, acme: Tenant) -> None:
    with db.transaction() as tx:
        agent = agents.create_agent(tx, acme.scope, agent_key="support")
    page = f"/console/agents/{agent.id}"
    bad_url = post_form(admin_client, page, f"{page}/model",
                        {"provider": "openai", "base_url": "ftp://model.test", "model": "m"})
    assert bad_url.status_code == 422 and "HTTP 422" in bad_url.text
    assert "field <code>base_url</code>" in bad_url.text and "ftp://model.test" in bad_url.text
    unknown = post_form(admin_client, page, f"{page}/model",
                        {"provider": "openai", "base_url": "http://m.test/v1", "model": "m", "credential": "nope"})
    assert unknown.status_code == 422 and "field <code>credential</code>" in unknown.text
    assert "is not stored in this organization" in unknown.text
    number = post_form(admin_client, page, f"{page}/model", {"provider": "offline", "context_window": "lots"})
    assert number.status_code == 422 and "context_window" in number.text and "lots" in number.text
    with db.transaction(write=False) as tx:
        assert "model" not in (agents.get_agent(tx, acme.scope, agent.id).config or {})


def test_operators_see_the_channels_and_the_run_state_but_no_model_form(
        signed_in: SignedIn, admin_client: TestClient, db: Database, acme: Tenant) -> None:
    with db.transaction() as tx:
        agent = agents.create_agent(tx, acme.scope, agent_key="support")
    bound = admin_client.put(f"/v1/agents/{agent.id}/channels/telegram", headers=acme.headers("admin"), json={
        "bot_username": "@SupportBot", "bot_token": "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"})
    assert bound.status_code == 201, bound.text
    shown = signed_in("operator").get(f"/console/agents/{agent.id}").text
    assert 'id="channels"' in shown and "SupportBot" in shown and "/v1/channels/telegram/SupportBot/webhook" in shown
    assert "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw" not in shown and 'id="model-form"' not in shown
    assert re.search(r'id="run-state" class="badge" role="status" aria-live="polite" data-state="idle" '
                     rf'data-agent-id="{agent.id}"', shown)
    assert '<script src="/console/static/agent.js" defer></script>' in shown
    member = signed_in("member").get(f"/console/agents/{agent.id}").text
    assert 'id="channels"' not in member and 'id="model-settings"' not in member and 'id="run-state"' in member
    refused = post_form(signed_in("operator"), f"/console/agents/{agent.id}", f"/console/agents/{agent.id}/model",
                        {"provider": "offline"})
    assert refused.status_code == 403 and "needs the admin role or higher" in refused.text
