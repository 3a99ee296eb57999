"""Handing a message to the runtime and its reply back to the platform, after the webhook has answered.

Platforms want a fast answer (Discord within 3 seconds, Telegram redelivers a webhook that hangs), and an
agent's turn can take much longer, so the webhook verifies, parses and accepts, and the turn runs as the
response's background task.  A failure there can no longer change the response, but the person is not left
without an answer: a failed run is logged and the person gets the note of :mod:`agentfy.runtime.failures`
(what failed and what to do) in place of the reply, replacing whatever part of the reply was already shown.
A reply the platform refuses is logged (never the bot token, which is part of Telegram's URLs) and dropped,
as the platform would drop a reply it could not deliver.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

import httpx

from agentfy.runtime.failures import failure_note, failure_reference
from agentfy.runtime.inbound import Inbound, MessageHandler, Reply
from agentfy.runtime.model import TextSink

logger: Final = logging.getLogger("agentfy.channels")

Send = Callable[[Reply], Awaitable[None]]
Fail = Callable[[str], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Surface:
    """Where one turn's answer goes on a platform: ``send`` the reply, or ``fail`` with the failure note (it
    replaces anything shown so far); ``on_text``, when the platform shows progress, gets the reply's pieces
    as the model streams them."""

    send: Send
    fail: Fail
    on_text: TextSink | None = None


def chunks(text: str, size: int) -> list[str]:
    """``text`` in pieces of at most ``size`` characters (a platform's message limit), never an empty list
    for non-empty text."""
    return [text[start:start + size] for start in range(0, len(text), size)]


async def run_turn(handler: MessageHandler, inbound: Inbound, surface: Surface) -> None:
    """``handler(inbound)``, then ``surface.send(reply)``; a failed run is logged and answered with
    ``surface.fail(note)``.  Every failure is logged with the tenant's and agent's IDs (log fields by ID: a
    key alone names no agent, and the tenant's slug is not at hand here); an unexpected one with the
    reference its note gives the person."""
    where = {"tenant_id": inbound.tenant_id, "agent_id": inbound.context.agent_id, "channel": inbound.channel,
             "conversation": inbound.conversation}
    try:
        reply = await handler(inbound, on_text=surface.on_text)
    except Exception as error:
        reference = failure_reference()
        logger.exception("channels.handler_failed", extra={**where, "reference": reference})
        await _deliver(surface.fail(failure_note(error, agent=inbound.agent_key, reference=reference)), where)
        return
    await _deliver(surface.send(reply), where)


async def _deliver(sending: Awaitable[None], where: dict[str, str | None]) -> None:
    try:
        await sending
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
