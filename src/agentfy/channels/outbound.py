"""Replies that come after the turn — a subagent's or a teammate's announced result — sent to the chat the
conversation lives in.

Why a separate path: the webhook's own reply goes back to the message that started the turn; an
announcement arrives later, when that request is long answered, so it is sent to the conversation's chat
through the agent's binding on that platform.  Telegram only: a Discord interaction's token (the only way to
answer it) expires after 15 minutes and belongs to one interaction, so a late Discord announcement stays in
the session (visible to the next turn) and is logged as not delivered.  A failure is logged, never raised
into the runtime.
"""

from __future__ import annotations

import logging
from typing import Final

from fastapi.concurrency import run_in_threadpool

from agentfy.channels import telegram
from agentfy.channels.state import ChannelState
from agentfy.channels.telegram_api import send_reply
from agentfy.identity import Scope
from agentfy.runtime.inbound import Inbound, Reply
from agentfy.store.repos import channels as bindings

logger: Final = logging.getLogger("agentfy.channels")


def _telegram_token(state: ChannelState, inbound: Inbound) -> str | None:
    agent_id = inbound.context.agent_id
    if agent_id is None:
        return None
    with state.db.transaction(write=False) as tx:
        found = [b for b in bindings.bindings_of_agent(tx, Scope(inbound.tenant_id), agent_id)
                 if b.platform == "telegram"]
        return bindings.bot_token(tx, state.cipher(), found[0]) if found else None


async def deliver_announcement(state: ChannelState, inbound: Inbound, reply: Reply) -> None:
    """Send ``reply`` to the chat of ``inbound``'s conversation (see the module docstring)."""
    if not reply.text:
        return
    where = {"tenant_id": inbound.tenant_id, "agent_id": inbound.context.agent_id, "channel": inbound.channel,
             "conversation": inbound.conversation}
    platform, _, chat = inbound.conversation.partition(":")
    if inbound.channel != telegram.CHANNEL or platform != telegram.CHANNEL:
        logger.info("channels.announcement_not_delivered", extra=where)
        return
    try:
        token = await run_in_threadpool(_telegram_token, state, inbound)
        if token is None:
            logger.warning("channels.announcement_not_delivered", extra={**where, "reason": "no telegram binding"})
            return
        to = telegram.Addressed(inbound, int(chat), 0, in_group=False)  # a new message, not a reply
        await send_reply(state.client(), state.settings.telegram.api_base, token, to, reply.text)
    except Exception:
        logger.exception("channels.announcement_failed", extra=where)
