"""Channel fixtures: a gateway app with a fake runtime handler (it records every Inbound and echoes), fake
Telegram and Discord APIs (every request they get is recorded), and two organizations with admin keys; and
``live``, the real app and runtime (offline model) behind the fake Telegram, for the end-to-end tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from agentfy.channels.settings import ChannelSettings, DiscordSettings, TelegramSettings
from agentfy.channels.state import ChannelState
from agentfy.gateway.app import create_app
from agentfy.identity.roles import ROLES
from agentfy.store.db import Database
from agentfy.store.repos.credentials import CredentialCipher
from tests.channels.helpers import DISCORD_API, TELEGRAM_API, FakePlatforms, FakeRuntime, Gateway, Live
from tests.helpers.tenants import Tenant, make_tenant


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


@pytest.fixture
def live(db: Database, tmp_path: Path) -> Iterator[Live]:
    workspace = tmp_path / "workspaces"
    app = create_app(db, signing_secret=b"s" * 32, workspace_root=workspace)
    platforms = FakePlatforms()
    state: ChannelState = app.state.channels
    state.transport = httpx.MockTransport(platforms.handle)
    state.settings = ChannelSettings(telegram=TelegramSettings(api_base=TELEGRAM_API))
    state.cipher_override = CredentialCipher(CredentialCipher.generate_key())
    with TestClient(app) as client:
        yield Live(client, platforms, workspace)


@pytest.fixture
def acme(db: Database) -> Tenant:
    return make_tenant(db, "acme", keys=ROLES)


@pytest.fixture
def globex(db: Database) -> Tenant:
    return make_tenant(db, "globex", keys=ROLES)
