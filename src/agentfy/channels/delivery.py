"""Handing a message to the runtime and its reply back to the platform, after the webhook has answered.

Platforms want a fast answer (Discord within 3 seconds, Telegram redelivers a webhook that hangs), and an
agent's turn can take much longer, so the webhook verifies, parses and accepts, and the turn runs as the
response's background task.  A failure there can no longer change the response: it is logged (never the bot
token, which is part of Telegram's URLs) and the message is dropped, as the platform would drop a reply it
could not deliver.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Final

import httpx

from agentfy.runtime.inbound import Inbound, MessageHandler, Reply

logger: Final = logging.getLogger("agentfy.channels")

Send = Callable[[Reply], Awaitable[None]]


def chunks(text: str, size: int) -> list[str]:
    """``text`` in pieces of at most ``size`` characters (a platform's message limit), never an empty list
    for non-empty text."""
    return [text[start:start + size] for start in range(0, len(text), size)]


async def run_turn(handler: MessageHandler, inbound: Inbound, send: Send) -> None:
    """``handler(inbound)``, then ``send(reply)``; every failure is logged with the tenant's and agent's IDs
    (log fields by ID: a key alone names no agent, and the tenant's slug is not at hand here)."""
    where = {"tenant_id": inbound.tenant_id, "agent_id": inbound.context.agent_id, "channel": inbound.channel,
             "conversation": inbound.conversation}
    try:
        reply = await handler(inbound)
    except Exception:
        logger.exception("channels.handler_failed", extra=where)
        return
    try:
        await send(reply)
    except httpx.HTTPError as error:
        logger.warning("channels.reply_failed", extra={**where, "error_type": type(error).__name__})
    except Exception:
        logger.exception("channels.reply_failed", extra=where)


def check_platform_answer(response: httpx.Response, platform: str, where: Inbound) -> None:
    """Log a platform's refusal (its status and, for Telegram, its description; never the request URL)."""
    if response.is_success:
        return
    try:
        description = str(response.json().get("description") or response.json().get("message") or "")[:200]
    except ValueError:
        description = ""
    logger.warning("channels.platform_refused", extra={
        "platform": platform, "status": response.status_code, "description": description,
        "tenant_id": where.tenant_id, "agent_id": where.context.agent_id, "conversation": where.conversation})
