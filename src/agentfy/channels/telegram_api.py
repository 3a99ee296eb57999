"""Calling the Telegram Bot API: ``sendMessage`` at the configured base URL (``AGENTFY_TELEGRAM_API_BASE``)."""

from __future__ import annotations

from typing import Any

import httpx

from agentfy.channels.delivery import check_platform_answer, chunks
from agentfy.channels.telegram import MESSAGE_MAX_CHARS, Addressed


async def send_reply(client: httpx.AsyncClient, api_base: str, bot_token: str, to: Addressed, text: str) -> None:
    """``text`` to the chat the message came from, in as many messages as Telegram's limit needs; in a group
    the first one replies to the message (so the group sees whom the agent answers)."""
    url = f"{api_base}/bot{bot_token}/sendMessage"
    for index, piece in enumerate(chunks(text, MESSAGE_MAX_CHARS)):
        body: dict[str, Any] = {"chat_id": to.chat_id, "text": piece}
        if to.in_group and index == 0:
            body["reply_parameters"] = {"message_id": to.message_id, "allow_sending_without_reply": True}
        check_platform_answer(await client.post(url, json=body), "telegram", to.inbound)
