"""What the channel tests share: the fake Telegram and Discord APIs, a fake runtime handler, and the gateway
they are wired into (the ``gateway`` fixture builds it)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import httpx
from fastapi.testclient import TestClient

from agentfy.channels.state import ChannelState
from agentfy.runtime.inbound import Inbound, Reply
from agentfy.runtime.model import TextSink

TELEGRAM_API = "http://telegram.fake"
DISCORD_API = "http://discord.fake/api/v10"


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

    def handle(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        self.requests.append((request.method, str(request.url), body))
        method = str(request.url).rsplit("/", 1)[-1]
        if method in self.down_once:
            self.down_once.discard(method)
            raise httpx.ConnectError("the fake API is down", request=request)
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
            if url.endswith("/sendMessage"):
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
