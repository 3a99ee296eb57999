"""What the channel tests share: the fake Telegram and Discord APIs, a fake runtime handler, and the gateway
they are wired into (the ``gateway`` fixture builds it); and, for the end-to-end tests, :class:`Live` — the real
app and runtime behind the fake Telegram (the ``live`` fixture builds it) — with what they read back."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from agentfy.channels.state import ChannelState
from agentfy.runtime.inbound import Inbound, Reply
from agentfy.runtime.model import TextSink
from agentfy.runtime.runner import Runtime
from agentfy.store import schema
from agentfy.store.db import Database
from agentfy.store.repos import agents, sessions
from tests.helpers.tenants import Tenant

TELEGRAM_API = "http://telegram.fake"
DISCORD_API = "http://discord.fake/api/v10"
#: The end-to-end tests' group chat, its SCOPE, and two people in it.
GROUP_CHAT = -1001234567890
SCOPE = f"group:telegram:{GROUP_CHAT}"
ALICE, BOB = 1001, 1002
BOT_TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"


@dataclass
class FakeClock:
    """A monotonic clock the test moves (nothing sleeps); :meth:`sleep` moves it instead of waiting."""

    now: float = 1000.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        """Move the clock (without yielding: several tasks sleeping at once would each move it further)."""
        self.now += seconds


@dataclass
class FakeRuntime:
    """The runtime's MessageHandler as a channel sees it: records what it got, answers ``echo: <text>``.

    ``pieces``: stream the answer in these pieces (they must join to it), moving ``clock`` by ``step``
    seconds before each; ``error``: fail with it after the pieces."""

    received: list[Inbound] = field(default_factory=list)
    answer: str | None = "echo"
    pieces: list[str] | None = None
    clock: FakeClock | None = None
    step: float = 0.0
    error: Exception | None = None

    async def __call__(self, inbound: Inbound, *, on_text: TextSink | None = None) -> Reply:
        self.received.append(inbound)
        for piece in self.pieces or ():
            if self.clock is not None:
                self.clock.now += self.step
            if on_text is not None:
                await on_text(piece)
        if self.error is not None:
            raise self.error
        text = None if self.answer is None else f"{self.answer}: {inbound.text}"
        if self.pieces is not None:
            text = "".join(self.pieces)
        return Reply(text=text, session_key=f"{inbound.tenant_id}:{inbound.agent_key}:{inbound.conversation}")


@dataclass
class FakePlatforms:
    """Every request the fake Telegram and Discord APIs received, as (method, url, json body)."""

    requests: list[tuple[str, str, Any]] = field(default_factory=list)
    next_message_id: int = 1
    #: The ID each ``sendMessage`` was answered with, by its index in ``requests``.
    sent_ids: dict[int, int] = field(default_factory=dict)

    #: API methods (``editMessageText``) whose calls fail as a lost connection would, once each.
    down_once: set[str] = field(default_factory=set)
    #: API methods answered ``429 Too Many Requests`` with these ``retry_after`` seconds, one per call, before
    #: they are answered normally again.
    too_many: dict[str, list[float]] = field(default_factory=dict)

    def handle(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        self.requests.append((request.method, str(request.url), body))
        method = str(request.url).rsplit("/", 1)[-1]
        if method in self.down_once:
            self.down_once.discard(method)
            raise httpx.ConnectError("the fake API is down", request=request)
        if self.too_many.get(method):
            seconds = self.too_many[method].pop(0)
            return httpx.Response(429, json={"ok": False, "error_code": 429,
                                             "description": f"Too Many Requests: retry after {seconds:g}",
                                             "parameters": {"retry_after": seconds}})
        message_id = 1
        if str(request.url).endswith("/sendMessage"):  # each sent message has its own ID, as on Telegram
            message_id, self.next_message_id = self.next_message_id, self.next_message_id + 1
            self.sent_ids[len(self.requests) - 1] = message_id
        return httpx.Response(200, json={"ok": True, "result": {"message_id": message_id}})

    def shown(self, start: int = 0) -> list[dict[str, Any]]:
        """Each Telegram message sent since request ``start`` as the chat shows it in the end: its
        ``sendMessage`` body with the text of its last ``editMessageText``."""
        messages: dict[int, dict[str, Any]] = {}
        for index, (_, url, body) in enumerate(self.requests[start:], start):
            if url.endswith("/sendMessage") and index in self.sent_ids:  # not one refused
                messages[self.sent_ids[index]] = dict(body)
            elif url.endswith("/editMessageText") and body["message_id"] in messages:
                messages[body["message_id"]]["text"] = body["text"]
        return list(messages.values())

    def to(self, prefix: str) -> list[tuple[str, str, Any]]:
        return [r for r in self.requests if r[1].startswith(prefix)]


@dataclass
class Gateway:
    client: TestClient
    runtime: FakeRuntime
    platforms: FakePlatforms
    state: ChannelState

    def use_clock(self, clock: FakeClock) -> FakeClock:
        """Pace the channels' replies by ``clock`` (their waits move it; nothing sleeps)."""
        self.state.clock, self.state.sleep = clock, clock.sleep
        return clock


