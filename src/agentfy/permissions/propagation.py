"""Carrying the acting person through tool wrappers that re-ingress a message.

Without it, a turn relayed by a wrapper acted as the wrapper: every group write the person was granted was
denied, and rows the turn created were owned by the chat instead of the person.

A subagent announce, a delegate announce, a teammate dispatch and a ``session_send`` each put a
*synthetic* message on the inbound path: its ``sender_id`` is routing identity (``subagent:<taskID>``,
``delegate:<taskID>``, ``teammate:<…>``, ``session_send_tool``), never a person.  The next turn's
permission check looks at the sender, so without more it would see the wrapper and deny every group write
the person was granted.  The chain that fixes it:

    originating RequestContext's actor (a person)
      → InboundMessage.metadata[META_ORIGIN_SENDER_ID]   (the synthesisers here)
      → RunRequest.sender_id                              (run_request_from_inbound)
      → RequestContext.sender_id of the next turn         (context_for_run)
      → the policy's grant look-up                        (agentfy.permissions.policy)

The scope (``user_id``) is kept from the originating context, so memory, files and grants stay those of the
chat the person wrote in.  Trust rules:

* only a *synthetic* message's origin is honoured: a message from a real sender keeps its sender even if
  its metadata names someone else, so a channel that passes user-controlled metadata through cannot be used
  to act as another member;
* the origin must be a person (not empty, not synthetic, not a chat scope); anything else is ignored and
  the synthetic sender stays, which the policy denies in groups — a wrapper that did not propagate fails
  closed rather than gaining the group's rights;
* the role is never carried in metadata: the gateway resolves it for the propagated person and passes it
  to :func:`context_for_run` (a forged metadata entry must not confer a role).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from agentfy.identity.context import RequestContext
from agentfy.permissions.channels import new_context
from agentfy.permissions.senders import SESSION_SEND_SENDER, is_person, is_synthetic_sender, require_identity

#: Metadata key of the real acting sender on a synthetic inbound message (a wire value: producers in other
#: processes write the same key).
META_ORIGIN_SENDER_ID: Final = "origin_sender_id"

logger = logging.getLogger("agentfy.permissions")


@dataclass(frozen=True, slots=True)
class InboundMessage:
    """A message entering an agent's inbound path.

    ``user_id`` is the chat SCOPE (``group:telegram:<chat>``, a DM sender, an HTTP user, or ``None`` for a
    cron-direct origin); ``sender_id`` the sender as delivered, synthetic for wrapper messages.  ``metadata``
    is copied on construction, so the caller's dict cannot change a message afterwards.
    """

    channel: str
    user_id: str | None
    sender_id: str
    content: str
    metadata: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "metadata", dict(self.metadata))


@dataclass(frozen=True, slots=True)
class RunRequest:
    """What the next agent turn runs with: the scope, the acting sender (the person once propagated) and,
    for wrapper messages, the synthetic sender that relayed it (``relayed_by``, for traces)."""

    channel: str
    user_id: str | None
    sender_id: str | None
    content: str
    relayed_by: str | None = None


def origin_sender_of(origin: RequestContext) -> str | None:
    """The person to propagate from ``origin``: its actor (the sender if set, else the user ID) when that
    is a person; ``None`` when it is absent, synthetic or a chat scope (nothing honest to propagate)."""
    actor = origin.actor_id
    return actor if is_person(actor) else None


def _synthesise(origin: RequestContext, *, channel: str, sender_id: str, content: str,
                user_id: str | None) -> InboundMessage:
    metadata: dict[str, str] = {}
    person = origin_sender_of(origin)
    if person is not None:
        metadata[META_ORIGIN_SENDER_ID] = person
    return InboundMessage(channel=require_identity(channel, "channel"), user_id=user_id, sender_id=sender_id,
                          content=content, metadata=metadata)


def subagent_announce(origin: RequestContext, *, task_id: str, content: str, channel: str) -> InboundMessage:
    """A subagent's result announced back to the chat that spawned it (sender ``subagent:<taskID>``)."""
    return _synthesise(origin, channel=channel, sender_id=f"subagent:{require_identity(task_id, 'task_id')}",
                       content=content, user_id=origin.user_id)


