"""A Telegram reply to one message: sent whole when it is ready quickly, streamed when it is not.

What the person sees: a reply the run completes within ``telegram.first_piece_delay_ms`` (75 ms by default)
of its first piece arrives as one message (``sendMessage``; several only when it is longer than Telegram's
4096 characters), never edited.  A reply still running then streams: the text so far is sent (the first
message) and edited (``editMessageText``) as it grows, and the end edits it to the whole reply — or to the
failure note when the run fails, so nothing half-written stays.  The hold costs a quick reply nothing: the
reply is sent the moment it is done, not when the hold ends (the hold's timer is cancelled); and it spares
every quick reply the edits Telegram counts against the chat.

Pacing, per chat (:class:`ChatThrottle`, per bot and chat ID, shared by every reply of this process in the
chat), after Telegram's limits: about one message a second in a chat, about 20 a minute in a group, and a
``429 Too Many Requests`` with ``retry_after`` for whatever goes beyond.

* Progress (the streamed first message and its edits) is optional: at most one per
  ``telegram.edit_interval_seconds`` in the chat, whatever the chat type; a piece that is not due stays in the
  buffer for the next edit, and a 429 on progress is not retried (the chat's pace is held back instead).
* A reply's required messages (its whole text, its further parts, the failure note) are not pre-paced in a
  private chat — a person's replies follow the person's own pace, and the person cannot outpace one message
  a second for long — but they do push the chat's next progress edit back by the interval.  In a group or
  supergroup they keep the chat's turn, one per interval, shared with the progress of every reply in it: two
  people asking the bot at once do not double the group's rate (Telegram's 20 a minute are a budget over the
  minute; a group that bursts past it is answered by the 429 handling below, which nothing is lost to).
* In every chat a 429 holds the chat's every message back for its ``retry_after``; a required message waits
  that long and is sent again (:mod:`agentfy.channels.telegram_api`, which decides how often), and one still
  refused at the end is logged as a refused reply, never raised into the run.

The throttle lives in this process: two gateway processes answering in one chat each keep their own pace
(the 429 handling covers what they add up to).  While streaming only the first message is edited (at most
Telegram's 4096 characters of it); the final text is split over as many messages as it needs
(:func:`agentfy.channels.delivery.chunks`), the first being the edited one.  The clock and the sleep are given
(``time.monotonic`` and ``asyncio.sleep`` in the gateway; the hold's timer sleeps with the same), so tests
control time without sleeping.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Final, Literal

import httpx

from agentfy.channels.delivery import chunks
from agentfy.channels.settings import FIRST_PIECE_DELAY_MS
from agentfy.channels.telegram import MESSAGE_MAX_CHARS, Addressed
from agentfy.channels.telegram_api import Retry, edit_message, send_message
from agentfy.runtime.inbound import Reply

logger: Final = logging.getLogger("agentfy.channels")

Token = Callable[[], Awaitable[str]]
Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]
#: A chat as the throttle knows it: the bot's address and the chat's ID.
ChatKey = tuple[str, int]
#: Chats remembered before the ones whose turn has come are forgotten.
CHATS_KEPT: Final = 1024


class ChatThrottle:
    """The pace of every chat this process replies in (see the module docstring).

    Each chat keeps the time its next paced message may go (a reservation) and, after a 429, the time before
    which nothing may go.  :meth:`take_if_due` takes the chat's turn only when it has come (progress, which may
    be skipped); :meth:`wait_turn` is a required message's: in a group it takes the next free turn and sleeps
    until then, so concurrent replies in one chat queue up instead of sending together; in a private chat it
    waits only for a 429's ``retry_after``.  In-process and per event loop's use only (no lock: the loop runs
    one task at a time)."""

    def __init__(self, interval: float, *, clock: Clock, sleep: Sleep = asyncio.sleep) -> None:
        self.interval, self.clock, self.sleep = interval, clock, sleep
        self._next_at: dict[ChatKey, float] = {}
        self._limited_until: dict[ChatKey, float] = {}

    def __len__(self) -> int:
        """Chats remembered (at most about :data:`CHATS_KEPT`)."""
        return len(self._next_at.keys() | self._limited_until.keys())

    def take_if_due(self, chat: ChatKey) -> bool:
        """Take the chat's turn for a progress message if it has come (then the caller sends at once); else
        ``False``."""
        now = self.clock()
        if max(self._next_at.get(chat, now), self._limited_until.get(chat, now)) > now:
            return False
        self._reserve(chat, now + self.interval)
        return True

    async def wait_turn(self, chat: ChatKey, *, group: bool) -> None:
        """A required message's turn: in a ``group`` the chat's next paced turn, in a private chat now; in
        either after any 429's ``retry_after``.  Sleeps until it comes."""
        now = self.clock()
        at = max(now, self._limited_until.get(chat, now))
        if group:
            at = max(at, self._next_at.get(chat, now))
            self._reserve(chat, at + self.interval)
        else:
            self._reserve(chat, max(at + self.interval, self._next_at.get(chat, now)))
        if at > now:
            await self.sleep(at - now)

    def limited(self, chat: ChatKey, seconds: float) -> None:
        """Telegram answered 429 asking to wait ``seconds``: nothing more goes to the chat before then."""
        until = self.clock() + seconds
        if until > self._limited_until.get(chat, until - 1):
            if len(self._limited_until) >= CHATS_KEPT:
                self._limited_until = self._still_due(self._limited_until)
            self._limited_until[chat] = until

    def _reserve(self, chat: ChatKey, next_at: float) -> None:
        if len(self._next_at) >= CHATS_KEPT:  # forget the chats that are quiet: their turn has long come
            self._next_at = self._still_due(self._next_at)
        self._next_at[chat] = next_at

    def _still_due(self, times: dict[ChatKey, float]) -> dict[ChatKey, float]:
        now = self.clock()
        return {key: due for key, due in times.items() if due > now}