class Live:
    """The real app (``create_app``: its endpoints, runtime and offline model) behind a fake Telegram Bot API."""

    def __init__(self, client: TestClient, platforms: FakePlatforms, workspace: Path) -> None:
        self.client, self.platforms, self.workspace = client, platforms, workspace

    @property
    def runtime(self) -> Runtime:
        """The app's agent runtime: what the webhooks, the cron routes and a test's scheduler run turns on."""
        runtime = self.client.app.state.gateway.runtime  # type: ignore[attr-defined]
        assert isinstance(runtime, Runtime)
        return runtime

    def bind(self, tenant: Tenant, bot: str, secret: str, *, token: str = BOT_TOKEN) -> None:
        """Bind the tenant's ``support`` agent to the Telegram bot ``bot`` (through the API, as an admin)."""
        body = {"bot_username": f"@{bot}", "bot_token": token, "secret_token": secret}
        answer = self.client.put("/v1/agents/support/channels/telegram", json=body, headers=tenant.headers("admin"))
        assert answer.status_code == 201, answer.text

    def post(self, bot: str, secret: str, text: str, *, sender: int = ALICE, chat: int = GROUP_CHAT,
             chat_type: str = "supergroup") -> None:
        """Post an update (in a group: as a reply to the bot, so it is addressed, as message 42); returns once
        the webhook and its turn (the reply's delivery included) are done."""
        body: dict[str, Any] = {"message_id": 42, "chat": {"id": chat, "type": chat_type}, "text": text,
                                "from": {"id": sender, "is_bot": False, "first_name": "Ada"}}
        if chat_type != "private":
            body["reply_to_message"] = {"message_id": 41, "from": {"id": 555, "is_bot": True, "username": bot}}
        answer = self.client.post(f"/v1/channels/telegram/{bot}/webhook", json={"update_id": 7, "message": body},
                                  headers={"X-Telegram-Bot-Api-Secret-Token": secret})
        assert answer.status_code == 200, answer.text

    def say(self, bot: str, secret: str, text: str, *, sender: int = ALICE, chat: int = GROUP_CHAT,
            chat_type: str = "supergroup") -> str:
        """Post an update and return the agent's reply as the fake Bot API received it: the one message sent
        meanwhile (for turns that start no background task, which could send messages of its own)."""
        before = len(self.platforms.requests)
        self.post(bot, secret, text, sender=sender, chat=chat, chat_type=chat_type)
        shown = self.platforms.shown(before)  # the reply streams in: one message, edited as it grows
        assert len(shown) == 1, self.platforms.requests[before:]
        assert shown[0]["chat_id"] == chat
        return str(shown[0]["text"])

    def wait_idle(self) -> None:
        """Until the runtime's background work (subagents, delegates, their announcements) has finished."""
        self.client.portal.call(self.runtime.wait_idle)  # type: ignore[union-attr]

    def files(self) -> dict[str, str]:
        return {str(p.relative_to(self.workspace)): p.read_text() for p in sorted(self.workspace.rglob("*"))
                if p.is_file()}


def sessions_of(db: Database, tenant: Tenant) -> list[tuple[str, str, str]]:
    """``(session_key, user_id SCOPE, agent_id)`` of the tenant's sessions."""
    with db.transaction(write=False) as tx:
        rows = tx.all(sa.select(schema.sessions.c.session_key, schema.sessions.c.user_id, schema.sessions.c.agent_id)
                      .where(schema.sessions.c.tenant_id == tenant.scope.tenant_id))
    return [(str(r[0]), str(r[1]), str(r[2])) for r in rows]


def messages_of(db: Database, tenant: Tenant) -> list[tuple[str, str | None, str]]:
    """``(role, sender_id, content)`` of the messages of every session of the tenant (the chat's, the
    subagent's, the teammate's)."""
    with db.transaction(write=False) as tx:
        return [(m.role, m.sender_id, m.content) for key, _, _ in sessions_of(db, tenant)
                for m in sessions.list_messages(tx, tenant.scope, key)]


def agent_id_of(db: Database, tenant: Tenant, agent_key: str = "support") -> str:
    with db.transaction(write=False) as tx:
        return agents.resolve_agent(tx, tenant.scope, agent_key).id


def transactions_begun(db: Database, monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """From now on (the test's), each transaction ``db`` begins, by whether it writes: a webhook's reads are
    counted, since each transaction is a round trip on PostgreSQL."""
    begun: list[bool] = []
    transaction = db.transaction

    def counted(*, write: bool = True) -> Any:
        begun.append(write)
        return transaction(write=write)

    monkeypatch.setattr(db, "transaction", counted)
    return begun
