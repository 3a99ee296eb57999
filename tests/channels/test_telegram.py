"""Telegram through the real HTTP endpoints: binding a bot, the webhook's secret token, which messages reach
the agent with which SCOPE and ACTOR, the reply to a fake Bot API, and hostile updates (SQLite and
PostgreSQL)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import sqlalchemy as sa

from agentfy.channels.settings import TelegramSettings
from agentfy.identity import Scope
from agentfy.runtime.model import ModelError
from agentfy.runtime.providers import ModelConfigError
from agentfy.settings import SettingsError, load_settings
from agentfy.store.db import Database
from agentfy.store.repos import agents
from tests.channels.helpers import TELEGRAM_API, FakeClock, Gateway, transactions_begun
from tests.helpers.tenants import Tenant

TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
SECRET = "s3cret-token_of-acme-0123456789"
BOT = "SupportBot"
GROUP_CHAT = -1001234567890
SENDER = 1001


def bind(gateway: Gateway, tenant: Tenant, agent: str = "support", bot: str = BOT, secret: str | None = SECRET,
         token: str = TOKEN) -> Any:
    body: dict[str, Any] = {"bot_username": f"@{bot}", "bot_token": token}
    if secret is not None:
        body["secret_token"] = secret
    return gateway.client.put(f"/v1/agents/{agent}/channels/telegram", json=body, headers=tenant.headers("admin"))


def agent_in(db: Database, tenant: Tenant, key: str = "support") -> str:
    with db.transaction() as tx:
        return agents.create_agent(tx, tenant.scope, agent_key=key).id


def message(chat_id: int = GROUP_CHAT, chat_type: str = "supergroup", text: str = "@SupportBot hello",
            sender: int | None = SENDER, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"message_id": 42, "chat": {"id": chat_id, "type": chat_type}, "text": text, **extra}
    if sender is not None:
        body["from"] = {"id": sender, "is_bot": False, "first_name": "Ada"}
    return {"update_id": 7, "message": body}


def post(gateway: Gateway, update: Any, secret: str | None = SECRET, bot: str = BOT, **kwargs: Any) -> Any:
    headers = {} if secret is None else {"X-Telegram-Bot-Api-Secret-Token": secret}
    return gateway.client.post(f"/v1/channels/telegram/{bot}/webhook", json=update, headers=headers, **kwargs)


@pytest.fixture
def bound(db: Database, gateway: Gateway, acme: Tenant) -> str:
    agent_id = agent_in(db, acme)
    answer = bind(gateway, acme)
    assert answer.status_code == 201, answer.text
    return agent_id


# -- binding ------------------------------------------------------------------------------------------------
def test_binding_answers_the_webhook_path_and_never_the_secrets(gateway: Gateway, acme: Tenant, bound: str) -> None:
    listed = gateway.client.get("/v1/agents/support/channels", headers=acme.headers("operator"))
    assert listed.status_code == 200
    (binding,) = listed.json()
    assert binding["webhook_path"] == "/v1/channels/telegram/SupportBot/webhook"
    assert binding["agent_id"] == bound and binding["name"] == "SupportBot"
    assert binding["secret_token"] is None and TOKEN not in listed.text and SECRET not in listed.text


def test_a_generated_secret_token_is_shown_once_and_works(db: Database, gateway: Gateway, acme: Tenant) -> None:
    agent_in(db, acme)
    created = bind(gateway, acme, secret=None)
    assert created.status_code == 201
    generated = created.json()["secret_token"]
    assert len(generated) >= 40
    assert post(gateway, message(), secret=generated).status_code == 200
    assert len(gateway.runtime.received) == 1
    again = bind(gateway, acme, secret=SECRET)  # rebinding replaces: same agent, 200, the old secret dies
    assert again.status_code == 200 and again.json()["secret_token"] is None
    assert post(gateway, message(), secret=generated).status_code == 401


def test_the_bot_token_is_stored_encrypted(db: Database, gateway: Gateway, bound: str) -> None:
    with db.transaction(write=False) as tx:
        row = tx.one(sa.text("SELECT verifier, token_ciphertext FROM channel_bindings"))
    assert row is not None
    assert SECRET not in row[0] and TOKEN.encode() not in bytes(row[1])


def test_binding_needs_an_admin(db: Database, gateway: Gateway, acme: Tenant) -> None:
    agent_in(db, acme)
    answer = gateway.client.put("/v1/agents/support/channels/telegram", json={"bot_username": BOT, "bot_token": TOKEN},
                                headers=acme.headers("operator"))
    assert answer.status_code == 403


@pytest.mark.parametrize(("field", "value"), [("bot_username", "@sh"), ("bot_username", "@NotABotName"),
                                              ("bot_username", "@bad name bot"), ("bot_token", "no-colon"),
                                              ("secret_token", "short"), ("secret_token", "has spaces in it ....")])
def test_a_bad_binding_is_422_naming_the_field_and_writes_nothing(db: Database, gateway: Gateway, acme: Tenant,
                                                                 field: str, value: str) -> None:
    agent_in(db, acme)
    body = {"bot_username": BOT, "bot_token": TOKEN, "secret_token": SECRET, field: value}
    answer = gateway.client.put("/v1/agents/support/channels/telegram", json=body, headers=acme.headers("admin"))
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"]["field"] == field
    with db.transaction(write=False) as tx:
        assert tx.scalar(sa.text("SELECT count(*) FROM channel_bindings")) == 0


def test_a_bot_bound_in_one_organization_cannot_be_bound_in_another(db: Database, gateway: Gateway, acme: Tenant,
                                                                   globex: Tenant, bound: str) -> None:
    agent_in(db, globex)
    answer = bind(gateway, globex, bot="supportbot")  # the same bot: usernames are case-insensitive
    assert answer.status_code == 409
    assert acme.slug not in answer.text and bound not in answer.text


def test_an_unknown_agent_is_404_and_nothing_is_written(db: Database, gateway: Gateway, acme: Tenant) -> None:
    assert bind(gateway, acme, agent="nobody").status_code == 404
    with db.transaction(write=False) as tx:
        assert tx.scalar(sa.text("SELECT count(*) FROM channel_bindings")) == 0


def test_unbinding_refuses_the_webhook_afterwards(gateway: Gateway, acme: Tenant, bound: str) -> None:
    path = "/v1/agents/support/channels/telegram"
    assert gateway.client.delete(path, headers=acme.headers("admin")).status_code == 204
    assert post(gateway, message()).status_code == 401
    again = gateway.client.delete(path, headers=acme.headers("admin"))
    # the agent is there: the 404 names the platform it has no bot on, not the agent
    assert again.status_code == 404
    assert (again.json()["error"]["field"], again.json()["error"]["value"]) == ("platform", "telegram")


# -- the webhook ---------------------------------------------------------------------------------------------
def test_a_group_mention_reaches_the_agent_in_the_groups_scope_as_the_sender(gateway: Gateway, acme: Tenant,
                                                                             bound: str) -> None:
    answer = post(gateway, message())
    assert answer.status_code == 200 and answer.json() == {"ok": True}
    (inbound,) = gateway.runtime.received
    assert inbound.tenant_id == acme.scope.tenant_id and inbound.agent_key == "support"
    assert inbound.context.user_id == f"group:telegram:{GROUP_CHAT}"  # SCOPE: the group
    assert inbound.context.sender_id == str(SENDER)  # ACTOR: the person
    assert inbound.context.agent_id == bound and inbound.context.tenant_id == acme.scope.tenant_id
    assert (inbound.channel, inbound.conversation, inbound.text, inbound.message_id) == (
        "telegram", f"telegram:{GROUP_CHAT}", "hello", "42")  # the mention is stripped
    ((method, url, body),) = gateway.platforms.requests
    assert (method, url) == ("POST", f"{TELEGRAM_API}/bot{TOKEN}/sendMessage")
    assert body["chat_id"] == GROUP_CHAT and body["text"] == "echo: hello"
    assert body["reply_parameters"]["message_id"] == 42


def test_a_dm_is_in_the_senders_scope(gateway: Gateway, bound: str) -> None:
    assert post(gateway, message(chat_id=SENDER, chat_type="private", text="hi there")).status_code == 200
    (inbound,) = gateway.runtime.received
    assert inbound.context.user_id == str(SENDER) and inbound.context.sender_id == str(SENDER)
    ((_, _, body),) = gateway.platforms.requests
    assert body == {"chat_id": SENDER, "text": "echo: hi there"}


def test_an_update_is_verified_and_read_in_one_transaction(gateway: Gateway, bound: str,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The binding, the agent's policy and the bot token in one read (each one a round trip on PostgreSQL);
    the reply is sent with that token, never read again."""
    begun = transactions_begun(gateway.state.db, monkeypatch)
    assert post(gateway, message(chat_id=SENDER, chat_type="private", text="hi there")).status_code == 200
    assert begun == [False]
    ((_, _, body),) = gateway.platforms.requests
    assert body == {"chat_id": SENDER, "text": "echo: hi there"}
    begun.clear()
    assert post(gateway, message(chat_id=SENDER, chat_type="private", text="hi"), secret="wrong").status_code == 401
    assert begun == [False] and len(gateway.platforms.requests) == 1


