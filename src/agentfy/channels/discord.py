"""Discord's rules, as pure functions: the signature, an application's identity, and the
:class:`~agentfy.runtime.inbound.Inbound` a slash command becomes.

Discord sends an application's interactions (slash commands) to its interactions endpoint, signed with the
application's Ed25519 key: ``X-Signature-Ed25519`` is the signature of ``X-Signature-Timestamp`` followed by
the raw body.  It is verified with ``cryptography`` (already the platform's cryptography library; PyNaCl
would add a second binding of the same primitive).  A timestamp more than :data:`REPLAY_WINDOW_SECONDS` away
from now is refused too, so a captured request cannot be replayed later.

Identity (as every channel builds it, through :func:`agentfy.permissions.channels.discord_context`): in a guild
the SCOPE is ``guild:<guildID>:user:<senderID>`` and the ACTOR the sender's snowflake; in a DM both are the
sender.  The message is the command's ``message`` option (or its first string option), without mentions of
the bot (``<@id>``, ``<@!id>``: a command is addressed to the bot already), so ``/ask message:<@bot> /tool …``
reaches the runtime as ``/tool …``; a message that is only the mention is "no message".  Slash commands are
always addressed to the bot, so the agent's group policy has nothing to decide here; its DM policy applies to
commands run in a DM (:mod:`agentfy.channels.access`, applied by the webhook).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Final

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from agentfy.channels.discord_interactions import APPLICATION_COMMAND, Interaction
from agentfy.errors import ApiError
from agentfy.identity import AgentKey
from agentfy.permissions.channels import discord_context
from agentfy.runtime.inbound import Inbound
from agentfy.store.inputs import check_text
from agentfy.store.repos.channels import ChannelBinding

CHANNEL: Final = "discord"
APPLICATION_ID: Final = re.compile(r"[0-9]{17,20}")
PUBLIC_KEY: Final = re.compile(r"[0-9a-fA-F]{64}")
SIGNATURE: Final = re.compile(r"[0-9a-fA-F]{128}")
REPLAY_WINDOW_SECONDS: Final = 300
#: Discord's limit on one message's content: a longer reply is sent as follow-up messages.
MESSAGE_MAX_CHARS: Final = 2000
#: The option that carries the message (``/ask message:<text>``); else the first string option.
MESSAGE_OPTION: Final = "message"


def parse_application_id(value: str) -> str:
    if not APPLICATION_ID.fullmatch(value):
        raise ValueError(f"{value!r} is not a Discord application ID (a snowflake: 17-20 digits)")
    return value


def parse_public_key(value: str) -> str:
    """The application's public key as lower-case hex; ``ValueError`` unless it is an Ed25519 key."""
    if not PUBLIC_KEY.fullmatch(value):
        raise ValueError(f"{value!r} is not a Discord public key (64 hexadecimal characters)")
    Ed25519PublicKey.from_public_bytes(bytes.fromhex(value))
    return value.lower()


def signature_holds(public_key: str, signature: str, timestamp: str, body: bytes, *, now: float | None = None) -> bool:
    """Whether ``signature`` signs ``timestamp + body`` with ``public_key``, and the timestamp is recent."""
    if not SIGNATURE.fullmatch(signature) or not timestamp.isdigit() or len(timestamp) > 12:
        return False
    if abs((time.time() if now is None else now) - int(timestamp)) > REPLAY_WINDOW_SECONDS:
        return False
    try:
        Ed25519PublicKey.from_public_bytes(bytes.fromhex(public_key)).verify(
            bytes.fromhex(signature), timestamp.encode("ascii") + body)
    except (InvalidSignature, ValueError):
        return False
    return True


@dataclass(frozen=True, slots=True)
class Addressed:
    """A slash command for the agent: what to hand to the runtime and where the reply goes."""

    inbound: Inbound
    application_id: str
    token: str
    sender_id: str = ""  # the sender's snowflake, for the agent's DM policy
    direct: bool = False  # run in a DM (no guild)


def strip_mentions(text: str, bot_id: str) -> str:
    """``text`` without Discord's mentions of the bot (``<@id>``, ``<@!id>``) and the spaces after them,
    trimmed; a text that mentions the bot nowhere is returned as is."""
    stripped = re.sub(rf"<@!?{re.escape(bot_id)}>[ \t]*", "", text)
    return text if stripped == text else stripped.strip()


def _text(interaction: Interaction) -> str | None:
    options = [] if interaction.data is None else interaction.data.options
    strings = [o for o in options if isinstance(o.value, str)]
    named = [o for o in strings if o.name == MESSAGE_OPTION]
    chosen = named or strings
    return str(chosen[0].value) if chosen else None


def addressed(interaction: Interaction, binding: ChannelBinding) -> Addressed | str:
    """The command for the binding's agent, or why it is not answered (a short reason, shown to the user).
    A payload that cannot be a real command (no sender, another application's) is a 422."""
    if interaction.application_id != binding.address:
        raise ApiError(422, "invalid_input", "the interaction is for another application", field="application_id",
                       value=interaction.application_id, expected=binding.address)
    if interaction.type != APPLICATION_COMMAND:
        raise ApiError(422, "invalid_input", f"interaction type {interaction.type} is not handled", field="type",
                       value=interaction.type, expected="1 (PING) or 2 (APPLICATION_COMMAND)")
    if not interaction.token:
        raise ApiError(422, "invalid_input", "the interaction has no token to answer with", field="token")
    sender = interaction.member.user if interaction.guild_id is not None and interaction.member else interaction.user
    if sender is None:
        raise ApiError(422, "invalid_input", "the interaction names no sender", field="member.user"
                       if interaction.guild_id is not None else "user")
    if sender.bot:
        return "sent by a bot"
    text = _text(interaction)
    text = None if text is None else strip_mentions(text, binding.address)
    if not text:
        return "no message: use the command's message option"
    text = check_text(text, "data.options.value", max_length=len(text))
    context = discord_context(interaction.guild_id, sender.id, tenant_id=binding.tenant_id,
                              agent_id=binding.agent_id, agent_key=binding.agent_key)
    place = interaction.channel_id or sender.id
    conversation = (f"{CHANNEL}:guild:{interaction.guild_id}:channel:{place}" if interaction.guild_id is not None
                    else f"{CHANNEL}:dm:{place}")
    inbound = Inbound(tenant_id=binding.tenant_id, agent_key=AgentKey(binding.agent_key), context=context,
                      channel=CHANNEL, conversation=conversation, text=text, message_id=interaction.id)
    return Addressed(inbound, interaction.application_id, interaction.token, sender.id,
                     direct=interaction.guild_id is None)
