"""What the channel webhooks share on a gateway: the database, the settings, the credentials cipher, the
runtime's message handler, and how to reach the platforms' APIs.

One object on ``app.state.channels`` (:func:`install`, called by :func:`agentfy.gateway.app.create_app`), so
the channels add nothing to the gateway's own state.  The runtime is attached by setting
``app.state.channels.handler`` (a :class:`agentfy.runtime.inbound.MessageHandler`); until it is, a webhook
that would call it answers 503 and calls nothing, so the platform retries later instead of losing the message.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import httpx
from fastapi import FastAPI, Request

from agentfy.channels.settings import ChannelSettings
from agentfy.channels.telegram_stream import ChatThrottle
from agentfy.channels.web import mount_chat_page
from agentfy.errors import ApiError
from agentfy.runtime.inbound import MessageHandler
from agentfy.store.db import Database
from agentfy.store.repos.credentials import CredentialCipher, CredentialKeyError

#: Makes the credentials cipher (the gateway's, from its settings), raising :class:`CredentialKeyError` when no
#: key is configured.  Called once, on the first bot token to encrypt or decrypt.
CipherFactory = Callable[[], CredentialCipher]


def _no_key() -> CredentialCipher:
    raise CredentialKeyError("no credentials key is configured")


@dataclass
class ChannelState:
    """See the module docstring.  ``transport`` replaces the network for the platforms' APIs (tests)."""

    db: Database
    settings: ChannelSettings = field(default_factory=ChannelSettings)
    make_cipher: CipherFactory = _no_key
    handler: MessageHandler | None = None
    transport: httpx.AsyncBaseTransport | None = None
    cipher_override: CredentialCipher | None = None
    #: The clock and the sleep Telegram replies are paced by (tests give their own, so nothing sleeps).
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    _telegram_throttle: ChatThrottle | None = field(default=None, init=False, repr=False)
    _cipher: CredentialCipher | None = field(default=None, init=False, repr=False)
    _client: httpx.AsyncClient | None = field(default=None, init=False, repr=False)
    _client_loop: asyncio.AbstractEventLoop | None = field(default=None, init=False, repr=False)

    def cipher(self) -> CredentialCipher:
        if self.cipher_override is not None:
            return self.cipher_override
        if self._cipher is None:
            try:  # bot tokens are never stored unencrypted: no key, no token (503 naming what is missing)
                self._cipher = self.make_cipher()
            except CredentialKeyError as error:
                raise ApiError(503, "unavailable", f"bot tokens cannot be encrypted: {error}") from None
        return self._cipher

    def require_handler(self) -> MessageHandler:
        """The runtime's handler, or 503 (nothing is accepted that could not be handed on)."""
        if self.handler is None:
            raise ApiError(503, "unavailable", "no agent runtime is attached to this gateway; retry later")
        return self.handler

    def telegram_throttle(self) -> ChatThrottle:
        """The pace of every Telegram chat this process replies in (one per process, shared by all replies),
        made on first use with the settings' ``telegram.edit_interval_seconds``, :attr:`clock` and
        :attr:`sleep`."""
        if self._telegram_throttle is None:
            self._telegram_throttle = ChatThrottle(self.settings.telegram.edit_interval_seconds, clock=self.clock,
                                                   sleep=self.sleep)
        return self._telegram_throttle

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


def install(app: FastAPI, db: Database, settings: ChannelSettings, make_cipher: CipherFactory) -> ChannelState:
    """Put the channels' state on ``app`` and serve the web chat page: the channels get their own section of the
    settings and a way to make the cipher, never the whole settings object (they sit below it)."""
    state = ChannelState(db, settings, make_cipher=make_cipher)
    app.state.channels = state
    mount_chat_page(app)
    return state


def channels_of(request: Request) -> ChannelState:
    state: ChannelState = request.app.state.channels
    return state