@pytest.mark.parametrize("text", ["/ask@SupportBot what now", "hey @supportbot!", "@SUPPORTBOT ping"])
def test_mentions_and_commands_in_any_case_address_the_bot(gateway: Gateway, bound: str, text: str) -> None:
    assert post(gateway, message(text=text)).json() == {"ok": True}
    assert len(gateway.runtime.received) == 1


def test_a_reply_to_the_bot_addresses_it(gateway: Gateway, bound: str) -> None:
    replied = {"message_id": 41, "from": {"id": 555, "is_bot": True, "username": "SupportBot"}}
    assert post(gateway, message(text="and then?", reply_to_message=replied)).json() == {"ok": True}
    assert gateway.runtime.received[0].text == "and then?"


@pytest.mark.parametrize(("update", "reason"), [
    (message(text="just chatting"), "not addressed to the bot"),
    (message(text="mail me at ops@SupportBot.example"), "not addressed to the bot"),
    (message(text="@SupportBotter hi"), "not addressed to the bot"),
    (message(text="to you", reply_to_message={"message_id": 1, "from": {"id": 9, "is_bot": False}}),
     "not addressed to the bot"),
    (message(chat_type="channel"), "a channel post"),
    (message(sender=None), "no sender"),
    ({"update_id": 8, "edited_message": message()["message"]}, "not a new message"),
    ({"update_id": 9, "message": {"message_id": 1, "chat": {"id": 1, "type": "private"},
                                  "from": {"id": 2, "is_bot": True}, "text": "hi"}}, "sent by a bot"),
    ({"update_id": 9, "message": {"message_id": 1, "chat": {"id": 1, "type": "private"},
                                  "from": {"id": 2, "is_bot": False}, "photo": []}}, "no text"),
])
def test_messages_not_for_the_agent_are_acknowledged_and_ignored(gateway: Gateway, bound: str, update: Any,
                                                                 reason: str) -> None:
    answer = post(gateway, update)
    assert answer.status_code == 200 and answer.json() == {"ok": True, "ignored": reason}
    assert gateway.runtime.received == [] and gateway.platforms.requests == []


