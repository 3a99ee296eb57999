"""Calling the Telegram Bot API: ``sendMessage`` and ``editMessageText`` at the configured base URL
(``AGENTFY_TELEGRAM_API_BASE``)."""

from __future__ import annotations

from typing import Any

import httpx

from agentfy.channels.delivery import check_platform_answer, chunks
from agentfy.channels.telegram import MESSAGE_MAX_CHARS, Addressed


async def send_reply(client: httpx.AsyncClient, api_base: str, bot_token: str, to: Addressed, text: str) -> None:
    """``text`` to the chat the message came from, in as many messages as Telegram's limit needs; in a group
    the first one replies to the message (so the group sees whom the agent answers)."""
    for index, piece in enumerate(chunks(text, MESSAGE_MAX_CHARS)):
        await send_message(client, api_base, bot_token, to, piece, first=index == 0)

async def send_message(client: httpx.AsyncClient, api_base: str, bot_token: str, to: Addressed, text: str, *,
                       first: bool) -> int | None:
    """One message (``text`` within Telegram's limit) to the chat; in a group the ``first`` one replies to the
    message.  Returns the sent message's ID (``None`` when Telegram refused it, which is logged)."""
    body: dict[str, Any] = {"chat_id": to.chat_id, "text": text}
    if to.in_group and first:
        body["reply_parameters"] = {"message_id": to.message_id, "allow_sending_without_reply": True}
    response = await client.post(f"{api_base}/bot{bot_token}/sendMessage", json=body)
    check_platform_answer(response, "telegram", to.inbound)
    if not response.is_success:
        return None
    try:
        message_id = response.json()["result"]["message_id"]
    except (ValueError, KeyError, TypeError):
        return None
    return message_id if isinstance(message_id, int) else None


async def edit_message(client: httpx.AsyncClient, api_base: str, bot_token: str, to: Addressed, *,
                       message_id: int, text: str) -> None:
    """Replace the text of the bot's message ``message_id`` in the chat (``text`` within Telegram's limit)."""
    body = {"chat_id": to.chat_id, "message_id": message_id, "text": text}
    check_platform_answer(await client.post(f"{api_base}/bot{bot_token}/editMessageText", json=body), "telegram",
                          to.inbound)
