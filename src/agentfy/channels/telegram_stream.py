"""A Telegram reply that grows as the model streams it: the first piece is sent with ``sendMessage``, later
pieces edit that message (``editMessageText``) at most once per ``telegram.edit_interval_seconds``, and the
end edits it to the whole reply — or to the failure note when the run fails, so nothing half-written stays.

Why throttled: Telegram allows about one message a second in a chat and an edit counts as one; a piece that
arrives sooner waits in the buffer for the next edit (or the final one).  While streaming only the first
message is edited (at most Telegram's 4096 characters of it); the final text is split over as many messages
as it needs (:func:`agentfy.channels.delivery.chunks`), the first being the edited one.  The clock is given
(``time.monotonic`` in the gateway), so tests control time without sleeping.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Final

import httpx

from agentfy.channels.delivery import chunks
from agentfy.channels.telegram import MESSAGE_MAX_CHARS, Addressed
from agentfy.channels.telegram_api import edit_message, send_message
from agentfy.runtime.inbound import Reply

logger: Final = logging.getLogger("agentfy.channels")

Token = Callable[[], Awaitable[str]]


class TelegramReply:
    """One turn's reply in one chat (see the module docstring): ``piece``, then ``send`` or ``fail``."""

    def __init__(self, client: httpx.AsyncClient, api_base: str, token: Token, to: Addressed, *,
                 interval: float, clock: Callable[[], float]) -> None:
        self._client, self._api_base, self._token, self._to = client, api_base, token, to
        self._interval, self._clock = interval, clock
        self._bot_token: str | None = None
        self._text = ""  # every piece so far
        self._shown = ""  # what the first message says now
        self._message_id: int | None = None
        self._edited_at = 0.0
        self._streaming = True  # until showing a piece fails: the run goes on, the end is sent whole

    async def _bot(self) -> str:
        if self._bot_token is None:
            self._bot_token = await self._token()
        return self._bot_token

    async def _show(self, text: str) -> None:
        """Make the first message say ``text`` (sending it if there is none yet)."""
        if text == self._shown:
            return
        bot = await self._bot()
        if self._message_id is None:
            self._message_id = await send_message(self._client, self._api_base, bot, self._to, text, first=True)
        else:
            await edit_message(self._client, self._api_base, bot, self._to, message_id=self._message_id,
                               text=text)
        self._shown = text
        self._edited_at = self._clock()

    async def piece(self, text: str) -> None:
        """One streamed piece: shown now if it is the first or the interval has passed, else at the next.
        Never raises into the run: a failure to show progress is logged and the reply is sent at the end."""
        self._text += text
        if not self._streaming or not self._text.strip():
            return  # Telegram refuses a message of white space
        if self._message_id is None and self._shown:
            return  # the first sendMessage was refused: the final reply is sent whole
        if self._shown and self._clock() - self._edited_at < self._interval:
            return
        try:
            await self._show(self._text[:MESSAGE_MAX_CHARS])
        except Exception as error:  # the platform's API, or the bot token: the turn itself is not at fault
            self._streaming = False
            logger.warning("channels.progress_failed", extra={
                "tenant_id": self._to.inbound.tenant_id, "agent_id": self._to.inbound.context.agent_id,
                "conversation": self._to.inbound.conversation, "error_type": type(error).__name__})

    async def send(self, reply: Reply) -> None:
        """The whole reply: the first message edited to its first part, the rest sent after it."""
        if not reply.text:
            if self._message_id is not None:  # pieces were shown but the reply says nothing: do not leave them
                await self._show("(no reply)")
            return
        first, *rest = chunks(reply.text, MESSAGE_MAX_CHARS)
        if self._message_id is not None:
            await self._show(first)
        else:
            await send_message(self._client, self._api_base, await self._bot(), self._to, first, first=True)
        for part in rest:
            await send_message(self._client, self._api_base, await self._bot(), self._to, part, first=False)

    async def fail(self, note: str) -> None:
        """The failure note in place of whatever was shown."""
        if self._message_id is not None:
            await self._show(note)
        else:
            await send_message(self._client, self._api_base, await self._bot(), self._to, note, first=True)