@pytest.mark.parametrize("secret", [None, "", "wrong-secret-token-0123456789", SECRET + "x", SECRET[:-1]])
def test_a_missing_or_wrong_secret_token_is_401_and_nothing_happens(db: Database, gateway: Gateway, bound: str,
                                                                   secret: str | None) -> None:
    answer = post(gateway, message(), secret=secret)
    assert answer.status_code == 401 and answer.json()["error"]["code"] == "unauthorized"
    assert gateway.runtime.received == [] and gateway.platforms.requests == []


@pytest.mark.parametrize("bot", ["OtherBot", "not a bot", "x" * 200])
def test_an_unknown_bot_is_the_same_401(gateway: Gateway, bound: str, bot: str) -> None:
    answer = post(gateway, message(), bot=bot)
    assert answer.status_code == 401 and gateway.runtime.received == []


def test_the_secret_is_checked_before_the_body_is_read(gateway: Gateway, bound: str) -> None:
    assert post(gateway, {"not": "an update"}, secret="wrong-secret-token-0123456789").status_code == 401


def test_two_tenants_same_agent_key_same_chat_never_share(db: Database, gateway: Gateway, acme: Tenant,
                                                        globex: Tenant, bound: str) -> None:
    other = agent_in(db, globex)
    assert bind(gateway, globex, bot="GlobexHelpBot", secret="globex-secret-token-0123456789",
                token="987654321:ZZHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw").status_code == 201
    assert post(gateway, message()).status_code == 200
    assert post(gateway, message(text="@GlobexHelpBot hello"), secret="globex-secret-token-0123456789",
                bot="GlobexHelpBot").status_code == 200
    first, second = gateway.runtime.received
    assert first.context.user_id == second.context.user_id == f"group:telegram:{GROUP_CHAT}"
    assert (first.tenant_id, first.context.agent_id) == (acme.scope.tenant_id, bound)
    assert (second.tenant_id, second.context.agent_id) == (globex.scope.tenant_id, other)
    assert first.agent_key == second.agent_key == "support"
    # each reply went out with its own bot's token
    assert [url.split("/")[3] for _, url, _ in gateway.platforms.requests] == [
        "bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw", "bot987654321:ZZHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"]
    # a secret of one tenant's bot does not open the other's
    assert post(gateway, message(), secret="globex-secret-token-0123456789").status_code == 401


