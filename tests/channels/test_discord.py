"""Discord through the real HTTP endpoint: Ed25519 signatures (PING/PONG, refusals), guild and DM slash
commands with their SCOPE and ACTOR, the reply through a fake REST API, tenants kept apart, hostile payloads
(SQLite and PostgreSQL)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
import sqlalchemy as sa
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from agentfy.runtime.model import ModelError
from agentfy.store.db import Database
from agentfy.store.repos import agents
from tests.channels.helpers import DISCORD_API, Gateway, transactions_begun
from tests.helpers.tenants import Tenant

APP = "112233445566778899"
GUILD, CHANNEL, SENDER = "223344556677889900", "334455667788990011", "445566778899001122"


def public_hex(key: Ed25519PrivateKey) -> str:
    return key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()


def signed(key: Ed25519PrivateKey, body: bytes, timestamp: str | None = None) -> dict[str, str]:
    stamp = timestamp or str(int(time.time()))
    return {"X-Signature-Ed25519": key.sign(stamp.encode() + body).hex(), "X-Signature-Timestamp": stamp,
            "Content-Type": "application/json"}


def command(text: str | None = "hello", *, guild: str | None = GUILD, app: str = APP, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"id": "556677889900112233", "application_id": app, "type": 2, "token": "itok-abc",
                            "channel_id": CHANNEL, "data": {"name": "ask", "options": [] if text is None else [
                                {"name": "message", "type": 3, "value": text}]}, **extra}
    if guild is not None:
        body.setdefault("guild_id", guild)
        body.setdefault("member", {"user": {"id": SENDER}})
    else:
        body.setdefault("user", {"id": SENDER})
    return body


def send(gateway: Gateway, key: Ed25519PrivateKey, payload: Any, app: str = APP, raw: bytes | None = None,
         headers: dict[str, str] | None = None) -> Any:
    body = raw if raw is not None else json.dumps(payload).encode()
    return gateway.client.post(f"/v1/channels/discord/{app}/interactions", content=body,
                               headers=headers if headers is not None else signed(key, body))


@pytest.fixture
def key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


def bind(gateway: Gateway, tenant: Tenant, key: Ed25519PrivateKey, app: str = APP, agent: str = "support") -> Any:
    return gateway.client.put(f"/v1/agents/{agent}/channels/discord", json={
        "application_id": app, "public_key": public_hex(key), "bot_token": "MTA.bot-token_value-0123456789"},
        headers=tenant.headers("admin"))


@pytest.fixture
def bound(db: Database, gateway: Gateway, acme: Tenant, key: Ed25519PrivateKey) -> str:
    with db.transaction() as tx:
        agent_id = agents.create_agent(tx, acme.scope, agent_key="support").id
    answer = bind(gateway, acme, key)
    assert answer.status_code == 201, answer.text
    assert answer.json()["webhook_path"] == f"/v1/channels/discord/{APP}/interactions"
    return agent_id


def test_ping_is_answered_pong(gateway: Gateway, key: Ed25519PrivateKey, bound: str) -> None:
    answer = send(gateway, key, {"id": "1", "application_id": APP, "type": 1, "token": "t"})
    assert answer.status_code == 200 and answer.json() == {"type": 1}
    assert gateway.runtime.received == []


def test_a_guild_command_reaches_the_agent_in_the_members_guild_scope(gateway: Gateway, acme: Tenant,
                                                                      key: Ed25519PrivateKey, bound: str) -> None:
    answer = send(gateway, key, command())
    assert answer.status_code == 200 and answer.json() == {"type": 5}
    (inbound,) = gateway.runtime.received
    assert inbound.context.user_id == f"guild:{GUILD}:user:{SENDER}"  # SCOPE
    assert inbound.context.sender_id == SENDER  # ACTOR
    assert (inbound.tenant_id, inbound.agent_key, inbound.context.agent_id) == (acme.scope.tenant_id, "support", bound)
    assert (inbound.channel, inbound.conversation, inbound.text) == (
        "discord", f"discord:guild:{GUILD}:channel:{CHANNEL}", "hello")
    ((method, url, body),) = gateway.platforms.requests
    assert (method, url, body) == ("PATCH", f"{DISCORD_API}/webhooks/{APP}/itok-abc/messages/@original",
                                   {"content": "echo: hello"})


def test_an_interaction_is_verified_and_read_in_one_transaction(gateway: Gateway, key: Ed25519PrivateKey,
                                                                bound: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The binding, its signature and the agent's policy in one read (each transaction a round trip on
    PostgreSQL); a guild command needs no sender look-up; a bad signature reads no policy and runs nothing."""
    begun = transactions_begun(gateway.state.db, monkeypatch)
    assert send(gateway, key, command()).json() == {"type": 5}
    assert begun == [False] and len(gateway.runtime.received) == 1
    begun.clear()
    body = json.dumps(command()).encode()
    assert send(gateway, key, None, raw=body, headers=signed(Ed25519PrivateKey.generate(), body)).status_code == 401
    assert begun == [False] and len(gateway.runtime.received) == 1


def test_a_dm_command_is_in_the_senders_scope(gateway: Gateway, key: Ed25519PrivateKey, bound: str) -> None:
    assert send(gateway, key, command(guild=None)).json() == {"type": 5}
    (inbound,) = gateway.runtime.received
    assert inbound.context.user_id == SENDER == inbound.context.sender_id
    assert inbound.conversation == f"discord:dm:{CHANNEL}"


