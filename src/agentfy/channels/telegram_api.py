"""Calling the Telegram Bot API: ``sendMessage`` and ``editMessageText`` at the configured base URL
(``AGENTFY_TELEGRAM_API_BASE``), and what a call does when Telegram says it is sent too fast.

A 429 (Too Many Requests) answer carries ``parameters.retry_after``, the seconds the chat (or the bot) must
wait.  This module is the one place that decides what happens then (:class:`Retry`): a call that must arrive
(a reply's text, its further parts, the failure note, an announcement) waits that long with the given sleep
and is sent again, up to :attr:`Retry.tries` calls in all and never for a wait longer than
:data:`RETRY_AFTER_MAX_SECONDS`; a call that may be skipped (a streamed reply's progress edit,
:data:`NO_RETRY`) is tried once.  Either way the caller's ``on_limited`` hears every ``retry_after``, so the
chat's pace (:class:`agentfy.channels.telegram_stream.ChatThrottle`) holds its later messages back too.  The
last answer, when it is still a refusal (a 429 after the last try included), is logged as every refusal is
(:func:`agentfy.channels.delivery.check_platform_answer`) and nothing is raised: a reply Telegram will not
take is lost as a refused one always was, never an exception into the run.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

import httpx

from agentfy.channels.delivery import check_platform_answer, chunks
from agentfy.channels.telegram import MESSAGE_MAX_CHARS, Addressed

logger: Final = logging.getLogger("agentfy.channels")

Sleep = Callable[[float], Awaitable[None]]
#: Told the seconds of each 429's ``retry_after`` (the chat's pace keeps its other messages back as long).
OnLimited = Callable[[float], None]
#: Calls a message that must arrive makes at most (the first and three more after a 429 each).
RETRY_TRIES: Final = 4
#: A 429 asking for a longer wait than this is not waited for: the message is logged as refused (a background
#: task holding a reply for many minutes would deliver it long after it means anything).
RETRY_AFTER_MAX_SECONDS: Final = 60.0
#: The wait assumed for a 429 without ``parameters.retry_after`` (Telegram always sends it; a proxy may not).
RETRY_AFTER_DEFAULT_SECONDS: Final = 1.0


@dataclass(frozen=True, slots=True)
class Retry:
    """What a call does on a 429: up to ``tries`` calls in all, ``sleep`` for each ``retry_after`` between
    them (the gateway's ``asyncio.sleep``; a test's fake clock), ``on_limited`` told each ``retry_after``."""

    tries: int = RETRY_TRIES
    sleep: Sleep = asyncio.sleep
    on_limited: OnLimited | None = None


#: A message that must arrive: waited for and sent again after a 429.
RETRY: Final = Retry()
#: A message that may be skipped (progress): tried once.
NO_RETRY: Final = Retry(tries=1)


def retry_after(response: httpx.Response) -> float | None:
    """The seconds a 429 answer asks to wait (``parameters.retry_after``), ``None`` for any other answer."""
    if response.status_code != httpx.codes.TOO_MANY_REQUESTS:
        return None
    try:
        seconds = response.json()["parameters"]["retry_after"]
    except (ValueError, KeyError, TypeError):
        return RETRY_AFTER_DEFAULT_SECONDS
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 <= seconds < float("inf"):
        return RETRY_AFTER_DEFAULT_SECONDS
    return float(seconds)


async def _call(client: httpx.AsyncClient, url: str, body: dict[str, Any], to: Addressed,
                retry: Retry) -> httpx.Response:
    """POST ``body`` to ``url``, again after each 429 as ``retry`` allows (see the module docstring); the last
    answer, its refusal logged."""
    for attempt in range(1, max(1, retry.tries) + 1):
        response = await client.post(url, json=body)
        wait = retry_after(response)
        if wait is None:
            break
        if retry.on_limited is not None:
            retry.on_limited(wait)
        if attempt >= retry.tries or wait > RETRY_AFTER_MAX_SECONDS:
            break
        logger.info("channels.telegram.rate_limited", extra={
            "retry_after": wait, "attempt": attempt, "tenant_id": to.inbound.tenant_id,
            "agent_id": to.inbound.context.agent_id, "conversation": to.inbound.conversation})
        await retry.sleep(wait)
    check_platform_answer(response, "telegram", to.inbound)
    return response


async def send_reply(client: httpx.AsyncClient, api_base: str, bot_token: str, to: Addressed, text: str, *,
                     retry: Retry = RETRY) -> None:
    """``text`` to the chat the message came from, in as many messages as Telegram's limit needs; in a group
    the first one replies to the message (so the group sees whom the agent answers)."""
    for index, piece in enumerate(chunks(text, MESSAGE_MAX_CHARS)):
        await send_message(client, api_base, bot_token, to, piece, first=index == 0, retry=retry)


async def send_message(client: httpx.AsyncClient, api_base: str, bot_token: str, to: Addressed, text: str, *,
                       first: bool, retry: Retry = RETRY) -> int | None:
    """One message (``text`` within Telegram's limit) to the chat; in a group the ``first`` one replies to the
    message.  Returns the sent message's ID (``None`` when Telegram refused it, which is logged)."""
    body: dict[str, Any] = {"chat_id": to.chat_id, "text": text}
    if to.in_group and first:
        body["reply_parameters"] = {"message_id": to.message_id, "allow_sending_without_reply": True}
    response = await _call(client, f"{api_base}/bot{bot_token}/sendMessage", body, to, retry)
    if not response.is_success:
        return None
    try:
        message_id = response.json()["result"]["message_id"]
    except (ValueError, KeyError, TypeError):
        return None
    return message_id if isinstance(message_id, int) else None


async def edit_message(client: httpx.AsyncClient, api_base: str, bot_token: str, to: Addressed, *,
                       message_id: int, text: str, retry: Retry = RETRY) -> bool:
    """Replace the text of the bot's message ``message_id`` in the chat (``text`` within Telegram's limit).
    ``True`` when Telegram took the edit (a refusal is logged)."""
    body = {"chat_id": to.chat_id, "message_id": message_id, "text": text}
    response = await _call(client, f"{api_base}/bot{bot_token}/editMessageText", body, to, retry)
    return response.is_success