def delegate_announce(origin: RequestContext, *, task_id: str, content: str, channel: str) -> InboundMessage:
    """A delegated agent's result announced to the parent (sender ``delegate:<taskID>``)."""
    return _synthesise(origin, channel=channel, sender_id=f"delegate:{require_identity(task_id, 'task_id')}",
                       content=content, user_id=origin.user_id)


def teammate_dispatch(origin: RequestContext, *, team_task_id: str, content: str, channel: str) -> InboundMessage:
    """A team task dispatched to a teammate agent (sender ``teammate:<teamTaskID>``)."""
    return _synthesise(origin, channel=channel, sender_id=f"teammate:{require_identity(team_task_id, 'team_task_id')}",
                       content=content, user_id=origin.user_id)


def session_send(origin: RequestContext, *, content: str, channel: str,
                 target_user_id: str | None = None) -> InboundMessage:
    """A message the ``session_send`` tool puts into a session (sender ``session_send_tool``).

    The scope is the originating one unless ``target_user_id`` names the target session's scope; the person
    is propagated either way, so in another group they need that group's grant.
    """
    scope = origin.user_id if target_user_id is None else require_identity(target_user_id, "target_user_id")
    return _synthesise(origin, channel=channel, sender_id=SESSION_SEND_SENDER, content=content, user_id=scope)


def ticker_fire(*, job_id: str, creator: str, user_id: str | None, content: str, channel: str) -> InboundMessage:
    """A cron job's run put on the inbound path (sender ``ticker:<jobID>``), carrying the job's creator as the
    origin when the creator is a person: the run then acts as the creator, whose grants decide it at fire
    time, in the job's SCOPE ``user_id``.  A creator that is not a person is not carried (the ticker stays
    the sender, which the policy refuses in a group)."""
    metadata = {META_ORIGIN_SENDER_ID: creator} if is_person(creator) else {}
    return InboundMessage(channel=require_identity(channel, "channel"), user_id=user_id or None,
                          sender_id=f"ticker:{require_identity(job_id, 'job_id')}", content=content,
                          metadata=metadata)


def run_request_from_inbound(message: InboundMessage) -> RunRequest:
    """The next turn's request: for a synthetic message whose metadata carries a person, that person is the
    sender and the wrapper is ``relayed_by``; otherwise the sender stays as delivered (see the trust rules)."""
    sender = message.sender_id or None
    if not is_synthetic_sender(sender):
        if META_ORIGIN_SENDER_ID in message.metadata:
            logger.debug("ignoring %s on a message from a real sender", META_ORIGIN_SENDER_ID,
                         extra={"sender_id": sender, "chat_scope": message.user_id})
        return RunRequest(channel=message.channel, user_id=message.user_id, sender_id=sender,
                          content=message.content)
    origin = message.metadata.get(META_ORIGIN_SENDER_ID)
    propagated = origin if is_person(origin) else None
    return RunRequest(channel=message.channel, user_id=message.user_id, sender_id=propagated or sender,
                      content=message.content, relayed_by=sender)


def context_for_run(run_request: RunRequest, tenant_id: str, agent_id: str, agent_key: str, *,
                    role: str | None = None) -> RequestContext:
    """The request context of the next turn: tenant, agent ID and key (also
    as the tool agent key), the scope and the acting sender of ``run_request``, and ``role`` as resolved by
    the gateway for that sender.  Validated: a key cannot be bound as the ID, nor a slug as the tenant."""
    return new_context(tenant_id=tenant_id, agent_id=agent_id, agent_key=agent_key, tool_agent_key=agent_key,
                       user_id=run_request.user_id, sender_id=run_request.sender_id, role=role)
