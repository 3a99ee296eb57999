"""Telegram's rules, as pure functions: a bot's username, whether a message is addressed to the bot, and the
:class:`~agentfy.runtime.inbound.Inbound` it becomes.

Addressed: every message of a private chat (a DM); in a group or supergroup, under the agent's group policy
``mention`` (the default), a message that mentions the bot (``@bot`` anywhere as a word, or a command
``/cmd@bot``) or replies to one of the bot's messages, and under ``all`` every message.  Whether the DM's sender
may reach the agent is :mod:`agentfy.channels.access`'s decision, made by the webhook.  Everything else — other
group chatter, channel posts, messages without text, messages from bots (two bots must not answer each other
forever, under either group policy), messages without a sender (anonymous admins post as the group) — is
ignored.

Identity (as every channel builds it, through :func:`agentfy.permissions.channels.telegram_context`): in a group
the SCOPE is ``group:telegram:<chatID>`` and the ACTOR the sender's numeric ID; in a DM both are the sender.
The tenant and the agent come from the bot's binding, never from the update.

Mentions of the bot are taken out of the text before it reaches the runtime (:func:`strip_mentions`), so
``@bot /tool read_file path=a.txt`` is the command ``/tool read_file path=a.txt``; a message that is nothing
but the mention is ignored (there is nothing to answer, and the model is not called for it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from agentfy.channels.telegram_updates import TelegramMessage, TelegramUpdate
from agentfy.identity import AgentKey
from agentfy.permissions.channels import telegram_context
from agentfy.runtime.inbound import Inbound
from agentfy.store.inputs import check_text
from agentfy.store.repos.channel_access import GroupPolicy
from agentfy.store.repos.channels import ChannelBinding

CHANNEL: Final = "telegram"
#: A bot's username: 5-32 characters of letters, digits and underscores, starting with a letter, ending in
#: "bot" (Telegram's rule for bots; any case).
BOT_USERNAME: Final = re.compile(r"[A-Za-z][A-Za-z0-9_]{1,28}[Bb][Oo][Tt]")
GROUP_TYPES: Final = frozenset({"group", "supergroup"})
#: Telegram's limit on one message's text: a longer reply is sent in several messages.
MESSAGE_MAX_CHARS: Final = 4096


def parse_bot_username(value: str) -> tuple[str, str]:
    """``(address, name)`` of a bot's ``@username`` (the ``@`` optional): the lower-case address that keys the
    binding (Telegram usernames are case-insensitive, so ``@SupportBot`` and ``@supportbot`` are one bot) and
    the name as written.  ``ValueError`` naming the value otherwise."""
    name = value[1:] if value.startswith("@") else value
    if not BOT_USERNAME.fullmatch(name):
        raise ValueError(f"{value!r} is not a Telegram bot username: 5-32 letters, digits or underscores, "
                         "starting with a letter and ending in 'bot'")
    return name.lower(), name


def _mention(address: str) -> re.Pattern[str]:
    """``@bot`` as a word (group 0), or the ``@bot`` of a command ``/cmd@bot`` at a word's start (group 1 is
    the command), with the spaces after it."""
    name = re.escape(address)
    return re.compile(rf"(?<![A-Za-z0-9_@/])(/[A-Za-z0-9_]+)@{name}(?![A-Za-z0-9_])"
                      rf"|(?<![A-Za-z0-9_@])@{name}(?![A-Za-z0-9_])[ \t]*", re.IGNORECASE)


def _mentions(text: str, address: str) -> bool:
    name = re.escape(address)
    return re.search(rf"(?<![A-Za-z0-9_@])@{name}(?![A-Za-z0-9_])|^/[A-Za-z0-9_]+@{name}(?![A-Za-z0-9_])", text,
                     re.IGNORECASE) is not None


def strip_mentions(text: str, address: str) -> str:
    """``text`` without its mentions of the bot ``address``: ``@bot`` (and the spaces after it) is removed,
    ``/cmd@bot`` becomes ``/cmd``, and the result is trimmed.  Repeated until none is left (removing one can
    join its neighbours into another: ``@bot@bot``).  A text that mentions the bot nowhere is returned as is."""
    pattern = _mention(address)
    stripped = text
    while True:
        after = pattern.sub(lambda m: m.group(1) or "", stripped)
        if after == stripped:
            break
        stripped = after
    return text if stripped == text else stripped.strip()


def _replies_to_bot(message: TelegramMessage, address: str) -> bool:
    replied = message.reply_to_message
    sender = None if replied is None else replied.sender
    return sender is not None and sender.is_bot and (sender.username or "").lower() == address


@dataclass(frozen=True, slots=True)
class Addressed:
    """A message for the agent: what to hand to the runtime and where the reply goes."""

    inbound: Inbound
    chat_id: int
    message_id: int
    in_group: bool
    sender_id: str = ""  # the sender's numeric user ID, for the agent's DM policy


def addressed(update: TelegramUpdate, binding: ChannelBinding, *,
              group_policy: GroupPolicy = "mention") -> Addressed | str:
    """The message for the binding's agent, or why it is ignored (a short reason, for the response and logs).
    ``group_policy``: the agent's (:mod:`agentfy.store.repos.channel_access`)."""
    message = update.message
    if message is None:
        return "not a new message"
    text = message.text if message.text is not None else message.caption
    if not text:
        return "no text"
    sender = message.sender
    if sender is None:
        return "no sender"
    if sender.is_bot:
        return "sent by a bot"
    chat = message.chat
    in_group = chat.type in GROUP_TYPES
    if not in_group and chat.type != "private":
        return "a channel post"
    if in_group and group_policy == "mention" and not (_mentions(text, binding.address)
                                                       or _replies_to_bot(message, binding.address)):
        return "not addressed to the bot"
    text = strip_mentions(text, binding.address)
    if not text:
        return "only a mention of the bot, no message"
    text = check_text(text, "message.text", max_length=len(text))  # the input policy: no NUL, no lone surrogate
    context = telegram_context(chat.id, sender.id, is_group=in_group, tenant_id=binding.tenant_id,
                               agent_id=binding.agent_id, agent_key=binding.agent_key)
    inbound = Inbound(tenant_id=binding.tenant_id, agent_key=AgentKey(binding.agent_key), context=context,
                      channel=CHANNEL, conversation=f"{CHANNEL}:{chat.id}", text=text,
                      message_id=str(message.message_id))
    return Addressed(inbound, chat.id, message.message_id, in_group, str(sender.id))