def test_a_long_reply_is_split_at_telegrams_limit(gateway: Gateway, bound: str) -> None:
    gateway.runtime.answer = "x" * 5000
    assert post(gateway, message()).status_code == 200
    texts = [body["text"] for _, _, body in gateway.platforms.requests]
    assert [len(t) for t in texts] == [4096, len("x" * 5000 + ": hello") - 4096]


def test_no_reply_sends_nothing(gateway: Gateway, bound: str) -> None:
    gateway.runtime.answer = None
    assert post(gateway, message()).status_code == 200
    assert len(gateway.runtime.received) == 1 and gateway.platforms.requests == []


def test_without_a_runtime_the_webhook_is_503_and_telegram_retries(gateway: Gateway, bound: str) -> None:
    gateway.state.handler = None
    answer = post(gateway, message())
    assert answer.status_code == 503 and gateway.platforms.requests == []


def test_a_renamed_agent_is_reached_under_its_new_key(db: Database, gateway: Gateway, acme: Tenant,
                                                     bound: str) -> None:
    with db.transaction() as tx:
        agents.rename_agent(tx, Scope(acme.scope.tenant_id), bound, "helper")
    assert post(gateway, message()).status_code == 200
    assert gateway.runtime.received[0].agent_key == "helper"


# -- hostile updates -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(("update", "field"), [
    ({}, "update_id"),
    ({"update_id": "7"}, "update_id"),
    ({"update_id": 2**64}, "update_id"),
    ({"update_id": -1}, "update_id"),
    ({"update_id": 1, "message": {"chat": {"id": 1, "type": "private"}}}, "message.message_id"),
    ({"update_id": 1, "message": {"message_id": 1, "chat": {"id": 2**70, "type": "private"}}}, "message.chat.id"),
    ({"update_id": 1, "message": {"message_id": 1, "chat": {"id": 1, "type": "secret"}}}, "message.chat.type"),
    ({"update_id": 1, "message": {"message_id": 1, "chat": {"id": 1.5, "type": "private"}}}, "message.chat.id"),
    ({"update_id": 1, "message": {"message_id": 1, "chat": {"id": 1, "type": "private"},
                                  "from": {"id": -5, "is_bot": False}, "text": "hi"}}, "message.from.id"),
    ({"update_id": 1, "message": {"message_id": 1, "chat": {"id": 1, "type": "private"},
                                  "from": {"id": 5, "is_bot": "no"}, "text": "hi"}}, "message.from.is_bot"),
    ({"update_id": 1, "message": {"message_id": 1, "chat": {"id": 1, "type": "private"},
                                  "from": {"id": 5}, "text": 12}}, "message.text"),
    ([1, 2, 3], "body"),
    ("just a string", "body"),
])
def test_hostile_updates_are_422_naming_the_field(gateway: Gateway, bound: str, update: Any, field: str) -> None:
    answer = post(gateway, update)
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert error["code"] == "invalid_input" and error["field"] == field and error["message"]
    assert gateway.runtime.received == []


