"""A Telegram reply that grows as the model streams it: the first piece is sent with ``sendMessage``, later
pieces edit that message (``editMessageText``), and the end edits it to the whole reply — or to the failure
note when the run fails, so nothing half-written stays.

Why throttled, and per chat: Telegram allows about one message a second in a chat (fewer in a group) and an
edit counts as one, whichever reply it belongs to.  So every message and edit a reply makes goes through the
chat's :class:`ChatThrottle` (per bot and chat ID, shared by every reply streaming into that chat at once):
at most one per ``telegram.edit_interval_seconds`` in the chat.  A streamed piece that is not due stays in the
buffer for the next edit; the end (the whole reply, its further messages, or the failure note) waits its
turn, since it must be shown.  The throttle lives in this process: two gateway processes answering in one
chat each keep their own pace (a larger interval leaves room for them).  While streaming only the first
message is edited (at most Telegram's 4096 characters of it); the final text is split over as many messages
as it needs (:func:`agentfy.channels.delivery.chunks`), the first being the edited one.  The clock and the
sleep are given (``time.monotonic`` and ``asyncio.sleep`` in the gateway), so tests control time without
sleeping.
"""

from __future__ import annotations

import asyncio
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
Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]
#: A chat as the throttle knows it: the bot's address and the chat's ID.
ChatKey = tuple[str, int]
#: Chats remembered before the ones whose last message is older than the interval are forgotten.
CHATS_KEPT: Final = 1024


class ChatThrottle:
    """At most one message or edit per ``interval`` seconds in each chat, for every reply of this process.

    Each chat keeps the time its next message may go (a reservation): :meth:`take_if_due` takes it only when
    it has come (a streamed piece, which may be skipped), :meth:`wait_turn` takes the next free one and
    sleeps until then (a reply's end, which may not), so concurrent replies in one chat queue up instead of
    sending together.  In-process and per event loop's use only (no lock: the loop runs one task at a time)."""

    def __init__(self, interval: float, *, clock: Clock, sleep: Sleep = asyncio.sleep) -> None:
        self.interval, self._clock, self._sleep = interval, clock, sleep
        self._next_at: dict[ChatKey, float] = {}

    def __len__(self) -> int:
        """Chats remembered (at most about :data:`CHATS_KEPT`)."""
        return len(self._next_at)

    def take_if_due(self, chat: ChatKey) -> bool:
        """Take the chat's turn if it has come (then the caller sends at once); else ``False``."""
        now = self._clock()
        if self._next_at.get(chat, now) > now:
            return False
        self._reserve(chat, now)
        return True

    async def wait_turn(self, chat: ChatKey) -> None:
        """Take the chat's next turn and sleep until it comes."""
        now = self._clock()
        at = max(now, self._next_at.get(chat, now))
        self._reserve(chat, at)
        if at > now:
            await self._sleep(at - now)

    def _reserve(self, chat: ChatKey, at: float) -> None:
        if len(self._next_at) >= CHATS_KEPT:  # forget the chats that are quiet: their turn has long come
            now = self._clock()
            self._next_at = {key: due for key, due in self._next_at.items() if due > now}
        self._next_at[chat] = at + self.interval


class TelegramReply:
    """One turn's reply in one chat (see the module docstring): ``piece``, then ``send`` or ``fail``.
    ``bot`` is the bot's address: with the chat's ID, the key of the chat in ``throttle``."""

    def __init__(self, client: httpx.AsyncClient, api_base: str, token: Token, to: Addressed, *,
                 bot: str, throttle: ChatThrottle) -> None:
        self._client, self._api_base, self._token, self._to = client, api_base, token, to
        self._chat: ChatKey = (bot, to.chat_id)
        self._throttle = throttle
        self._bot_token: str | None = None
        self._text = ""  # every piece so far
        self._shown = ""  # what the first message says now
        self._message_id: int | None = None
        self._streaming = True  # until showing a piece fails: the run goes on, the end is sent whole

    async def _bot(self) -> str:
        if self._bot_token is None:
            self._bot_token = await self._token()
        return self._bot_token

    async def _show(self, text: str, *, wait: bool = True) -> None:
        """Make the first message say ``text`` (sending it if there is none yet), waiting for the chat's turn
        (``wait=False``: the caller has taken it)."""
        if text == self._shown:
            return
        bot = await self._bot()
        if wait:
            await self._throttle.wait_turn(self._chat)
        if self._message_id is None:
            self._message_id = await send_message(self._client, self._api_base, bot, self._to, text, first=True)
        else:
            await edit_message(self._client, self._api_base, bot, self._to, message_id=self._message_id,
                               text=text)
        self._shown = text

    async def piece(self, text: str) -> None:
        """One streamed piece: shown now if it is the first or the interval has passed, else at the next.
        Never raises into the run: a failure to show progress is logged and the reply is sent at the end."""
        self._text += text
        if not self._streaming or not self._text.strip():
            return  # Telegram refuses a message of white space
        if self._message_id is None and self._shown:
            return  # the first sendMessage was refused: the final reply is sent whole
        if self._text[:MESSAGE_MAX_CHARS] == self._shown or not self._throttle.take_if_due(self._chat):
            return
        try:
            await self._show(self._text[:MESSAGE_MAX_CHARS], wait=False)
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
            await self._send(first, first=True)
        for part in rest:
            await self._send(part, first=False)

    async def fail(self, note: str) -> None:
        """The failure note in place of whatever was shown."""
        if self._message_id is not None:
            await self._show(note)
        else:
            await self._send(note, first=True)

    async def _send(self, text: str, *, first: bool) -> None:
        """A new message, in the chat's turn."""
        bot = await self._bot()
        await self._throttle.wait_turn(self._chat)
        await send_message(self._client, self._api_base, bot, self._to, text, first=first)
