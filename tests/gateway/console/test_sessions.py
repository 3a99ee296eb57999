"""The Sessions screen: an agent's sessions, newest activity first, each linking to its conversation; the scope
and state filters and the next page; a member sees only its own person's; another organization's sessions
never appear; a bad cursor or a refused scope shows the API's error; on both engines."""

from __future__ import annotations

import re
from urllib.parse import quote

from agentfy.store.db import Database
from agentfy.store.repos import agents, api_keys, orgs, sessions
from agentfy.store.repos.agents import Agent
from tests.gateway.console.conftest import SignedIn
from tests.helpers.tenants import Tenant

GROUP = "group:telegram:-100123"
_KEYS = re.compile(r'<a href="/console/agents/[^/"]+/conversations\?session=[^"]+"><code>([^<]+)</code></a>')


def _agent(db: Database, tenant: Tenant) -> Agent:
    with db.transaction() as tx:
        return agents.create_agent(tx, tenant.scope, agent_key="support")


def _open(db: Database, tenant: Tenant, agent: Agent, key: str, scope: str, *messages: str) -> None:
    with db.transaction() as tx:
        sessions.open_session(tx, tenant.scope, key, agent.id, scope)
        for text in messages:
            sessions.append_message(tx, tenant.scope, key, "user", text)


def _person(db: Database, tenant: Tenant, name: str) -> str:
    """A member key of ``tenant`` acting as a new person, as ``tenant.keys[name]``; returns the person's ID."""
    with db.transaction() as tx:
        user_id = orgs.create_user(tx, display_name=name).id
        orgs.add_member(tx, tenant.scope, user_id, "member")
        tenant.keys[name] = api_keys.create_api_key(tx, tenant.scope, name=name, role="member", user_id=user_id).key
    return user_id


def listed(page: str) -> list[str]:
    return _KEYS.findall(page)


def test_the_sessions_show_newest_activity_first_and_open_their_conversation(
        signed_in: SignedIn, db: Database, acme: Tenant, globex: Tenant) -> None:
    agent, theirs = _agent(db, acme), _agent(db, globex)
    _open(db, acme, agent, "dm/alice", "user-alice", "hello", "again")
    _open(db, acme, agent, "group-chat", GROUP, "hi all")
    _open(db, globex, theirs, "globex-secret", "", "theirs")
    client = signed_in("operator")
    assert f'href="/console/agents/{agent.id}/sessions">Sessions</a>' in client.get(f"/console/agents/{agent.id}").text
    page = client.get(f"/console/agents/{agent.id}/sessions")
    assert page.status_code == 200, page.text
    assert listed(page.text) == ["group-chat", "dm/alice"]
    assert f'href="/console/agents/{agent.id}/conversations?session={quote("dm/alice", safe="")}"' in page.text
    assert "<td>2</td>" in page.text and f"<code>{GROUP}</code>" in page.text  # message count, scope
    assert "globex-secret" not in page.text and "Next page" not in page.text

    only_group = client.get(f"/console/agents/{agent.id}/sessions", params={"scope": GROUP}).text
    assert listed(only_group) == ["group-chat"] and f'value="{GROUP}"' in only_group
    with db.transaction() as tx:
        sessions.complete_session(tx, acme.scope, "dm/alice")
    done = client.get(f"/console/agents/{agent.id}/sessions", params={"state": "completed"}).text
    assert listed(done) == ["dm/alice"] and '<option value="completed" selected>' in done
    none = client.get(f"/console/agents/{agent.id}/sessions", params={"scope": "nobody", "state": "open"}).text
    assert "No sessions match the filter." in none

    foreign = client.get(f"/console/agents/{theirs.id}/sessions")
    assert foreign.status_code == 404 and "not_found" in foreign.text and "globex-secret" not in foreign.text


def test_the_next_page_follows_the_filter(signed_in: SignedIn, db: Database, acme: Tenant) -> None:
    agent = _agent(db, acme)
    with db.transaction() as tx:
        for number in range(52):
            sessions.open_session(tx, acme.scope, f"s{number:02d}", agent.id, GROUP if number % 2 else "")
    client = signed_in("owner")
    first = client.get(f"/console/agents/{agent.id}/sessions").text
    assert len(listed(first)) == 50
    following = re.search(r'<a id="next-page" href="([^"]+)">Next page</a>', first)
    assert following is not None
    second = client.get(following.group(1).replace("&amp;", "&")).text
    assert sorted(listed(first) + listed(second)) == [f"s{n:02d}" for n in range(52)]
    assert "Next page" not in second
    grouped = client.get(f"/console/agents/{agent.id}/sessions", params={"scope": GROUP}).text
    assert len(listed(grouped)) == 26 and "Next page" not in grouped


def test_a_member_sees_only_its_own_persons_sessions(signed_in: SignedIn, db: Database, acme: Tenant) -> None:
    agent = _agent(db, acme)
    alice, bob = _person(db, acme, "alice"), _person(db, acme, "bob")
    _open(db, acme, agent, "alice-dm", alice, "mine")
    _open(db, acme, agent, "bob-dm", bob, "his")
    _open(db, acme, agent, "group-chat", GROUP)
    member = signed_in("alice")
    page = member.get(f"/console/agents/{agent.id}/sessions").text
    assert listed(page) == ["alice-dm"] and "bob-dm" not in page
    refused = member.get(f"/console/agents/{agent.id}/sessions", params={"scope": bob})
    assert refused.status_code == 403 and "forbidden" in refused.text and "bob-dm" not in refused.text
    assert listed(signed_in("member").get(f"/console/agents/{agent.id}/sessions").text) == []  # acting as nobody


def test_a_bad_cursor_shows_the_apis_error(signed_in: SignedIn, db: Database, acme: Tenant) -> None:
    agent = _agent(db, acme)
    _open(db, acme, agent, "one", "")
    client = signed_in("owner")
    answer = client.get(f"/console/agents/{agent.id}/sessions", params={"cursor": "forged.cursor"})
    assert answer.status_code == 422
    assert "invalid_cursor" in answer.text and "start from the first page" in answer.text
    assert "one</code>" not in answer.text
