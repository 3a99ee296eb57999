"""``/v1/sessions``: open, messages, complete (publishing ``session.completed`` once), and the error contract
(both engines)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from agentfy.identity import Scope
from agentfy.ids import format_id
from agentfy.store.db import Database
from agentfy.store.errors import StoreError
from agentfy.store.repos import api_keys, orgs, sessions
from tests.helpers.tenants import Tenant
from tests.store.helpers import count

TEAM_ID = "team-calm-rivers-k8m4p2d7n9x3"
LEGACY_UUID = "0193a5b0-7000-7000-8000-000000000001"


def agent(client: TestClient, tenant: Tenant, key: str = "support") -> dict[str, Any]:
    response = client.post("/v1/agents", json={"agent_key": key}, headers=tenant.headers())
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def user_key(db: Database, scope: Scope, role: str = "member") -> tuple[str, dict[str, str]]:
    """A key acting as a user: ``(user_id, headers)``."""
    with db.transaction() as tx:
        user = orgs.create_user(tx, display_name="Alice").id
        orgs.add_member(tx, scope, user, role)
        issued = api_keys.create_api_key(tx, scope, name=f"{role}-user", role=role, user_id=user)
    return user, {"Authorization": f"Bearer {issued.key}"}


def open_session(client: TestClient, tenant: Tenant, key: str, ref: str, **extra: Any) -> dict[str, Any]:
    response = client.post("/v1/sessions", json={"session_key": key, "agent": ref, **extra},
                           headers=tenant.headers())
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def completed_events(db: Database) -> list[tuple[Any, ...]]:
    with db.transaction(write=False) as tx:
        return [tuple(row) for row in tx.all(
            "SELECT tenant_id, agent_id, user_id, source_id, payload FROM event_outbox "
            "WHERE type = 'session.completed'")]


def test_a_session_lifecycle_by_agent_key(db: Database, client: TestClient, acme: Tenant) -> None:
    bot = agent(client, acme)
    alice, headers = user_key(db, acme.scope)
    opened = client.post("/v1/sessions", json={"session_key": "tg:42", "agent": "support"}, headers=headers)
    assert opened.status_code == 201, opened.text
    session = opened.json()
    assert session["agent_id"] == bot["id"] and session["user_id"] == alice  # default scope: the key's user
    assert session["status"] == "open" and session["completed_at"] is None
    assert client.get("/v1/sessions/tg:42", headers=acme.headers("operator")).json() == session
    assert client.get("/v1/sessions/tg:42", headers=headers).json() == session  # alice's own
    assert client.get("/v1/sessions/tg:42", headers=acme.headers("member")).status_code == 404  # not this key's

    for text in ("hello", "how are you?"):
        sent = client.post("/v1/sessions/tg:42/messages", json={"role": "user", "content": text}, headers=headers)
        assert sent.status_code == 201, sent.text
        assert sent.json()["sender_id"] == alice  # the actor, from the key
    messages = client.get("/v1/sessions/tg:42/messages", headers=headers).json()["items"]
    assert [(m["seq"], m["content"]) for m in messages] == [(1, "hello"), (2, "how are you?")]
    page = client.get(
            "/v1/sessions/tg:42/messages", params={"after_seq": 1, "limit": 1}, headers=headers).json()["items"]
    assert [m["seq"] for m in page] == [2]

    done = client.post("/v1/sessions/tg:42/complete", headers=headers)
    assert done.status_code == 200, done.text
    assert done.json()["status"] == "completed" and done.json()["event_id"].startswith("domain-event-")
    late = client.post("/v1/sessions/tg:42/messages", json={"role": "user", "content": "late"}, headers=headers)
    assert late.status_code == 409 and late.json()["error"]["code"] == "conflict"


def test_a_session_opened_by_agent_id_takes_an_explicit_scope(client: TestClient, acme: Tenant) -> None:
    bot = agent(client, acme)
    session = open_session(client, acme, "grp-1", bot["id"], user_id="group:telegram:-100")
    assert session["agent_id"] == bot["id"] and session["user_id"] == "group:telegram:-100"


def test_completing_publishes_one_session_completed_with_the_agents_id(db: Database, client: TestClient,
                                                                         acme: Tenant) -> None:
    bot = agent(client, acme)
    open_session(client, acme, "s-1", "support", user_id="group:telegram:7")
    # a group's session: a member key may not complete it (another scope), an operator may
    assert client.post("/v1/sessions/s-1/complete", headers=acme.headers("member")).status_code == 404
    first = client.post("/v1/sessions/s-1/complete", headers=acme.headers("operator")).json()
    second = client.post("/v1/sessions/s-1/complete", headers=acme.headers("operator")).json()
    assert first["event_id"] is not None and second["event_id"] is None
    assert first["completed_at"] == second["completed_at"]
    events = completed_events(db)
    assert len(events) == 1
    tenant_id, agent_id, user_id, source_id, payload = events[0]
    assert tenant_id == acme.scope.tenant_id and agent_id == bot["id"] != "support"  # the ID, never the key
    assert user_id == "group:telegram:7" and source_id == "s-1:0" and "s-1" in payload


def test_completion_and_its_event_share_one_transaction(db: Database, client: TestClient, acme: Tenant,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    agent(client, acme)
    open_session(client, acme, "s-1", "support")

    def broken(*args: Any, **kwargs: Any) -> None:
        raise StoreError("the outbox is down")

    monkeypatch.setattr("agentfy.gateway.routes.sessions.publish_completed", broken)
    response = client.post("/v1/sessions/s-1/complete", headers=acme.headers())
    assert response.status_code == 500 and "outbox" not in response.text
    assert client.get("/v1/sessions/s-1", headers=acme.headers()).json()["status"] == "open"  # rolled back
    assert count(db, "event_outbox") == 0


def test_a_session_key_may_contain_slashes(client: TestClient, acme: Tenant) -> None:
    agent(client, acme)
    open_session(client, acme, "slack:T1/C2/thread:9", "support")
    sent = client.post("/v1/sessions/slack:T1/C2/thread:9/messages", json={"role": "user", "content": "hi"},
                       headers=acme.headers())
    assert sent.status_code == 201 and sent.json()["session_key"] == "slack:T1/C2/thread:9"
    assert len(client.get("/v1/sessions/slack:T1/C2/thread:9/messages", headers=acme.headers()).json()["items"]) == 1
    assert client.get("/v1/sessions/slack:T1/C2/thread:9", headers=acme.headers()).json()["status"] == "open"
    assert client.post("/v1/sessions/slack:T1/C2/thread:9/complete", headers=acme.headers()).status_code == 200


def test_a_duplicate_session_key_is_409_but_other_tenants_keys_are_theirs(client: TestClient, acme: Tenant,
                                                                         globex: Tenant) -> None:
    agent(client, acme)
    agent(client, globex)
    open_session(client, acme, "main", "support")
    again = client.post("/v1/sessions", json={"session_key": "main", "agent": "support"}, headers=acme.headers())
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "conflict" and again.json()["error"]["field"] == "session_key"
    assert open_session(client, globex, "main", "support")["session_key"] == "main"


def test_another_tenants_session_is_the_same_404_as_a_missing_one(db: Database, client: TestClient,
                                                                  acme: Tenant, globex: Tenant) -> None:
    agent(client, globex)
    open_session(client, globex, "theirs", "support")
    calls = (("get", "", None), ("get", "/messages", None), ("post", "/messages", {"role": "user", "content": "x"}),
             ("post", "/complete", None))
    for method, suffix, body in calls:
        responses = [client.request(method, f"/v1/sessions/{key}{suffix}", json=body, headers=acme.headers())
                     for key in ("theirs", "missing")]
        assert [r.status_code for r in responses] == [404, 404], (method, suffix)
        theirs, missing = (r.json()["error"] for r in responses)
        assert theirs == {**missing, "value": "theirs"}
        assert theirs == {"code": "not_found", "message": "session not found", "value": "theirs"}
    assert client.get("/v1/sessions/theirs", headers=globex.headers()).json()["status"] == "open"
    assert count(db, "session_messages") == count(db, "event_outbox") == 0  # acme's calls changed nothing


@pytest.mark.parametrize(("ref", "status", "code"), [
    (TEAM_ID, 422, "invalid_id"),  # another entity's ID where an agent belongs
    ("Not_A_Key", 422, "invalid_agent_key"),
    (LEGACY_UUID, 404, "not_found"),  # well-formed, not ours
    ("nobody", 404, "not_found"),
])
def test_bad_agent_references_follow_the_error_contract(db: Database, client: TestClient, acme: Tenant, ref: str,
                                                        status: int, code: str) -> None:
    response = client.post("/v1/sessions", json={"session_key": "s", "agent": ref}, headers=acme.headers())
    assert response.status_code == status
    error = response.json()["error"]
    assert error["code"] == code and error["field"] == "agent" and error["value"] == ref
    assert count(db, "sessions") == 0


def test_another_tenants_agent_is_404_and_nothing_is_opened(db: Database, client: TestClient, acme: Tenant,
                                                            globex: Tenant) -> None:
    theirs = agent(client, globex)
    mine = client.post("/v1/sessions", json={"session_key": "s", "agent": theirs["id"]}, headers=acme.headers())
    missing = client.post("/v1/sessions", json={"session_key": "s", "agent": format_id("agent")},
                          headers=acme.headers())
    assert mine.status_code == missing.status_code == 404
    assert mine.json()["error"]["message"] == missing.json()["error"]["message"] == "agent not found"
    assert count(db, "sessions") == 0


def test_invalid_session_keys_and_bodies_are_422(client: TestClient, acme: Tenant) -> None:
    agent(client, acme)
    bad_key = client.post("/v1/sessions", json={"session_key": "a\nb", "agent": "support"}, headers=acme.headers())
    assert bad_key.status_code == 422 and bad_key.json()["error"]["field"] == "session_key"
    open_session(client, acme, "s", "support")
    bad_role = client.post("/v1/sessions/s/messages", json={"role": "wizard", "content": "x"}, headers=acme.headers())
    assert bad_role.status_code == 422 and bad_role.json()["error"]["field"] == "role"
    missing = client.post("/v1/sessions/s/messages", json={"role": "user"}, headers=acme.headers())
    assert missing.status_code == 422 and missing.json()["error"]["field"] == "content"


def test_the_tenant_and_the_sender_never_come_from_the_body(client: TestClient, acme: Tenant,
                                                            globex: Tenant) -> None:
    agent(client, acme)
    smuggled = client.post("/v1/sessions", headers=acme.headers(), json={
        "session_key": "s", "agent": "support", "tenant_id": globex.scope.tenant_id})
    assert smuggled.status_code == 422 and smuggled.json()["error"]["field"] == "tenant_id"
    open_session(client, acme, "s", "support")
    spoofed = client.post("/v1/sessions/s/messages", json={"role": "user", "content": "x", "sender_id": "u-1"},
                          headers=acme.headers())
    assert spoofed.status_code == 422 and spoofed.json()["error"]["field"] == "sender_id"


def test_roles_no_key_is_401_and_too_low_is_403(db: Database, client: TestClient, acme: Tenant) -> None:
    agent(client, acme)
    body = {"session_key": "s", "agent": "support"}
    assert client.post("/v1/sessions", json=body).status_code == 401
    assert client.get("/v1/sessions/s").status_code == 401
    # Another memory scope than the key's own user needs an operator.
    _, member = user_key(db, acme.scope)
    other_scope = client.post("/v1/sessions", json={**body, "user_id": "group:telegram:1"}, headers=member)
    assert other_scope.status_code == 403 and other_scope.json()["error"]["code"] == "forbidden"
    assert client.post("/v1/sessions", json=body, headers=member).status_code == 201
    # Members write user messages; assistant/system/tool messages need an operator.
    for role, expected in (("user", 201), ("system", 403), ("assistant", 403), ("tool", 403)):
        response = client.post("/v1/sessions/s/messages", json={"role": role, "content": "x"}, headers=member)
        assert response.status_code == expected, role
    assert client.post("/v1/sessions/s/messages", json={"role": "assistant", "content": "ok"},
                       headers=acme.headers("operator")).status_code == 201
    assert count(db, "session_messages") == 2


def test_listing_messages_shows_tool_calls_and_results(db: Database, client: TestClient, acme: Tenant) -> None:
    agent(client, acme)
    open_session(client, acme, "tools:1", "support", user_id="u")
    with db.transaction() as tx:
        sessions.append_message(tx, acme.scope, "tools:1", "user", "write it")
        sessions.append_message(tx, acme.scope, "tools:1", "assistant", "", tool_calls=[
            {"id": "call-1", "name": "write_file", "arguments": {"path": "a.txt", "content": "hi", "n": [1]}}])
        sessions.append_message(tx, acme.scope, "tools:1", "tool", "wrote a.txt", tool_call_id="call-1")
    items = client.get("/v1/sessions/tools:1/messages", headers=acme.headers("operator")).json()["items"]
    assert [(m["role"], m["tool_calls"], m["tool_call_id"]) for m in items] == [
        ("user", [], None),
        ("assistant", [{"id": "call-1", "name": "write_file",
                        "arguments": {"path": "a.txt", "content": "hi", "n": [1]}}], None),
        ("tool", [], "call-1")]


def test_deleting_a_session_removes_it_and_its_messages_but_not_what_was_learned(
        db: Database, client: TestClient, acme: Tenant, globex: Tenant) -> None:
    agent(client, acme)
    open_session(client, acme, "s-gone", "support", user_id="")
    assert client.post("/v1/sessions/s-gone/messages", json={"role": "user", "content": "hi"},
                       headers=acme.headers()).status_code == 201
    completed = client.post("/v1/sessions/s-gone/complete", headers=acme.headers())
    assert completed.status_code == 200 and completed.json()["event_id"] is not None
    assert client.delete("/v1/sessions/s-gone", headers=globex.headers()).status_code == 404  # not theirs
    deleted = client.delete("/v1/sessions/s-gone", headers=acme.headers())
    assert deleted.status_code == 204 and deleted.content == b""
    assert client.get("/v1/sessions/s-gone", headers=acme.headers()).status_code == 404
    assert client.get("/v1/sessions/s-gone/messages", headers=acme.headers()).status_code == 404
    assert count(db, "session_messages") == 0
    assert len(completed_events(db)) == 1  # the completion stays published: its consumers learn from it
    again = client.delete("/v1/sessions/s-gone", headers=acme.headers())
    assert (again.status_code, again.json()["error"]["code"]) == (404, "not_found")
    open_session(client, acme, "s-gone", "support")  # the key is free again


def test_a_member_may_not_delete_even_its_own_session(db: Database, client: TestClient, acme: Tenant) -> None:
    agent(client, acme)
    alice, headers = user_key(db, acme.scope)
    assert client.post("/v1/sessions", json={"session_key": "mine", "agent": "support"},
                       headers=headers).status_code == 201
    refused = client.delete("/v1/sessions/mine", headers=headers)
    assert refused.status_code == 403, refused.text
    with db.transaction(write=False) as tx:
        assert sessions.get_session(tx, acme.scope, "mine").user_id == alice
