"""Who may talk to an agent, through the real HTTP endpoints and fake platform APIs: the DM policies (open,
allowlist, pairing end to end with an admin's approval), the group policies, mentions stripped before the
runtime, the admin routes' refusals (SQLite and PostgreSQL)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from agentfy.channels import access
from agentfy.store.db import Database
from agentfy.store.repos import channel_access
from agentfy.store.repos.channel_access import PAIRING_TTL
from tests.channels import test_discord as discord_helpers
from tests.channels.helpers import TELEGRAM_API, Gateway
from tests.channels.test_telegram import SENDER, agent_in, bind, message, post
from tests.helpers.tenants import Tenant

ROUTES = "/v1/agents/support/channel-access"
STRANGER = 2002


@pytest.fixture
def bound(db: Database, gateway: Gateway, acme: Tenant) -> str:
    agent_id = agent_in(db, acme)
    assert bind(gateway, acme).status_code == 201
    return agent_id


def dm(text: str = "hello", sender: int = STRANGER) -> dict[str, Any]:
    return message(chat_id=sender, chat_type="private", text=text, sender=sender)


def set_policy(gateway: Gateway, tenant: Tenant, **body: str) -> Any:
    return gateway.client.put(ROUTES, json=body, headers=tenant.headers("admin"))


def replies(gateway: Gateway) -> list[str]:
    return [body["text"] for _, _, body in gateway.platforms.to(f"{TELEGRAM_API}/bot")]


# -- DM policies ----------------------------------------------------------------------------------------------
def test_open_is_the_default_and_passes_everyone(gateway: Gateway, acme: Tenant, bound: str) -> None:
    policy = gateway.client.get(ROUTES, headers=acme.headers("admin"))
    assert policy.json() == {"dm_policy": "open", "group_policy": "mention"}
    assert post(gateway, dm(sender=STRANGER)).json() == {"ok": True}
    assert post(gateway, dm(sender=STRANGER + 1)).json() == {"ok": True}
    assert len(gateway.runtime.received) == 2


def test_allowlist_refuses_an_unknown_sender_and_nothing_reaches_the_runtime(gateway: Gateway, acme: Tenant,
                                                                            bound: str) -> None:
    assert set_policy(gateway, acme, dm_policy="allowlist").json()["dm_policy"] == "allowlist"
    added = gateway.client.post(f"{ROUTES}/allowlist", json={"platform": "telegram", "sender_id": str(SENDER)},
                                headers=acme.headers("admin"))
    assert added.status_code == 200 and added.json()["status"] == "allowed"
    refused = post(gateway, dm(sender=STRANGER))
    assert refused.status_code == 200 and "allowlist" in refused.json()["ignored"]
    assert gateway.runtime.received == []
    assert replies(gateway) == [access.REFUSAL]
    assert post(gateway, dm(sender=SENDER)).json() == {"ok": True}
    assert [i.text for i in gateway.runtime.received] == ["hello"]
    listed = gateway.client.get(f"{ROUTES}/allowlist", headers=acme.headers("admin")).json()
    assert [(e["platform"], e["sender_id"]) for e in listed] == [("telegram", str(SENDER))]
    removed = gateway.client.delete(f"{ROUTES}/allowlist/telegram/{SENDER}", headers=acme.headers("admin"))
    assert removed.status_code == 204
    post(gateway, dm(sender=SENDER))
    assert len(gateway.runtime.received) == 1
    again = gateway.client.delete(f"{ROUTES}/allowlist/telegram/{SENDER}", headers=acme.headers("admin"))
    assert again.status_code == 404


def _code_of(text: str) -> str:
    found = re.search(r"\b([A-Z2-9]{4}-[A-Z2-9]{4})\b", text)
    assert found is not None, text
    return found.group(1)


def test_pairing_end_to_end(gateway: Gateway, acme: Tenant, globex: Tenant, bound: str) -> None:
    set_policy(gateway, acme, dm_policy="pairing")
    first = post(gateway, dm("please let me in"))
    assert first.status_code == 200 and "pairing code" in first.json()["ignored"]
    assert gateway.runtime.received == []
    (reply,) = replies(gateway)
    code = _code_of(reply)
    assert "please let me in" not in reply
    post(gateway, dm("hello?"))  # a live code is not replaced: a reminder
    assert replies(gateway)[1] == access.PAIRING_PENDING and code not in replies(gateway)[1]
    pending = gateway.client.get(f"{ROUTES}/pairings", headers=acme.headers("admin")).json()
    assert [(p["sender_id"], p["status"]) for p in pending] == [(str(STRANGER), "pending")]
    assert gateway.runtime.received == []

    foreign = gateway.client.post("/v1/agents/support/channel-access/pairings/approve", json={"code": code},
                                  headers=globex.headers("admin"))
    assert foreign.status_code == 404  # another organization's admin: that agent does not exist for them
    operator = gateway.client.post(f"{ROUTES}/pairings/approve", json={"code": code},
                                   headers=acme.headers("operator"))
    assert operator.status_code == 403
    approved = gateway.client.post(f"{ROUTES}/pairings/approve", json={"code": code}, headers=acme.headers("admin"))
    assert approved.status_code == 200, approved.text
    assert approved.json()["sender_id"] == str(STRANGER) and approved.json()["status"] == "allowed"
    reused = gateway.client.post(f"{ROUTES}/pairings/approve", json={"code": code}, headers=acme.headers("admin"))
    assert reused.status_code == 409 and "already used" in reused.json()["error"]["message"]
    assert reused.json()["error"]["field"] == "code" and code not in reused.text

    assert post(gateway, dm("now?")).json() == {"ok": True}
    assert [i.text for i in gateway.runtime.received] == ["now?"]


def test_an_expired_pairing_code_is_refused_with_a_clear_error(db: Database, gateway: Gateway, acme: Tenant,
                                                             bound: str) -> None:
    with db.transaction() as tx:
        code = channel_access.request_pairing(tx, acme.scope, bound, "telegram", str(STRANGER),
                                              at=datetime.now(UTC) - PAIRING_TTL - timedelta(seconds=5))
    assert code is not None
    expired = gateway.client.post(f"{ROUTES}/pairings/approve", json={"code": code}, headers=acme.headers("admin"))
    assert expired.status_code == 409 and "expired" in expired.json()["error"]["message"]
    unknown = gateway.client.post(f"{ROUTES}/pairings/approve", json={"code": "ABCD-EFGH"},
                                  headers=acme.headers("admin"))
    assert unknown.status_code == 404
    set_policy(gateway, acme, dm_policy="pairing")
    post(gateway, dm())  # an expired code: the sender is given a new one
    assert _code_of(replies(gateway)[0]).replace("-", "") != code
    assert gateway.runtime.received == []


def test_group_messages_follow_the_group_policy_not_the_dm_policy(gateway: Gateway, acme: Tenant,
                                                                  bound: str) -> None:
    set_policy(gateway, acme, dm_policy="allowlist")
    assert post(gateway, message(text="@SupportBot hi")).json() == {"ok": True}  # groups are not allowlisted
    assert post(gateway, message(text="just chatter")).json()["ignored"] == "not addressed to the bot"
    set_policy(gateway, acme, group_policy="all")
    assert post(gateway, message(text="just chatter")).json() == {"ok": True}
    bot_sender = message(text="beep")
    bot_sender["message"]["from"]["is_bot"] = True
    assert post(gateway, bot_sender).json()["ignored"] == "sent by a bot"
    assert [i.text for i in gateway.runtime.received] == ["hi", "just chatter"]


# -- mentions -------------------------------------------------------------------------------------------------
def test_a_mention_is_stripped_before_the_runtime(gateway: Gateway, acme: Tenant, bound: str) -> None:
    post(gateway, message(text="@SupportBot /tool read_file path=a.txt"))
    post(gateway, message(text="/tool@supportbot read_file path=b.txt"))
    post(gateway, message(text="what do you think, @SupportBot?"))
    assert [i.text for i in gateway.runtime.received] == ["/tool read_file path=a.txt",
                                                         "/tool read_file path=b.txt", "what do you think, ?"]


def test_a_message_that_is_only_the_mention_is_ignored(gateway: Gateway, acme: Tenant, bound: str) -> None:
    answer = post(gateway, message(text="  @SupportBot  "))
    assert answer.status_code == 200 and "only a mention" in answer.json()["ignored"]
    assert gateway.runtime.received == [] and gateway.platforms.requests == []


# -- Discord ----------------------------------------------------------------------------------------------------
def test_discord_dms_follow_the_dm_policy_and_guilds_pass(db: Database, gateway: Gateway, acme: Tenant) -> None:
    key = Ed25519PrivateKey.generate()
    agent_in(db, acme)
    assert discord_helpers.bind(gateway, acme, key).status_code == 201
    set_policy(gateway, acme, dm_policy="pairing")
    answer = discord_helpers.send(gateway, key, discord_helpers.command("hi", guild=None))
    assert answer.status_code == 200
    data = answer.json()["data"]
    assert answer.json()["type"] == 4 and data["flags"] == 64 and _code_of(data["content"])
    assert gateway.runtime.received == []
    assert gateway.client.post(f"{ROUTES}/pairings/approve", json={"code": _code_of(data["content"])},
                               headers=acme.headers("admin")).json()["platform"] == "discord"
    assert discord_helpers.send(gateway, key, discord_helpers.command("hi", guild=None)).json() == {"type": 5}
    assert discord_helpers.send(gateway, key, discord_helpers.command(
        f"<@{discord_helpers.APP}> /tool read_file path=a.txt")).json() == {"type": 5}
    assert [i.text for i in gateway.runtime.received] == ["hi", "/tool read_file path=a.txt"]
    only = discord_helpers.send(gateway, key, discord_helpers.command(f"<@!{discord_helpers.APP}>"))
    assert "no message" in only.json()["data"]["content"]


# -- hostile input ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("body", "field"), [({"dm_policy": "everyone"}, "dm_policy"),
                                             ({"group_policy": "some"}, "group_policy"),
                                             ({"dm_policy": 1}, "dm_policy"),
                                             ({"dm_policy": "open", "tenant_id": "x"}, "tenant_id")])
def test_a_bad_policy_is_422_naming_the_field(gateway: Gateway, acme: Tenant, bound: str, body: dict[str, Any],
                                              field: str) -> None:
    answer = gateway.client.put(ROUTES, json=body, headers=acme.headers("admin"))
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"]["field"] == field


@pytest.mark.parametrize(("body", "field"), [({"platform": "slack", "sender_id": "1"}, "platform"),
                                             ({"platform": "telegram", "sender_id": "-1"}, "sender_id"),
                                             ({"platform": "telegram", "sender_id": "1" * 21}, "sender_id")])
def test_a_bad_sender_is_422_naming_the_field(gateway: Gateway, acme: Tenant, bound: str, body: dict[str, Any],
                                              field: str) -> None:
    answer = gateway.client.post(f"{ROUTES}/allowlist", json=body, headers=acme.headers("admin"))
    assert answer.status_code == 422 and answer.json()["error"]["field"] == field


def test_a_malformed_code_is_422_and_another_orgs_agent_is_404(gateway: Gateway, acme: Tenant, globex: Tenant,
                                                               bound: str) -> None:
    bad = gateway.client.post(f"{ROUTES}/pairings/approve", json={"code": "O0O0-I1I1"}, headers=acme.headers("admin"))
    assert bad.status_code == 422 and bad.json()["error"]["field"] == "code"
    for method, path in (("GET", ROUTES), ("GET", f"{ROUTES}/allowlist"), ("GET", f"{ROUTES}/pairings")):
        assert gateway.client.request(method, path, headers=globex.headers("admin")).status_code == 404