def test_a_long_reply_continues_as_follow_ups_and_none_removes_the_placeholder(
        gateway: Gateway, key: Ed25519PrivateKey, bound: str) -> None:
    gateway.runtime.answer = "y" * 2500
    send(gateway, key, command())
    assert [(m, url.rsplit("/", 2)[-2:]) for m, url, _ in gateway.platforms.requests] == [
        ("PATCH", ["messages", "@original"]), ("POST", [APP, "itok-abc"])]
    gateway.platforms.requests.clear()
    gateway.runtime.answer = None
    send(gateway, key, command())
    assert [m for m, _, _ in gateway.platforms.requests] == ["DELETE"]


def test_a_command_without_a_message_is_answered_privately_not_sent(gateway: Gateway, key: Ed25519PrivateKey,
                                                                   bound: str) -> None:
    answer = send(gateway, key, command(text=None))
    assert answer.status_code == 200 and answer.json()["data"]["flags"] == 64
    assert gateway.runtime.received == []


@pytest.mark.parametrize("tamper", ["body", "timestamp", "signature", "missing", "other-key", "stale", "garbage"])
def test_a_bad_signature_is_401_and_nothing_happens(gateway: Gateway, key: Ed25519PrivateKey, bound: str,
                                                    tamper: str) -> None:
    body = json.dumps(command()).encode()
    headers = signed(key, body)
    if tamper == "body":
        body = body.replace(b"hello", b"HELLO")
    elif tamper == "timestamp":
        headers["X-Signature-Timestamp"] = str(int(headers["X-Signature-Timestamp"]) + 1)
    elif tamper == "signature":
        headers["X-Signature-Ed25519"] = "00" * 64
    elif tamper == "missing":
        del headers["X-Signature-Ed25519"]
    elif tamper == "other-key":
        headers = signed(Ed25519PrivateKey.generate(), body)
    elif tamper == "stale":
        headers = signed(key, body, timestamp=str(int(time.time()) - 3600))
    else:
        headers["X-Signature-Ed25519"] = "not hex at all"
    answer = send(gateway, key, None, raw=body, headers=headers)
    assert answer.status_code == 401 and answer.json()["error"]["code"] == "unauthorized"
    assert gateway.runtime.received == [] and gateway.platforms.requests == []


def test_an_unknown_application_is_the_same_401(gateway: Gateway, key: Ed25519PrivateKey, bound: str) -> None:
    for app in ("998877665544332211", "not-a-snowflake"):
        assert send(gateway, key, command(app=app), app=app).status_code == 401
    assert gateway.runtime.received == []


def test_two_tenants_same_agent_key_same_guild_never_share(db: Database, gateway: Gateway, acme: Tenant,
                                                         globex: Tenant, key: Ed25519PrivateKey, bound: str) -> None:
    other_key, other_app = Ed25519PrivateKey.generate(), "998877665544332211"
    with db.transaction() as tx:
        other = agents.create_agent(tx, globex.scope, agent_key="support").id
    assert bind(gateway, globex, other_key, app=other_app).status_code == 201
    assert bind(gateway, globex, other_key, app=APP).status_code == 409  # acme's application stays acme's
    send(gateway, key, command())
    send(gateway, other_key, command(app=other_app), app=other_app)
    first, second = gateway.runtime.received
    assert first.context.user_id == second.context.user_id == f"guild:{GUILD}:user:{SENDER}"
    assert (first.tenant_id, first.context.agent_id) == (acme.scope.tenant_id, bound)
    assert (second.tenant_id, second.context.agent_id) == (globex.scope.tenant_id, other)
    # a body signed by one application's key is refused at the other's endpoint
    assert send(gateway, other_key, command(), app=APP).status_code == 401


@pytest.mark.parametrize(("payload", "field"), [
    ({"type": 2}, "id"),
    (command(guild_id=12345), "guild_id"),
    (command(guild_id="1" * 30), "guild_id"),
    (command(member={"user": {"id": 2**70}}), "member.user.id"),
    (command(type="2"), "type"),
    (command(type=99), "type"),
    (command(type=3), "type"),
    (command(app="998877665544332211"), "application_id"),
    (command(member={}), "member.user"),
    (command(data={"name": "ask", "options": [{"name": "message", "type": 3, "value": "x" * 7000}]}),
     "data.options.0.value"),
    ([], "body"),
])
def test_hostile_interactions_are_422_naming_the_field(gateway: Gateway, key: Ed25519PrivateKey, bound: str,
                                                       payload: Any, field: str) -> None:
    answer = send(gateway, key, payload)
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"]["field"] == field
    assert gateway.runtime.received == []


@pytest.mark.parametrize(("body", "field"), [({"application_id": "12", "public_key": "ab" * 32}, "application_id"),
                                             ({"application_id": APP, "public_key": "zz" * 32}, "public_key"),
                                             ({"application_id": APP, "public_key": "ab"}, "public_key")])
def test_a_bad_binding_is_422_and_writes_nothing(db: Database, gateway: Gateway, acme: Tenant, body: dict[str, str],
                                                 field: str) -> None:
    with db.transaction() as tx:
        agents.create_agent(tx, acme.scope, agent_key="support")
    answer = gateway.client.put("/v1/agents/support/channels/discord", json=body, headers=acme.headers("admin"))
    assert answer.status_code == 422 and answer.json()["error"]["field"] == field
    with db.transaction(write=False) as tx:
        assert tx.scalar(sa.text("SELECT count(*) FROM channel_bindings")) == 0


def test_a_model_that_fails_replaces_thinking_with_a_note(gateway: Gateway, key: Ed25519PrivateKey,
                                                          bound: str) -> None:
    gateway.runtime.error = ModelError("the model at https://llm.example/v1 answered HTTP 503")
    send(gateway, key, command())
    ((method, url, body),) = gateway.platforms.requests
    assert method == "PATCH" and url.endswith("/messages/@original")
    assert body["content"].startswith("The agent's model could not answer (the model at https://llm.example/v1 "
                                      "answered HTTP 503). Please try again in a minute")
