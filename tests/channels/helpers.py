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
class FakeRuntime:
    """The runtime's MessageHandler as a channel sees it: records what it got, answers ``echo: <text>``."""

    received: list[Inbound] = field(default_factory=list)
    answer: str | None = "echo"

    async def __call__(self, inbound: Inbound, *, on_text: TextSink | None = None) -> Reply:
        self.received.append(inbound)
        text = None if self.answer is None else f"{self.answer}: {inbound.text}"
        return Reply(text=text, session_key=f"{inbound.tenant_id}:{inbound.agent_key}:{inbound.conversation}")


@dataclass
class FakePlatforms:
    """Every request the fake Telegram and Discord APIs received, as (method, url, json body)."""

    requests: list[tuple[str, str, Any]] = field(default_factory=list)

    def handle(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        self.requests.append((request.method, str(request.url), body))
        return httpx.Response(200, json={"ok": True, "result": {"message_id": 1}})

    def to(self, prefix: str) -> list[tuple[str, str, Any]]:
        return [r for r in self.requests if r[1].startswith(prefix)]


@dataclass
class Gateway:
    client: TestClient
    runtime: FakeRuntime
    platforms: FakePlatforms
    state: ChannelState
