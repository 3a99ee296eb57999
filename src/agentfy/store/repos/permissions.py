"""Group-chat config grants (``agent_config_permissions``): may this sender change this agent's config here?

A grant names three identities that must not be confused:

* the tenant, through the required ``Scope`` (as everywhere);
* the chat SCOPE the grant applies to (``group:telegram:<chat>``, ``guild:<guild>:…``), stored in the
  column ``scope`` and called ``chat_scope`` here so it cannot be mistaken for the tenant ``Scope``;
* the ACTOR it names (``sender_id``: the individual sender, never the group).

This module stores and looks up; the policy (deny empty or synthetic senders, allow outside groups, and
fail closed on a database error unless an operator opts into fail-open) belongs to
:mod:`agentfy.permissions`, which calls :func:`find_grant`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import sqlalchemy as sa

from agentfy.identity import AgentConfigPermissionId, AgentId, OrgId, Scope, parse_id
from agentfy.store.db import Tx, now
from agentfy.store.errors import ConflictError, InvalidInputError, NotFoundError, UniqueViolation
from agentfy.store.paging import Keyset
from agentfy.store.repos import agents
from agentfy.store.repos._common import require_label
from agentfy.store.schema import agent_config_permissions as grants
from agentfy.store.sql import insert_returning_id

# Not (yet) in agentfy.identity; defined here until it moves there with the other typed IDs.

CONFIG_TYPES: Final = ("file_writer", "cron", "context_file")
#: A grant applies in a group or guild chat; elsewhere the policy allows without asking.
CHAT_SCOPE_PREFIXES: Final = ("group:", "guild:")

_IN_TENANT: Final = grants.c.tenant_id == sa.bindparam("tenant_id")
_NATURAL_KEY: Final = (_IN_TENANT, grants.c.agent_id == sa.bindparam("agent_id"),
                       grants.c.scope == sa.bindparam("chat_scope"),
                       grants.c.config_type == sa.bindparam("config_type"),
                       grants.c.sender_id == sa.bindparam("sender_id"))
_COLUMNS: Final = (grants.c.id, grants.c.tenant_id, grants.c.agent_id, grants.c.scope, grants.c.config_type,
                   grants.c.sender_id, grants.c.allow, grants.c.granted_by, grants.c.created_at)
_INSERT: Final = insert_returning_id(grants, ["tenant_id", "agent_id", "scope", "config_type", "sender_id", "allow",
                                              "granted_by", "created_at"])
_UPDATE: Final = (sa.update(grants).where(*_NATURAL_KEY)
                  .values(allow=sa.bindparam("allow"), granted_by=sa.bindparam("granted_by"))
                  .returning(*_COLUMNS))
_FIND: Final = sa.select(grants.c.allow).where(*_NATURAL_KEY)
PAGES: Final[Keyset[ConfigGrant]] = Keyset(
    sa.select(*_COLUMNS).where(_IN_TENANT, grants.c.agent_id == sa.bindparam("agent_id")),
    (grants.c.scope, grants.c.config_type, grants.c.sender_id), lambda g: (g.chat_scope, g.config_type, g.sender_id))
_DELETE_BY_KEY: Final = sa.delete(grants).where(*_NATURAL_KEY)
_DELETE_BY_ID: Final = sa.delete(grants).where(_IN_TENANT, grants.c.id == sa.bindparam("grant_id"))


@dataclass(frozen=True, slots=True)
class ConfigGrant:
    """``chat_scope`` is the group/guild SCOPE; ``sender_id`` the ACTOR; ``granted_by`` the actor who granted."""

    id: AgentConfigPermissionId
    tenant_id: OrgId
    agent_id: AgentId
    chat_scope: str
    config_type: str
    sender_id: str
    allow: bool
    granted_by: str | None
    created_at: str


def _grant(row: tuple[Any, ...]) -> ConfigGrant:
    return ConfigGrant(AgentConfigPermissionId(row[0]), OrgId(row[1]), AgentId(row[2]), row[3], row[4], row[5],
                       bool(row[6]), row[7], row[8])


def _chat_scope(value: object) -> str:
    chat_scope = require_label(value, field="chat_scope")
    if not chat_scope.startswith(CHAT_SCOPE_PREFIXES):
        raise InvalidInputError(f"chat_scope {chat_scope!r} is not a group or guild scope (group:…, guild:…); "
                                "grants apply only there", field="chat_scope", value=chat_scope)
    return chat_scope


def _config_type(value: object) -> str:
    if value not in CONFIG_TYPES:
        raise InvalidInputError(f"config_type {value!r} is unknown; expected one of {', '.join(CONFIG_TYPES)}",
                                field="config_type", value=value)
    return str(value)


def _actor(value: object, field: str) -> str:
    actor = require_label(value, field=field)
    if actor.startswith(CHAT_SCOPE_PREFIXES):
        raise InvalidInputError(f"{field} {actor!r} is a chat scope; a grant names the individual sender "
                                "(SenderID), never the group", field=field, value=actor)
    return actor


def _key(scope: Scope, agent_id: str, chat_scope: str, config_type: str, sender_id: str) -> dict[str, Any]:
    """The grant's natural key, every part validated (before any SQL)."""
    return {"tenant_id": scope.tenant_id, "agent_id": parse_id(agent_id, "agent"),
            "chat_scope": _chat_scope(chat_scope), "config_type": _config_type(config_type),
            "sender_id": _actor(sender_id, "sender_id")}


