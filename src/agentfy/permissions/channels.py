"""Request contexts as each channel must build them: which SCOPE, ACTOR and sender each channel sets, as code.

| context                    | ``user_id`` (SCOPE)               | ``sender_id`` (ACTOR)  | ``actor_id``               |
|----------------------------|-----------------------------------|------------------------|----------------------------|
| Telegram DM                | sender numeric                    | sender numeric         | sender numeric             |
| Telegram group             | ``group:telegram:<chatID>``       | sender numeric         | sender numeric             |
| Discord DM                 | sender snowflake                  | sender snowflake       | sender snowflake           |
| Discord guild              | ``guild:<guildID>:user:<sender>`` | sender snowflake       | sender snowflake           |
| HTTP API                   | HTTP user ID                      | (empty)                | HTTP user ID               |
| cron / subagent system ctx | inherited or empty                | empty or propagated    | sender if set, else scope  |

A channel that builds its context by hand can put the group where the person belongs (and every member
gains the grants of the group) or the person where the group belongs (and memory splits per member); these
constructors are the one place the shapes are decided.  IDs are validated on the way in: Telegram chat IDs
are integers (groups negative), Telegram user IDs and Discord snowflakes non-negative integers; the
tenant, agent ID, agent key and role go through :func:`agentfy.identity.context.bind`'s validation.
"""

from __future__ import annotations

import re
from typing import Final

from agentfy.identity.context import EMPTY, RequestContext, bind, use
from agentfy.permissions.senders import is_chat_scope, require_identity

_INTEGER: Final = re.compile(r"-?[0-9]{1,20}")
_UNSIGNED: Final = re.compile(r"[0-9]{1,20}")


def _numeric(value: int | str, pattern: re.Pattern[str], field: str) -> str:
    text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
    if not isinstance(text, str) or not pattern.fullmatch(text):
        raise ValueError(f"{field} {value!r} is not a {'' if pattern is _INTEGER else 'non-negative '}integer ID")
    return text


def _person(value: str, field: str) -> str:
    require_identity(value, field)
    if is_chat_scope(value):
        raise ValueError(f"{field} {value!r} is a chat scope; it must name an individual")
    return value


def new_context(**fields: object) -> RequestContext:
    """A context with exactly ``fields``, validated like :func:`~agentfy.identity.context.bind` (typed tenant
    and agent IDs, agent keys, known roles) and inheriting nothing from the current context."""
    with use(EMPTY), bind(**fields) as context:
        return context


def telegram_context(chat_id: int | str, sender_id: int | str, *, is_group: bool, tenant_id: str | None = None,
                     agent_id: str | None = None, agent_key: str | None = None,
                     role: str | None = None) -> RequestContext:
    """A Telegram message: in a group the SCOPE is ``group:telegram:<chatID>`` (shared memory and files),
    in a DM the sender; the ACTOR is always the sender."""
    chat = _numeric(chat_id, _INTEGER, "chat_id")
    sender = _numeric(sender_id, _UNSIGNED, "sender_id")
    user_id = f"group:telegram:{chat}" if is_group else sender
    return new_context(tenant_id=tenant_id, agent_id=agent_id, agent_key=agent_key, role=role, user_id=user_id,
                    sender_id=sender)


def discord_context(guild_id: int | str | None, sender_id: int | str, *, tenant_id: str | None = None,
                    agent_id: str | None = None, agent_key: str | None = None,
                    role: str | None = None) -> RequestContext:
    """A Discord message: in a guild (``guild_id`` set) the SCOPE is ``guild:<guildID>:user:<senderID>``,
    in a DM (``guild_id=None``) the sender; the ACTOR is always the sender's snowflake."""
    sender = _numeric(sender_id, _UNSIGNED, "sender_id")
    guild = None if guild_id is None else _numeric(guild_id, _UNSIGNED, "guild_id")
    user_id = sender if guild is None else f"guild:{guild}:user:{sender}"
    return new_context(tenant_id=tenant_id, agent_id=agent_id, agent_key=agent_key, role=role, user_id=user_id,
                    sender_id=sender)


def http_context(user_id: str, *, tenant_id: str | None = None, agent_id: str | None = None,
                 agent_key: str | None = None, role: str | None = None) -> RequestContext:
    """An HTTP API call: the SCOPE is the authenticated user, there is no sender, and the actor falls back
    to the user."""
    return new_context(tenant_id=tenant_id, agent_id=agent_id, agent_key=agent_key, role=role,
                    user_id=_person(user_id, "user_id"), sender_id=None)


def system_context(*, user_id: str | None = None, sender_id: str | None = None, tenant_id: str | None = None,
                   agent_id: str | None = None, agent_key: str | None = None,
                   role: str | None = None) -> RequestContext:
    """A cron run or a subagent's system context: ``user_id`` is the inherited SCOPE (or none: cron-direct),
    ``sender_id`` the propagated ACTOR (or none).  With a group scope and no propagated sender the actor
    falls back to the group scope, which the write policy denies; propagate the sender."""
    scope = None if user_id is None or user_id == "" else require_identity(user_id, "user_id")
    sender = None if not sender_id else _person(sender_id, "sender_id")
    return new_context(tenant_id=tenant_id, agent_id=agent_id, agent_key=agent_key, role=role, user_id=scope,
                    sender_id=sender)
