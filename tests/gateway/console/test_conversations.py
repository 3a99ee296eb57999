"""The Conversations screen: send a message through the chat route and see the reply in its session; tool
calls and their results shown as such; another organization's or person's session never shown; the API's
refusals shown; on both engines."""

from __future__ import annotations

import re

from agentfy.store.db import Database
from agentfy.store.repos import agents, sessions
from tests.gateway.console.conftest import SignedIn
from tests.gateway.console.helpers import csrf_of, post_form
from tests.helpers.tenants import Tenant


def test_a_person_sends_a_message_and_sees_the_reply(signed_in: SignedIn, db: Database, acme: Tenant,
                                                     person: str) -> None:
    with db.transaction() as tx:
        agent = agents.create_agent(tx, acme.scope, agent_key="support")
    client = signed_in("person")
    screen = f"/console/agents/{agent.id}/conversations"
    sent = post_form(client, screen, f"/console/agents/{agent.id}/messages",
                     {"conversation": "launch", "text": "hello <there>"})
    assert sent.status_code == 303
    location = sent.headers["location"]
    assert location.startswith(f"{screen}?session=") and location.endswith("&conversation=launch")
    page = client.get(location).text
    assert re.findall(r'<li class="msg (\w+)"', page) == ["user", "assistant"]
    assert "hello &lt;there&gt;" in page and "@support heard: hello &lt;there&gt;" in page

    fragment = client.post(f"/console/agents/{agent.id}/messages", headers={"hx-request": "true"},
                           data={"conversation": "launch", "text": "again", "csrf": csrf_of(page)})
    assert fragment.status_code == 200 and fragment.text.startswith('<section id="session-view"')
    assert fragment.text.count('class="msg assistant"') == 2 and "<html" not in fragment.text


def test_tool_calls_and_results_are_shown_as_such(signed_in: SignedIn, db: Database, acme: Tenant) -> None:
    with db.transaction() as tx:
        agent = agents.create_agent(tx, acme.scope, agent_key="support")
        sessions.open_session(tx, acme.scope, "s-tools", agent.id, "")
        sessions.append_message(tx, acme.scope, "s-tools", "user", "what is the weather?")
        sessions.append_message(tx, acme.scope, "s-tools", "assistant", "", tool_calls=[
            {"id": "call-1", "name": "weather", "arguments": {"city": "Oslo"}}])
        sessions.append_message(tx, acme.scope, "s-tools", "tool", '{"sky": "clear"}', tool_call_id="call-1")
    page = signed_in("operator").get(f"/console/agents/{agent.id}/conversations", params={"session": "s-tools"})
    assert page.status_code == 200
    text = page.text
    assert re.findall(r'<li class="msg (\w+)"', text) == ["user", "assistant", "tool"]
    assert '<span class="role">Tool call</span><code>weather</code>' in text
    assert "&quot;city&quot;: &quot;Oslo&quot;" in text
    assert "Tool result for <code>call-1</code>" in text and "{&quot;sky&quot;: &quot;clear&quot;}" in text


def test_another_organizations_or_persons_session_is_not_found(signed_in: SignedIn, db: Database, acme: Tenant,
                                                              globex: Tenant, person: str) -> None:
    with db.transaction() as tx:
        mine = agents.create_agent(tx, acme.scope, agent_key="support")
        theirs = agents.create_agent(tx, globex.scope, agent_key="support")
        sessions.open_session(tx, globex.scope, "s-globex", theirs.id, "")
        sessions.append_message(tx, globex.scope, "s-globex", "user", "globex secret plans")
        sessions.open_session(tx, acme.scope, "s-someone", mine.id, "user-someone-else")
        sessions.append_message(tx, acme.scope, "s-someone", "user", "someone's private note")
    owner = signed_in("owner")
    answer = owner.get(f"/console/agents/{mine.id}/conversations", params={"session": "s-globex"})
    assert answer.status_code == 404 and "not_found" in answer.text and "globex secret" not in answer.text
    assert owner.get(f"/console/agents/{theirs.id}/conversations").status_code == 404
    member = signed_in("member")  # a member acts as nobody: another scope's session is not found
    answer = member.get(f"/console/agents/{mine.id}/conversations", params={"session": "s-someone"})
    assert answer.status_code == 404 and "private note" not in answer.text


def test_a_key_that_is_no_person_is_shown_the_chat_routes_refusal(signed_in: SignedIn, db: Database,
                                                                 acme: Tenant) -> None:
    with db.transaction() as tx:
        agent = agents.create_agent(tx, acme.scope, agent_key="support")
    client = signed_in("owner")
    screen = f"/console/agents/{agent.id}/conversations"
    answer = post_form(client, screen, f"/console/agents/{agent.id}/messages", {"text": "hi"})
    assert answer.status_code == 403 and "needs a key that acts as a person" in answer.text
    empty = post_form(client, screen, f"/console/agents/{agent.id}/messages", {"text": "   "})
    assert empty.status_code in (403, 422) and 'role="alert"' in empty.text