def grant(tx: Tx, scope: Scope, agent_id: str, *, chat_scope: str, config_type: str, sender_id: str, allow: bool,
          granted_by: str | None = None) -> ConfigGrant:
    """Allow (or explicitly deny) ``sender_id`` the ``config_type`` of an agent of the tenant in a chat.

    Granting again replaces ``allow`` and ``granted_by`` of the existing grant (same ID).  Two concurrent
    first grants of the same key: one wins, the other gets :class:`ConflictError` (retrying updates).
    """
    params = _key(scope, agent_id, chat_scope, config_type, sender_id)
    if not isinstance(allow, bool):
        raise InvalidInputError(f"allow must be true or false, got {allow!r}", field="allow", value=allow)
    by = None if granted_by is None else _actor(granted_by, "granted_by")
    agents.get_agent(tx, scope, params["agent_id"])
    row = tx.one(_UPDATE, {**params, "allow": allow, "granted_by": by})
    if row is not None:
        return _grant(row)
    stamp = now()
    values = {"tenant_id": scope.tenant_id, "agent_id": params["agent_id"], "scope": params["chat_scope"],
              "config_type": params["config_type"], "sender_id": params["sender_id"], "allow": allow,
              "granted_by": by, "created_at": stamp}
    try:
        grant_id = tx.insert_minted("agent-config-permission", _INSERT, values)
    except UniqueViolation as error:
        if error.is_primary_key:
            raise
        # The table's only other unique rule is the natural key (its name differs by engine, so not matched).
        raise ConflictError(f"a {params['config_type']} grant for sender_id {params['sender_id']!r} in "
                            f"{params['chat_scope']} was written concurrently; retry", field="sender_id",
                            value=params["sender_id"]) from None
    return ConfigGrant(AgentConfigPermissionId(grant_id), scope.tenant_id, AgentId(params["agent_id"]),
                       params["chat_scope"], params["config_type"], params["sender_id"], allow, by, stamp)


# Positional as the permission layer calls it; a swapped chat_scope/sender_id is refused by their shapes.
def find_grant(tx: Tx, scope: Scope, agent_id: str, chat_scope: str, config_type: str,  # noqa: PLR0917
               sender_id: str) -> bool | None:
    """The grant's ``allow`` for this agent, chat scope, config type and sender; ``None`` when there is none."""
    value = tx.scalar(_FIND, _key(scope, agent_id, chat_scope, config_type, sender_id))
    return None if value is None else bool(value)


def list_grants(tx: Tx, scope: Scope, agent_id: str,
                *, after: Sequence[Any] | None = None, limit: int | None = None) -> list[ConfigGrant]:
    """The agent's grants (the agent must be in the tenant), by chat scope, config type and sender (all, or a
    page)."""
    agent = agents.get_agent(tx, scope, parse_id(agent_id, "agent"))
    return PAGES.fetch(tx, {"tenant_id": scope.tenant_id, "agent_id": agent.id}, _grant, after=after, limit=limit)


def revoke(tx: Tx, scope: Scope, agent_id: str, *, chat_scope: str, config_type: str, sender_id: str) -> None:
    """Remove the grant (afterwards :func:`find_grant` says ``None``); no such grant is :class:`NotFoundError`."""
    params = _key(scope, agent_id, chat_scope, config_type, sender_id)
    if tx.execute(_DELETE_BY_KEY, params).rowcount == 0:
        raise NotFoundError("grant", f"{params['config_type']}:{params['chat_scope']}:{params['sender_id']}")


def delete_grant(tx: Tx, scope: Scope, grant_id: str) -> None:
    """Remove a grant by its ID (what an admin UI holds)."""
    grant_id = parse_id(grant_id, "agent-config-permission", field="grant_id")
    if tx.execute(_DELETE_BY_ID, {"tenant_id": scope.tenant_id, "grant_id": grant_id}).rowcount == 0:
        raise NotFoundError("grant", grant_id)