def test_text_the_store_would_refuse_is_422(gateway: Gateway, bound: str) -> None:
    answer = post(gateway, message(chat_type="private", text="hi\u0000there"))
    assert answer.status_code == 422 and answer.json()["error"]["field"] == "message.text"


@pytest.mark.parametrize("body", [b"{not json", b"\xff\xfe", b'{"update_id": 1e400}', b"[" * 5000 + b"]" * 5000])
def test_unreadable_bodies_are_4xx_never_500(gateway: Gateway, bound: str, body: bytes) -> None:
    answer = gateway.client.post(f"/v1/channels/telegram/{BOT}/webhook", content=body, headers={
        "X-Telegram-Bot-Api-Secret-Token": SECRET, "Content-Type": "application/json"})
    assert 400 <= answer.status_code < 500, answer.text
    assert gateway.runtime.received == []


def test_the_body_limit_applies_to_webhooks(gateway: Gateway, bound: str) -> None:
    huge = message(text="@SupportBot " + "x" * 300_000)
    answer = post(gateway, huge)
    assert answer.status_code == 413 and gateway.runtime.received == []


def test_the_api_bases_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTFY_TELEGRAM_API_BASE", "http://127.0.0.1:8081/")
    monkeypatch.setenv("AGENTFY_DISCORD_API_BASE", "https://discord.internal/api/v10")
    settings = load_settings().channels()
    assert (settings.telegram.api_base, settings.discord.api_base) == (
        "http://127.0.0.1:8081", "https://discord.internal/api/v10")
    monkeypatch.setenv("AGENTFY_TELEGRAM_API_BASE", "ftp://nope")
    with pytest.raises(SettingsError, match=r"telegram\.api_base 'ftp://nope': Value error, 'ftp://nope' is not an "
                                            r"http\(s\) URL|telegram\.api_base 'ftp://nope': 'ftp://nope' is not"):
        load_settings()


# -- streaming and failures -----------------------------------------------------------------------------------
def _stream_at_once(gateway: Gateway) -> None:
    """No hold of the first piece: the reply streams from its first piece (the pacing tests' setting)."""
    telegram = TelegramSettings(api_base=TELEGRAM_API, first_piece_delay_ms=0)
    gateway.state.settings = gateway.state.settings.model_copy(update={"telegram": telegram})


def test_a_quick_reply_is_one_message_never_edited(gateway: Gateway, bound: str) -> None:
    clock = gateway.use_clock(FakeClock())
    # the whole reply within the hold (75 ms by default): sent as one message the moment it is done
    gateway.runtime.pieces = ["Hel", "lo", " there"]
    gateway.runtime.clock, gateway.runtime.step = clock, 0.01
    assert post(gateway, message(chat_id=SENDER, chat_type="private", text="hi")).status_code == 200
    calls = [(url.rsplit("/", 1)[1], body["text"]) for _, url, body in gateway.platforms.requests]
    assert calls == [("sendMessage", "Hello there")]


