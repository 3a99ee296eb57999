"""Which identity of a request each purpose uses, as functions: the ACTOR for what a person did or owns, the
SCOPE for what the chat's members share.

| purpose                                   | identity                         | function                        |
|-------------------------------------------|----------------------------------|---------------------------------|
| ownership of a new row (skill, cron, …)   | ACTOR (``ctx.actor_id``)         | :func:`owner_for_new_row`       |
| audit trail (``initiated_by``, events)    | ACTOR                            | :func:`audit_actor`             |
| memory / knowledge graph / session key    | SCOPE (``ctx.user_id``)          | :func:`memory_scope`            |
| file / workspace path                     | SCOPE                            | :func:`file_scope`              |
| patch/delete a skill                      | ACTOR (new rows) or SCOPE (legacy) | :func:`can_manage_skill_in_context` |
| per-chat write permission                 | SENDER                           | :mod:`agentfy.permissions.policy` |

Calling one of these instead of reading a field of the context by hand is the point: a skill published in
a group then belongs to the person, while the group keeps sharing memory and files.
"""

from __future__ import annotations

from agentfy.identity.context import RequestContext
from agentfy.permissions.senders import is_chat_scope, is_synthetic_sender
from agentfy.store.repos import skills


class NoActorError(LookupError):
    """A new row needs an owner but the request has no individual acting (see :func:`owner_for_new_row`)."""

    def __init__(self, actor: str | None) -> None:
        shown = "no actor" if actor is None else f"actor {actor!r}"
        super().__init__(f"a new row must be owned by the person acting, but the request has {shown}: a "
                         "system context without a propagated sender (origin_sender_id) cannot own rows")
        self.actor = actor


def owner_for_new_row(ctx: RequestContext) -> str:
    """The owner to store on a new row: the ACTOR (the sender if set, else the user ID).

    Raises :class:`NoActorError` when that is not a person — absent, a chat scope (a system context that
    inherited a group scope without a sender: the group would own the row, and a person's skill must belong to
    the person, not to every member of the chat) or a
    synthetic wrapper sender (a row owned by ``subagent:<task>`` could never be managed by anyone).
    """
    actor = ctx.actor_id
    if actor is None or is_chat_scope(actor) or is_synthetic_sender(actor):
        raise NoActorError(actor)
    return actor


def audit_actor(ctx: RequestContext) -> str | None:
    """The identity an audit record names: the ACTOR, as it is (a wrapper sender is recorded rather than
    dropped, so an unpropagated hop stays visible in the trail); ``None`` for an empty context."""
    return ctx.actor_id


def memory_scope(ctx: RequestContext) -> str | None:
    """The namespace of memory, knowledge graph and sessions: the SCOPE, shared by every member of a group
    (``None``: no per-user scope, e.g. a cron-direct run, which uses the agent's own memory)."""
    return ctx.user_id


def file_scope(ctx: RequestContext) -> str | None:
    """The per-scope workspace of files: the SCOPE (a group's members share files); ``None`` as above."""
    return ctx.user_id


def can_manage_skill_in_context(skill: skills.Skill, ctx: RequestContext) -> bool:
    """Whether the request may patch or delete ``skill``: its owner is the ACTOR (rows written since ownership
    moved to the person) or the SCOPE (older rows stored the chat scope as owner).  Delegates to
    :func:`agentfy.store.repos.skills.can_manage_skill`."""
    return skills.can_manage_skill(skill, ctx.actor_id, ctx.user_id)
