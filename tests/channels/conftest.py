"""Channel fixtures: a gateway app with a fake runtime handler (it records every Inbound and echoes), fake
Telegram and Discord APIs (every request they get is recorded), and two organizations with admin keys."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from agentfy.channels.settings import ChannelSettings, DiscordSettings, TelegramSettings
from agentfy.channels.state import ChannelState
from agentfy.gateway.app import create_app
from agentfy.runtime.inbound import Inbound, Reply
from agentfy.store.db import Database
from agentfy.store.repos.credentials import CredentialCipher
from tests.gateway.conftest import acme, globex  # noqa: F401 - the same two organizations as the gateway's tests

TELEGRAM_API = "http://telegram.fake"
DISCORD_API = "http://discord.fake/api/v10"


@dataclass
class FakeRuntime:
    """The runtime's MessageHandler as a channel sees it: records what it got, answers ``echo: <text>``."""

    received: list[Inbound] = field(default_factory=list)
    answer: str | None = "echo"

    async def __call__(self, inbound: Inbound) -> Reply:
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


@pytest.fixture
def gateway(db: Database) -> Iterator[Gateway]:
    app = create_app(db, signing_secret=b"s" * 32)
    runtime, platforms = FakeRuntime(), FakePlatforms()
    state: ChannelState = app.state.channels
    state.handler = runtime
    state.transport = httpx.MockTransport(platforms.handle)
    state.settings = ChannelSettings(telegram=TelegramSettings(api_base=TELEGRAM_API),
                                     discord=DiscordSettings(api_base=DISCORD_API))
    state.cipher_override = CredentialCipher(CredentialCipher.generate_key())
    with TestClient(app) as client:
        yield Gateway(client, runtime, platforms, state)