def test_a_slow_reply_streams_after_the_hold_edited_at_most_once_a_second(gateway: Gateway, bound: str) -> None:
    clock = gateway.use_clock(FakeClock())
    # pieces 0.4 s apart: held at the first, sent when the next finds the hold over, edited a second later (at
    # the 5th piece) and at the 8th, which is the whole reply (nothing left for the end)
    gateway.runtime.pieces = ["Hel", "lo", " the", "re", " my", " friend", "!", " Bye"]
    gateway.runtime.clock, gateway.runtime.step = clock, 0.4
    assert post(gateway, message(chat_id=SENDER, chat_type="private", text="hi")).status_code == 200
    calls = [(url.rsplit("/", 1)[1], body["text"]) for _, url, body in gateway.platforms.requests]
    assert calls == [("sendMessage", "Hello"), ("editMessageText", "Hello there my"),
                     ("editMessageText", "Hello there my friend! Bye")]
    assert [m["text"] for m in gateway.platforms.shown()] == ["Hello there my friend! Bye"]


def test_a_streamed_reply_is_sent_then_edited_at_most_once_a_second(gateway: Gateway, bound: str) -> None:
    clock = gateway.use_clock(FakeClock())
    _stream_at_once(gateway)
    # pieces 0.4 s apart: sent with the first, edited when a second has passed (the 4th and 7th), then the end
    gateway.runtime.pieces = ["Hel", "lo", " the", "re", " my", " friend", "!", " Bye"]
    gateway.runtime.clock, gateway.runtime.step = clock, 0.4
    assert post(gateway, message(chat_id=SENDER, chat_type="private", text="hi")).status_code == 200
    calls = [(url.rsplit("/", 1)[1], body["text"]) for _, url, body in gateway.platforms.requests]
    assert calls == [("sendMessage", "Hel"), ("editMessageText", "Hello there"),
                     ("editMessageText", "Hello there my friend!"), ("editMessageText", "Hello there my friend! Bye")]
    assert all(body["message_id"] == 1 and body["chat_id"] == SENDER
               for _, url, body in gateway.platforms.requests[1:])
    assert [m["text"] for m in gateway.platforms.shown()] == ["Hello there my friend! Bye"]


def test_the_edit_interval_is_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTFY_TELEGRAM_EDIT_INTERVAL_SECONDS", "2.5")
    assert load_settings().channels().telegram.edit_interval_seconds == 2.5
    monkeypatch.setenv("AGENTFY_TELEGRAM_EDIT_INTERVAL_SECONDS", "0")
    with pytest.raises(SettingsError, match="edit_interval_seconds"):
        load_settings()


def test_the_first_piece_delay_is_a_bounded_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_settings().channels().telegram.first_piece_delay_ms == 75
    monkeypatch.setenv("AGENTFY_TELEGRAM_FIRST_PIECE_DELAY_MS", "0")  # 0: every reply streams from its first piece
    assert load_settings().channels().telegram.first_piece_delay_ms == 0
    for refused in ("-1", "2001"):
        monkeypatch.setenv("AGENTFY_TELEGRAM_FIRST_PIECE_DELAY_MS", refused)
        with pytest.raises(SettingsError, match="first_piece_delay_ms"):
            load_settings()


def test_a_long_streamed_reply_ends_split_at_telegrams_limit(gateway: Gateway, bound: str) -> None:
    gateway.use_clock(FakeClock())
    gateway.runtime.pieces = ["x" * 3000, "y" * 3000]
    assert post(gateway, message()).status_code == 200
    shown = gateway.platforms.shown()
    assert [m["text"] for m in shown] == ["x" * 3000 + "y" * 1096, "y" * 1904]
    assert shown[0]["reply_parameters"]["message_id"] == 42 and "reply_parameters" not in shown[1]


