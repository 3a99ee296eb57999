"""Calling Discord's REST API at the configured base URL (``AGENTFY_DISCORD_API_BASE``): the reply replaces the
deferred response (``PATCH /webhooks/{application}/{token}/messages/@original``), longer replies continue
as follow-ups (``POST /webhooks/{application}/{token}``), and no reply removes it.  The interaction's own
token authorises these calls (valid 15 minutes), so the bot token is not needed to answer."""

from __future__ import annotations

import httpx

from agentfy.channels.delivery import check_platform_answer, chunks
from agentfy.channels.discord import MESSAGE_MAX_CHARS, Addressed


async def send_reply(client: httpx.AsyncClient, api_base: str, to: Addressed, text: str | None) -> None:
    webhook = f"{api_base}/webhooks/{to.application_id}/{to.token}"
    if not text:
        check_platform_answer(await client.delete(f"{webhook}/messages/@original"), "discord", to.inbound)
        return
    first, *rest = chunks(text, MESSAGE_MAX_CHARS)
    check_platform_answer(await client.patch(f"{webhook}/messages/@original", json={"content": first}), "discord",
                          to.inbound)
    for piece in rest:
        check_platform_answer(await client.post(webhook, json={"content": piece}), "discord", to.inbound)
