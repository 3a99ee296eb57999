"""A write's credential is confirmed in the database by the write's own transaction (both engines).

The principal cache may be a moment behind a change made in another process (its notice not yet arrived); a
write must never be made with such a credential.  Here the change is made behind the change feed's back (plain
SQL: no notice ever comes), the hardest case: reads are still served from the cache, every write is refused
and writes nothing, and a warm write costs one transaction."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from agentfy.gateway.auth import Principal, sign_context
from agentfy.identity import OrgId, Scope
from agentfy.store.db import Database, Tx, now
from agentfy.store.repos import agents, api_keys, orgs, sessions
from tests.helpers.tenants import Tenant

SECRET = b"s" * 32


class Person:
    def __init__(self, db: Database, scope: Scope, role: str) -> None:
        with db.transaction() as tx:
            self.user_id = orgs.create_user(tx, display_name=role).id
            orgs.add_member(tx, scope, self.user_id, role)
            issued = api_keys.create_api_key(tx, scope, name=role, role=role, user_id=self.user_id)
            self.context = sign_context(tx, SECRET, Principal(OrgId(scope.tenant_id), role, self.user_id,
                                                              key_id=issued.record.id))
        self.key, self.key_id = issued.key, issued.record.id

    def headers(self, *, signed: bool = False) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.context if signed else self.key}"}


@pytest.fixture
def app_client(db: Database, tmp_path: Path) -> Iterator[TestClient]:
    from agentfy.gateway.app import create_app

    with TestClient(create_app(db, signing_secret=SECRET, workspace_root=tmp_path)) as client:
        yield client


def behind_the_feed(db: Database, sql: str, **params: str) -> None:
    """A change no cache hears of (no change recorded): as if another process's notice had not come yet."""
    with db.transaction() as tx:
        tx.execute(sql, params)


def count_sessions(db: Database, scope: Scope, agent_id: str) -> int:
    with db.transaction(write=False) as tx:
        return len(sessions.list_agent_sessions(tx, scope, agent_id))


@pytest.fixture
def bot(db: Database, acme: Tenant) -> str:
    with db.transaction() as tx:
        return agents.create_agent(tx, acme.scope, agent_key="bot").id


@pytest.mark.parametrize("signed", [False, True], ids=["api key", "signed context"])
def test_a_key_revoked_behind_the_cache_writes_nothing(db: Database, app_client: TestClient, acme: Tenant,
                                                       bot: str, signed: bool) -> None:
    ann = Person(db, acme.scope, "admin")
    headers = ann.headers(signed=signed)
    assert app_client.get("/v1/agents/bot/sessions", headers=headers).status_code == 200
    assert app_client.post("/v1/sessions", json={"agent": "bot", "session_key": "before"},
                           headers=headers).status_code == 201  # the principal is cached for writes too
    behind_the_feed(db, "UPDATE api_keys SET revoked_at = :now WHERE id = :id", now=now(), id=ann.key_id)
    assert app_client.get("/v1/agents", headers=headers).status_code == 200  # a read: the cache answers
    before = count_sessions(db, acme.scope, bot)
    writes = [("POST", "/v1/sessions", {"agent": "bot", "session_key": "after"}),
              ("POST", "/v1/sessions/before/complete", None),
              ("DELETE", "/v1/sessions/before", None),
              ("POST", "/v1/agents", {"agent_key": "sneaky"}),
              ("POST", "/v1/agents/bot/messages", {"text": "hello"}),
              ("POST", "/v1/agents/bot/heartbeat", None)]  # begins no transaction: confirmed before it answers
    for method, path, body in writes:
        answer = app_client.request(method, path, json=body, headers=headers)
        assert (answer.status_code, answer.json()["error"]["code"]) == (401, "revoked"), (path, answer.text)
    assert count_sessions(db, acme.scope, bot) == before
    with db.transaction(write=False) as tx:
        assert sessions.get_session(tx, acme.scope, "before").status == "open"
        assert [a.agent_key for a in agents.list_agents(tx, acme.scope)] == ["bot"]


def test_a_role_narrowed_behind_the_cache_is_refused_as_the_narrower_role(db: Database, app_client: TestClient,
                                                                          acme: Tenant, bot: str) -> None:
    ann = Person(db, acme.scope, "admin")
    assert app_client.put("/v1/org/default-agent", json={"agent": None}, headers=ann.headers()).status_code == 200
    behind_the_feed(db, "UPDATE org_members SET role = 'member' WHERE org_id = :tenant AND user_id = :user",
                    tenant=acme.scope.tenant_id, user=ann.user_id)
    refused = app_client.put("/v1/org/default-agent", json={"agent": None}, headers=ann.headers())
    assert refused.status_code == 403, refused.text  # what the member role gets
    # The member role may open a session in its own scope, but the route was authorized as an admin: 409, nothing
    # written (the next try, once the cache has the narrowed role, is served as a member's).
    changed = app_client.post("/v1/sessions", json={"agent": "bot", "session_key": "narrowed"}, headers=ann.headers())
    assert (changed.status_code, changed.json()["error"]["code"]) == (409, "conflict"), changed.text
    assert count_sessions(db, acme.scope, bot) == 0


def test_a_warm_write_is_one_transaction(db: Database, app_client: TestClient, acme: Tenant, bot: str,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    ann = Person(db, acme.scope, "admin")
    assert app_client.post("/v1/sessions", json={"agent": "bot", "session_key": "one"},
                           headers=ann.headers()).status_code == 201
    begun: list[bool] = []
    transaction = Database.transaction

    def counted(self: Database, *, write: bool = True) -> Tx:
        begun.append(write)
        return transaction(self, write=write)

    monkeypatch.setattr(Database, "transaction", counted)
    for method, path, body in [("POST", "/v1/sessions", {"agent": "bot", "session_key": "two"}),
                               ("POST", "/v1/sessions/two/complete", None), ("DELETE", "/v1/sessions/two", None)]:
        begun.clear()
        answer = app_client.request(method, path, json=body, headers=ann.headers())
        assert answer.status_code < 300, answer.text
        assert begun == [True], (path, begun)