def test_a_model_that_fails_gets_the_person_a_note_not_silence(gateway: Gateway, bound: str) -> None:
    gateway.runtime.error = ModelError("the model at https://llm.example/v1 answered HTTP 503")
    assert post(gateway, message()).status_code == 200
    ((_, url, body),) = gateway.platforms.requests
    assert url.endswith("/sendMessage") and body["chat_id"] == GROUP_CHAT
    assert body["text"].startswith("The agent's model could not answer (the model at https://llm.example/v1 "
                                   "answered HTTP 503). Please try again in a minute")
    assert "support" in body["text"] and TOKEN not in body["text"]


def test_a_run_that_fails_mid_stream_is_edited_to_the_note(gateway: Gateway, bound: str) -> None:
    gateway.use_clock(FakeClock())
    _stream_at_once(gateway)
    gateway.runtime.pieces = ["half an", " answer"]
    gateway.runtime.error = ModelError("the model at https://llm.example/v1 did not answer in time", timed_out=True)
    assert post(gateway, message()).status_code == 200
    (shown,) = gateway.platforms.shown()
    assert shown["text"].startswith("The agent's model did not answer in time") and "half" not in shown["text"]
    calls = [url.rsplit("/", 1)[1] for _, url, _ in gateway.platforms.requests]
    assert calls == ["sendMessage", "editMessageText"]  # the half answer was shown, then replaced


def test_a_run_that_fails_within_the_hold_is_one_message_the_note(gateway: Gateway, bound: str) -> None:
    gateway.use_clock(FakeClock())
    gateway.runtime.pieces = ["half an", " answer"]
    gateway.runtime.error = ModelError("the model at https://llm.example/v1 did not answer in time", timed_out=True)
    assert post(gateway, message()).status_code == 200
    ((_, url, body),) = gateway.platforms.requests  # nothing of the half answer was shown
    assert url.endswith("/sendMessage") and body["text"].startswith("The agent's model did not answer in time")


def test_an_unexpected_failure_gives_a_reference_never_the_exception(gateway: Gateway, bound: str,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    gateway.runtime.error = RuntimeError("SELECT secret FROM vault")
    with caplog.at_level(logging.ERROR, logger="agentfy.channels"):
        assert post(gateway, message()).status_code == 200
    ((_, _, body),) = gateway.platforms.requests
    assert body["text"].startswith("Something went wrong while the agent was answering (reference ")
    assert "SELECT" not in body["text"] and "vault" not in body["text"]
    (record,) = [r for r in caplog.records if r.message == "channels.handler_failed"]
    assert record.__dict__["reference"] in body["text"]  # the admin finds the person's reference in the log


def test_a_misconfigured_model_says_to_ask_an_admin(gateway: Gateway, bound: str) -> None:
    gateway.runtime.error = ModelConfigError("agent support: config.model.provider 'gpt' is unknown")
    assert post(gateway, message()).status_code == 200
    ((_, _, body),) = gateway.platforms.requests
    assert body["text"].startswith("The agent's model is not configured correctly (agent support: "
                                   "config.model.provider 'gpt' is unknown). Please ask an admin")


def test_progress_that_cannot_be_shown_never_fails_the_run(gateway: Gateway, bound: str) -> None:
    clock = gateway.use_clock(FakeClock())
    _stream_at_once(gateway)
    gateway.runtime.pieces, gateway.runtime.clock, gateway.runtime.step = ["one", " two", " three"], clock, 2.0
    gateway.platforms.down_once = {"editMessageText"}  # the first edit is lost: streaming stops, the end is sent
    assert post(gateway, message()).status_code == 200
    calls = [(url.rsplit("/", 1)[1], body["text"]) for _, url, body in gateway.platforms.requests]
    assert calls == [("sendMessage", "one"), ("editMessageText", "one two"), ("editMessageText", "one two three")]