Phase = Literal["quiet", "holding", "streaming", "ended"]


class TelegramReply:
    """One turn's reply in one chat (see the module docstring): ``piece``, then ``send`` or ``fail``.
    ``bot`` is the bot's address: with the chat's ID, the key of the chat in ``throttle``.  ``hold``: seconds
    a reply's first piece is held back (0: stream from the first piece).

    Phases: ``quiet`` until a piece that is not white space, ``holding`` while the hold lasts (a timer task
    sleeping with the throttle's sleep; the injected clock passing the hold's end counts as its end too),
    ``streaming`` after it, ``ended`` once ``send`` or ``fail`` was called.  One call to the Bot API at a time
    per reply (a lock): a piece that finds one under way stays in the buffer, the end waits for it."""

    def __init__(self, client: httpx.AsyncClient, api_base: str, token: Token, to: Addressed, *,
                 bot: str, throttle: ChatThrottle, hold: float = FIRST_PIECE_DELAY_MS / 1000) -> None:
        self._client, self._api_base, self._token, self._to = client, api_base, token, to
        self._chat: ChatKey = (bot, to.chat_id)
        self._throttle, self._hold = throttle, hold
        self._bot_token: str | None = None
        self._text = ""  # every piece so far
        self._shown = ""  # what the first message says now
        self._message_id: int | None = None
        self._streaming = True  # until showing a piece fails: the run goes on, the end is sent whole
        self._phase: Phase = "quiet"
        self._held_until = 0.0
        self._timer: asyncio.Task[None] | None = None
        self._calling = asyncio.Lock()
        chat = self._chat
        self._required = Retry(sleep=throttle.sleep, on_limited=lambda seconds: throttle.limited(chat, seconds))
        self._optional = Retry(tries=1, on_limited=self._required.on_limited)

    async def _bot(self) -> str:
        if self._bot_token is None:
            self._bot_token = await self._token()
        return self._bot_token

    async def piece(self, text: str) -> None:
        """One streamed piece: held while the hold lasts, then shown if the chat's progress turn has come,
        else at the next.  Never raises into the run: a failure to show progress is logged and the reply is
        sent at the end."""
        self._text += text
        if self._phase == "ended" or not self._streaming or not self._text.strip():
            return  # Telegram refuses a message of white space
        if self._phase == "quiet":
            if self._hold > 0:
                self._phase, self._held_until = "holding", self._throttle.clock() + self._hold
                self._timer = asyncio.get_running_loop().create_task(self._after_hold())
                return
            self._phase = "streaming"
        elif self._phase == "holding":
            if self._throttle.clock() < self._held_until:
                return
            self._stop_hold()  # the clock passed the hold's end before its timer woke
            self._phase = "streaming"
        await self._progress()

    async def _after_hold(self) -> None:
        """The hold's timer: when it ends with the run still going, the reply starts streaming."""
        wait = self._held_until - self._throttle.clock()
        if wait > 0:
            await self._throttle.sleep(wait)
        if self._phase != "holding":
            return
        self._phase = "streaming"
        await self._progress()

    def _stop_hold(self) -> None:
        """Cancel the hold's timer (only ever while it has not passed its sleep: the phase is ``holding``)."""
        if self._phase == "holding" and self._timer is not None:
            self._timer.cancel()
        self._timer = None

    async def _progress(self) -> None:
        """Show the text so far if the chat's progress turn has come and no call of this reply is under way."""
        if self._calling.locked() or not self._streaming:
            return
        if self._message_id is None and self._shown:
            return  # the first sendMessage was refused: the final reply is sent whole
        text = self._text[:MESSAGE_MAX_CHARS]
        if text == self._shown or not self._throttle.take_if_due(self._chat):
            return
        async with self._calling:
            try:
                await self._show(text, self._optional)
            except Exception as error:  # the platform's API, or the bot token: the turn itself is not at fault
                self._streaming = False
                logger.warning("channels.progress_failed", extra={
                    "tenant_id": self._to.inbound.tenant_id, "agent_id": self._to.inbound.context.agent_id,
                    "conversation": self._to.inbound.conversation, "error_type": type(error).__name__})

    async def _show(self, text: str, retry: Retry) -> None:
        """Make the first message say ``text``, sending it if there is none yet (the caller took the turn)."""
        if text == self._shown:
            return
        bot = await self._bot()
        if self._message_id is None:
            self._message_id = await send_message(self._client, self._api_base, bot, self._to, text, first=True,
                                                  retry=retry)
            self._shown = text  # refused (no ID): the marker that the end is sent as new messages
        elif await edit_message(self._client, self._api_base, bot, self._to, message_id=self._message_id,
                                text=text, retry=retry):
            self._shown = text  # a refused edit is not shown: the end edits again

    def _end(self) -> None:
        """No more progress: a held reply's timer is cancelled (the end is sent now, not when the hold ends)."""
        self._stop_hold()
        self._phase = "ended"

    async def send(self, reply: Reply) -> None:
        """The whole reply: the first message edited to its first part if one was streamed, else sent new; the
        rest sent after it."""
        self._end()
        async with self._calling:  # after a progress call under way
            if not reply.text:
                if self._message_id is not None:  # pieces were shown but the reply says nothing: do not leave them
                    await self._required_show("(no reply)")
                return
            first, *rest = chunks(reply.text, MESSAGE_MAX_CHARS)
            if self._message_id is not None:
                await self._required_show(first)
            else:
                await self._send(first, first=True)
            for part in rest:
                await self._send(part, first=False)

    async def fail(self, note: str) -> None:
        """The failure note in place of whatever was shown."""
        self._end()
        async with self._calling:
            if self._message_id is not None:
                await self._required_show(note)
            else:
                await self._send(note, first=True)

    async def _required_show(self, text: str) -> None:
        """The first message edited to ``text``, in the chat's turn for a required message."""
        if text != self._shown:
            await self._throttle.wait_turn(self._chat, group=self._to.in_group)
            await self._show(text, self._required)

    async def _send(self, text: str, *, first: bool) -> None:
        """A new message, in the chat's turn for a required message."""
        bot = await self._bot()
        await self._throttle.wait_turn(self._chat, group=self._to.in_group)
        await send_message(self._client, self._api_base, bot, self._to, text, first=first, retry=self._required)
