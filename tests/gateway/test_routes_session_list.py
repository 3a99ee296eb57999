"""``GET /v1/agents/{agent}/sessions``: an agent's sessions, newest activity first, paged, filtered by scope and
state, showing exactly the sessions the caller could read one by one (both engines)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from agentfy.ids import format_id
from agentfy.store.db import Database
from agentfy.store.repos import sessions
from tests.gateway.test_routes_sessions import agent, user_key
from tests.helpers.tenants import Tenant

GROUP = "group:telegram:-100123"


def opened(db: Database, tenant: Tenant, agent_id: str, key: str, scope: str, *messages: str) -> None:
    with db.transaction() as tx:
        sessions.open_session(tx, tenant.scope, key, agent_id, scope)
        for text in messages:
            sessions.append_message(tx, tenant.scope, key, "user", text)


def listed(client: TestClient, headers: dict[str, str], ref: str = "support", **params: Any) -> Any:
    response = client.get(f"/v1/agents/{ref}/sessions", params=params, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def keys(page: Any) -> list[str]:
    return [item["session_key"] for item in page["items"]]


def test_sessions_come_newest_activity_first_a_page_at_a_time(db: Database, client: TestClient,
                                                               acme: Tenant) -> None:
    bot = agent(client, acme)
    for key in ("first", "second", "third"):
        opened(db, acme, bot["id"], key, "")
    with db.transaction() as tx:  # the oldest session speaks last: it is the most recently active
        sessions.append_message(tx, acme.scope, "first", "user", "hello")
        sessions.append_message(tx, acme.scope, "first", "assistant", "hi")
    everything = listed(client, acme.headers())
    assert keys(everything) == ["first", "third", "second"] and everything["next_cursor"] is None
    first = everything["items"][0]
    assert first["message_count"] == 2 and first["agent_id"] == bot["id"] and first["status"] == "open"
    assert first["last_activity_at"] > first["created_at"]
    assert everything["items"][1]["message_count"] == 0
    assert everything["items"][1]["last_activity_at"] == everything["items"][1]["created_at"]

    one = listed(client, acme.headers(), limit=2)
    assert keys(one) == ["first", "third"] and one["next_cursor"]
    two = listed(client, acme.headers(), limit=2, cursor=one["next_cursor"])
    assert keys(two) == ["second"] and two["next_cursor"] is None
    by_id = listed(client, acme.headers(), bot["id"])  # the agent by ID or by key
    assert by_id == everything


def test_the_list_filters_by_scope_and_by_state(db: Database, client: TestClient, acme: Tenant) -> None:
    bot = agent(client, acme)
    alice, _ = user_key(db, acme.scope)
    opened(db, acme, bot["id"], "dm", alice, "hi")
    opened(db, acme, bot["id"], "group", GROUP, "hello all")
    opened(db, acme, bot["id"], "own", "")
    with db.transaction() as tx:
        sessions.complete_session(tx, acme.scope, "group")
    assert keys(listed(client, acme.headers(), user_id=GROUP)) == ["group"]
    assert keys(listed(client, acme.headers(), user_id=alice)) == ["dm"]
    assert keys(listed(client, acme.headers(), user_id="")) == ["own"]  # the agent's own scope
    assert keys(listed(client, acme.headers(), status="completed")) == ["group"]
    assert sorted(keys(listed(client, acme.headers(), status="open"))) == ["dm", "own"]
    assert keys(listed(client, acme.headers(), user_id=GROUP, status="open")) == []
    paged = listed(client, acme.headers(), status="open", limit=1)
    rest = listed(client, acme.headers(), status="open", limit=1, cursor=paged["next_cursor"])
    assert sorted(keys(paged) + keys(rest)) == ["dm", "own"] and rest["next_cursor"] is None


def test_a_member_lists_exactly_the_sessions_it_may_read_one_by_one(db: Database, client: TestClient,
                                                                    acme: Tenant) -> None:
    bot = agent(client, acme)
    alice, alice_headers = user_key(db, acme.scope)
    bob, bob_headers = user_key(db, acme.scope)
    opened(db, acme, bot["id"], "alice-dm", alice, "mine")
    opened(db, acme, bot["id"], "bob-dm", bob, "his")
    opened(db, acme, bot["id"], "group", GROUP)
    opened(db, acme, bot["id"], "own", "")
    _, operator_headers = user_key(db, acme.scope, "operator")
    for headers in (alice_headers, bob_headers, operator_headers, acme.headers("member")):
        readable = {key for key in ("alice-dm", "bob-dm", "group", "own")
                    if client.get(f"/v1/sessions/{key}", headers=headers).status_code == 200}
        assert set(keys(listed(client, headers))) == readable
    assert keys(listed(client, alice_headers)) == ["alice-dm"]
    assert keys(listed(client, acme.headers("member"))) == []  # a key acting as nobody reads none
    assert len(keys(listed(client, operator_headers))) == 4
    assert keys(listed(client, alice_headers, user_id=alice)) == ["alice-dm"]
    for scope in (bob, GROUP, ""):  # naming a scope it may not use is refused, as on every scoped list
        refused = client.get("/v1/agents/support/sessions", params={"user_id": scope}, headers=alice_headers)
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden", scope
        assert "bob-dm" not in refused.text


def test_another_organizations_agent_is_404_like_a_missing_one(db: Database, client: TestClient, acme: Tenant,
                                                               globex: Tenant) -> None:
    theirs = agent(client, globex)
    opened(db, globex, theirs["id"], "theirs", "", "secret")
    agent(client, acme)
    opened(db, acme, agent(client, acme, "sales")["id"], "ours", "")
    for ref in (theirs["id"], format_id("agent")):
        response = client.get(f"/v1/agents/{ref}/sessions", headers=acme.headers())
        assert response.status_code == 404, ref
        assert response.json()["error"] == {"code": "not_found", "message": "agent not found", "field": "agent",
                                            "value": ref}
    assert keys(listed(client, acme.headers())) == []  # acme's own "support" agent has none
    assert keys(listed(client, acme.headers(), "sales")) == ["ours"]
    assert keys(listed(client, globex.headers())) == ["theirs"]


@pytest.mark.parametrize(("params", "field"), [
    ({"limit": "0"}, "limit"), ({"limit": "1001"}, "limit"), ({"limit": "many"}, "limit"),
    ({"status": "closed"}, "status"), ({"user_id": "a\nb"}, "user_id"), ({"cursor": "forged.cursor"}, "cursor"),
])
def test_bad_parameters_are_422_naming_the_parameter(client: TestClient, acme: Tenant, params: dict[str, str],
                                                     field: str) -> None:
    agent(client, acme)
    response = client.get("/v1/agents/support/sessions", params=params, headers=acme.headers())
    assert response.status_code == 422, response.text
    assert response.json()["error"]["field"] == field


def test_a_cursor_works_only_in_its_own_organization_and_list(db: Database, client: TestClient, acme: Tenant,
                                                              globex: Tenant) -> None:
    for tenant in (acme, globex):
        bot = agent(client, tenant)
        for key in ("a", "b"):
            opened(db, tenant, bot["id"], key, "", "x")
    cursor = listed(client, acme.headers(), limit=1)["next_cursor"]
    elsewhere = client.get("/v1/agents/support/sessions", params={"cursor": cursor}, headers=globex.headers())
    assert elsewhere.status_code == 422 and elsewhere.json()["error"]["code"] == "invalid_cursor"
    other_list = client.get("/v1/sessions/a/messages", params={"cursor": cursor}, headers=acme.headers())
    assert other_list.status_code == 422 and other_list.json()["error"]["code"] == "invalid_cursor"
