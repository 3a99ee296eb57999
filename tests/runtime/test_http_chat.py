"""The chat channel end to end: ``POST /v1/agents/{agent}/messages`` and the WebSocket ``agents.send``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from agentfy.gateway.app import create_app
from agentfy.identity import Scope
from agentfy.store.db import Database
from agentfy.store.repos import api_keys, orgs, permissions, sessions
from tests.helpers.tenants import make_tenant


class Person:
    def __init__(self, db: Database, scope: Scope, role: str) -> None:
        with db.transaction() as tx:
            self.user_id = orgs.create_user(tx, display_name=role).id
            orgs.add_member(tx, scope, self.user_id, role)
            self.key = api_keys.create_api_key(tx, scope, name=role, role=role, user_id=self.user_id).key
        self.headers = {"Authorization": f"Bearer {self.key}"}


@pytest.fixture
def world(db: Database) -> dict[str, object]:
    made: dict[str, object] = {}
    for slug in ("acme", "globex"):
        tenant = make_tenant(db, slug, agent_key="bot")
        scope = tenant.scope
        assert tenant.bot is not None
        made[f"{slug}-bot"] = tenant.bot.id
        with db.transaction() as tx:
            made[f"{slug}-nobody"] = api_keys.create_api_key(tx, scope, name="nobody", role="owner").key
        made[slug] = scope
        made[f"{slug}-member"] = Person(db, scope, "member")
    return made


@pytest.fixture
def client(db: Database, tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(db, signing_secret=b"s" * 32, workspace_root=tmp_path / "ws")) as test_client:
        yield test_client


def test_a_person_talks_to_an_agent_over_http(db: Database, client: TestClient, world: dict[str, object]) -> None:
    ann = world["acme-member"]
    assert isinstance(ann, Person)
    first = client.post("/v1/agents/bot/messages", json={"text": "hello"}, headers=ann.headers)
    assert first.status_code == 200, first.text
    body = first.json()
    assert body["reply"] == "@bot heard: hello" and body["conversation"] == "default"
    again = client.post(f"/v1/agents/{world['acme-bot']}/messages", json={"text": "again"}, headers=ann.headers)
    assert again.json()["session_key"] == body["session_key"]  # by ID or key: the same agent, same conversation
    scope = world["acme"]
    assert isinstance(scope, Scope)
    with db.transaction(write=False) as tx:
        session = sessions.get_session(tx, scope, body["session_key"])
        stored = sessions.list_messages(tx, scope, body["session_key"])
    assert session.user_id == ann.user_id  # the HTTP user is the SCOPE …
    assert [m.sender_id for m in stored if m.role == "user"] == [ann.user_id] * 2  # … and the ACTOR
    # the session is the caller's own: readable through the sessions API
    assert client.get(f"/v1/sessions/{body['session_key']}", headers=ann.headers).status_code == 200


def test_http_chat_refusals(client: TestClient, world: dict[str, object]) -> None:
    ann = world["acme-member"]
    assert isinstance(ann, Person)
    missing = client.post("/v1/agents/ghost/messages", json={"text": "hi"}, headers=ann.headers)
    assert missing.status_code == 404 and missing.json()["error"]["value"] == "ghost"
    other_tenant = client.post(f"/v1/agents/{world['globex-bot']}/messages", json={"text": "hi"}, headers=ann.headers)
    assert other_tenant.status_code == 404
    empty = client.post("/v1/agents/bot/messages", json={"text": ""}, headers=ann.headers)
    assert empty.status_code == 422 and empty.json()["error"]["field"] == "text"
    smuggled = client.post("/v1/agents/bot/messages", json={"text": "hi", "tenant_id": "x"}, headers=ann.headers)
    assert smuggled.status_code == 422
    nobody = client.post("/v1/agents/bot/messages", json={"text": "hi"},
                         headers={"Authorization": f"Bearer {world['acme-nobody']}"})
    assert nobody.status_code == 403  # a key acting as nobody has no conversation of its own
    assert client.post("/v1/agents/bot/messages", json={"text": "hi"}).status_code == 401


def test_a_member_writes_files_in_their_own_scope_only(client: TestClient, world: dict[str, object],
                                                       tmp_path: Path) -> None:
    ann = world["acme-member"]
    assert isinstance(ann, Person)
    reply = client.post("/v1/agents/bot/messages", headers=ann.headers,
                        json={"text": "/tool write_file path=todo.txt content=milk", "conversation": "errands"})
    assert reply.json()["reply"] == f"write_file: wrote todo.txt (4 bytes) for {ann.user_id}"
    (written,) = [p for p in (tmp_path / "ws").rglob("*") if p.is_file()]
    assert written.read_text() == "milk"
    assert written.relative_to(tmp_path / "ws").parts[:6] == ("tenants", "acme", "agents", "bot", "scopes",
                                                              ann.user_id)


def test_the_websocket_sends_through_the_same_code_and_publishes_run_events(client: TestClient,
                                                                             world: dict[str, object]) -> None:
    ann = world["acme-member"]
    assert isinstance(ann, Person)
    with client.websocket_connect("/v1/ws", headers=ann.headers) as ws:
        ws.send_json({"id": 1, "method": "subscribe"})
        assert ws.receive_json()["id"] == 1
        ws.send_json({"id": 2, "method": "agents.send", "params": {"agent": "bot", "text": "hi ws"}})
        received = []
        while True:
            message = ws.receive_json()
            received.append(message)
            if message.get("id") == 2:
                break
        result = received[-1]["result"]
        assert result["reply"] == "@bot heard: hi ws" and result["conversation"] == "default"
        ws.send_json({"id": 3, "method": "agents.send", "params": {"agent": "ghost", "text": "hi"}})
        while (message := ws.receive_json()).get("id") != 3:
            received.append(message)
        assert message["error"]["status"] == 404
    events = [m for m in received if "event" in m]
    deltas = [e for e in events if e["event"] == "agent.run.delta"]
    assert [e["event"] for e in events if e not in deltas] == ["agent.run.started", "agent.replied",
                                                               "agent.run.finished"]
    assert {e["agent"]["agent_key"] for e in events} == {"bot"}
    # The reply streams to the person whose conversation it is: the pieces join to the reply.
    assert "".join(e["run"]["text"] for e in deltas) == "@bot heard: hi ws"
    assert all("hi ws" not in str(e) for e in events if e not in deltas)  # no other event carries the text


def test_two_tenants_same_key_same_conversation_over_http(client: TestClient, world: dict[str, object]) -> None:
    keys = set()
    for slug in ("acme", "globex"):
        person = world[f"{slug}-member"]
        assert isinstance(person, Person)
        reply = client.post("/v1/agents/bot/messages", json={"text": "hi", "conversation": "same"},
                            headers=person.headers)
        keys.add(reply.json()["session_key"])
        assert reply.json()["session_key"].startswith(str(world[f"{slug}-bot"]))
    assert len(keys) == 2


def test_grants_apply_over_http_too(db: Database, client: TestClient, world: dict[str, object]) -> None:
    """The HTTP scope is never a group, so no grant is needed; a grant in a group changes nothing here."""
    scope, bot = world["acme"], world["acme-bot"]
    ann = world["acme-member"]
    assert isinstance(scope, Scope) and isinstance(ann, Person) and isinstance(bot, str)
    with db.transaction() as tx:
        permissions.grant(tx, scope, bot, chat_scope="group:telegram:-1", config_type="file_writer",
                          sender_id=ann.user_id, allow=False, granted_by="admin")
    reply = client.post("/v1/agents/bot/messages", headers=ann.headers,
                        json={"text": "/tool write_file path=a.txt content=x"})
    assert reply.json()["reply"].startswith("write_file: wrote a.txt")
