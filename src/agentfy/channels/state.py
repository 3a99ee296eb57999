"""What the channel webhooks share on a gateway: the database, the settings, the credentials cipher, the
runtime's message handler, and how to reach the platforms' APIs.

One object on ``app.state.channels`` (:func:`install`, called by :func:`agentfy.gateway.app.create_app`), so
the channels add nothing to the gateway's own state.  The runtime is attached by setting
``app.state.channels.handler`` (a :class:`agentfy.runtime.inbound.MessageHandler`); until it is, a webhook
that would call it answers 503 and calls nothing, so the platform retries later instead of losing the message.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import httpx
from fastapi import FastAPI, Request

from agentfy.channels.settings import ChannelSettings
from agentfy.channels.web import mount_chat_page
from agentfy.errors import ApiError
from agentfy.keys import credentials_cipher as configured_cipher
from agentfy.runtime.inbound import MessageHandler
from agentfy.settings import Settings
from agentfy.store.db import Database
from agentfy.store.repos.credentials import CredentialCipher, CredentialKeyError


def credentials_cipher(db: Database, settings: Settings) -> CredentialCipher:
    """The credentials cipher of the settings (see :func:`agentfy.keys.credentials_cipher`), or 503 saying
    which setting is missing: bot tokens are never stored unencrypted."""
    try:
        cipher = configured_cipher(settings, db.url, create=True, required=True)
    except CredentialKeyError as error:
        raise ApiError(503, "unavailable", f"bot tokens cannot be encrypted: {error}") from None
    assert cipher is not None
    return cipher


@dataclass
class ChannelState:
    """See the module docstring.  ``transport`` replaces the network for the platforms' APIs (tests)."""

    db: Database
    settings: ChannelSettings = field(default_factory=ChannelSettings)
    #: The process's settings, as the gateway was given them (the credentials key).
    app_settings: Settings = field(default_factory=Settings)
    handler: MessageHandler | None = None
    transport: httpx.AsyncBaseTransport | None = None
    cipher_override: CredentialCipher | None = None
    _cipher: CredentialCipher | None = field(default=None, init=False, repr=False)
    _client: httpx.AsyncClient | None = field(default=None, init=False, repr=False)
    _client_loop: asyncio.AbstractEventLoop | None = field(default=None, init=False, repr=False)

    def cipher(self) -> CredentialCipher:
        if self.cipher_override is not None:
            return self.cipher_override
        if self._cipher is None:
            self._cipher = credentials_cipher(self.db, self.app_settings)
        return self._cipher

    def require_handler(self) -> MessageHandler:
        """The runtime's handler, or 503 (nothing is accepted that could not be handed on)."""
        if self.handler is None:
            raise ApiError(503, "unavailable", "no agent runtime is attached to this gateway; retry later")
        return self.handler

    def client(self) -> httpx.AsyncClient:
        """The client replies are sent with: one per event loop, kept open (connections reused).

        Why shared: a new client loads the CA bundle into a new TLS context, measured at tens of milliseconds
        on the event loop per reply, more than the whole agent turn.  Bound to the loop it was made on (an
        ``httpx.AsyncClient`` may not cross event loops); closed by :meth:`aclose` at shutdown."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            self._client = httpx.AsyncClient(transport=self.transport,
                                             timeout=self.settings.api_timeout_seconds)
            self._client_loop = loop
        return self._client

    async def aclose(self) -> None:
        """Close the shared client (the gateway's shutdown)."""
        client, self._client = self._client, None
        if client is not None and self._client_loop is asyncio.get_running_loop():
            await client.aclose()


def install(app: FastAPI, db: Database, settings: Settings) -> ChannelState:
    """Put the channels' state on ``app`` and serve the web chat page."""
    state = ChannelState(db, ChannelSettings.from_settings(settings), app_settings=settings)
    app.state.channels = state
    mount_chat_page(app)
    return state


def channels_of(request: Request) -> ChannelState:
    state: ChannelState = request.app.state.channels
    return state
