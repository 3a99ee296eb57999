"""Whether a platform sender may reach the agent: the agent's DM policy applied to one direct message.

The webhook asks :func:`policy_of` for the binding's agent's policy (the group policy decides, in each
platform's ``addressed``, which group messages are for the bot), and :func:`admit` for each direct message:

* ``open``: everyone reaches the agent.
* ``allowlist``: an allowed sender does; anyone else gets :data:`REFUSAL` and nothing reaches the runtime or
  the model.  A short refusal rather than silence: a bot that never answers looks broken to the person, and
  the refusal costs one platform call, never model credits.
* ``pairing``: an allowed sender reaches the agent; an unknown one is sent a one-time code to give to the
  agent's admin (who approves it: ``POST /v1/agents/{agent}/channel-access/pairings/approve`` or
  ``agentfy channels pairing approve``), and the message is dropped.  A sender whose code is still valid is
  reminded, not given another (codes cannot be farmed).

Group chats are governed by the group policy alone (a group is not a sender to allow).  The message of a
refused sender is never stored nor handed on; only its sender ID is kept, for a pairing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from agentfy.store.db import Database
from agentfy.store.errors import UniqueViolation
from agentfy.store.repos import channel_access
from agentfy.store.repos.channel_access import ChannelPolicy
from agentfy.store.repos.channels import ChannelBinding

REFUSAL: Final = "Sorry, this bot only talks to people its owner has allowed."
PAIRING_REPLY: Final = ("This bot needs its owner's approval before it talks to you. Your pairing code is {code} "
                        "(valid for one hour): send it to the bot's owner.")
PAIRING_PENDING: Final = "Your pairing code is waiting for the bot owner's approval."


@dataclass(frozen=True, slots=True)
class Verdict:
    """``admitted``: hand the message to the runtime.  Otherwise ``reply`` (if any) is what the sender is
    told instead, and ``reason`` is the short reason for the webhook's answer and the logs."""

    admitted: bool
    reason: str = ""
    reply: str | None = None


ADMITTED: Final = Verdict(True)


def policy_of(db: Database, binding: ChannelBinding) -> ChannelPolicy:
    """The policy of the binding's agent (in the binding's tenant)."""
    with db.transaction(write=False) as tx:
        return channel_access.get_policy(tx, binding.scope, binding.agent_id)


def reads_senders(policy: ChannelPolicy, *, direct: bool) -> bool:
    """Whether :func:`admit` has to read the agent's senders for a message (else it admits it at once): a
    webhook skips the worker thread and the transaction for the commonest case, an open DM or a group."""
    return direct and policy.dm_policy != "open"


def admit(db: Database, binding: ChannelBinding, policy: ChannelPolicy, sender_id: str, *,
          direct: bool) -> Verdict:
    """The verdict on one message of ``sender_id`` (see the module docstring); ``direct``: a DM."""
    if not reads_senders(policy, direct=direct):
        return ADMITTED
    scope, agent_id = binding.scope, binding.agent_id
    with db.transaction(write=False) as tx:
        known = channel_access.find_sender(tx, scope, agent_id, binding.platform, sender_id)
    if known is not None and known.status == "allowed":
        return ADMITTED
    if policy.dm_policy == "allowlist":
        return Verdict(False, "the sender is not on the agent's allowlist", REFUSAL)
    try:
        with db.transaction() as tx:
            code = channel_access.request_pairing(tx, scope, agent_id, binding.platform, sender_id)
    except UniqueViolation:  # the sender's other message, at the same moment, made the code: remind this one
        code = None
    if code is None:
        return Verdict(False, "the sender's pairing is awaiting approval", PAIRING_PENDING)
    return Verdict(False, "the sender was sent a pairing code", PAIRING_REPLY.format(code=format_code(code)))


def format_code(code: str) -> str:
    """``ABCD-EFGH``: easier to read out; the dash is ignored when the code is approved."""
    return f"{code[:4]}-{code[4:]}"
