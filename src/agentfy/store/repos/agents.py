"""Agents: the dual identity (system-wide ``id`` vs per-tenant ``agent_key``) at the storage boundary.

``id`` is storage/event/API/trace material; ``agent_key`` is display/path/log/prompt/router material and is
unique only within a tenant.  ``resolve_agent`` takes either and returns both.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final, NamedTuple, TypeGuard

import sqlalchemy as sa

from agentfy.identity import AgentId, AgentKey, InvalidIdError, OrgId, Scope, parse_agent_key, parse_id
from agentfy.identity.keys import InvalidAgentKeyError, agent_key_problem, is_short_key, looks_like_an_id
from agentfy.ids import CANONICAL, is_id
from agentfy.ids.validate import canonical_matcher
from agentfy.store.changefeed import Change
from agentfy.store.db import Positional, Sql, Tx, now
from agentfy.store.errors import ConflictError, NotFoundError, UniqueViolation
from agentfy.store.paging import Keyset
from agentfy.store.repos._batch import json_values
from agentfy.store.repos._common import dump_json, load_json, require_text
from agentfy.store.schema import agents, organizations, spans, traces, usage_snapshots
from agentfy.store.sql import insert_returning_id

_COLUMNS: Final = (agents.c.id, agents.c.tenant_id, agents.c.agent_key, agents.c.display_name, agents.c.config,
                   agents.c.created_at, agents.c.updated_at, agents.c.deleted_at)
_LIVE: Final = agents.c.deleted_at.is_(None)
_IN_TENANT: Final = agents.c.tenant_id == sa.bindparam("tenant_id")

_INSERT: Final = insert_returning_id(agents, ["tenant_id", "agent_key", "display_name", "config", "created_at",
                                              "updated_at"])
# One of these two runs on every request that names an agent: bound by position (see Positional for why a
# tuple), and without the two columns the WHERE already fixes (the tenant is the caller's, deleted_at NULL),
# so the driver converts two values fewer per look-up (see _live_agent).
_LIVE_COLUMNS: Final = (agents.c.id, agents.c.agent_key, agents.c.display_name, agents.c.config, agents.c.created_at,
                        agents.c.updated_at)
_BY_ID: Final = Positional(sa.select(*_LIVE_COLUMNS).where(_IN_TENANT, agents.c.id == sa.bindparam("id"), _LIVE),
                           ("tenant_id", "id"))
_BY_KEY: Final = Positional(
    sa.select(*_LIVE_COLUMNS).where(_IN_TENANT, agents.c.agent_key == sa.bindparam("agent_key"), _LIVE),
    ("tenant_id", "agent_key"))
#: The tenant's live agents by key (then ID, though a live key is unique in its tenant).
PAGES: Final[Keyset[Agent]] = Keyset(sa.select(*_COLUMNS).where(_IN_TENANT, _LIVE),
                                       (agents.c.agent_key, agents.c.id), lambda a: (a.agent_key, a.id))
_RENAME: Final = (sa.update(agents).where(_IN_TENANT, agents.c.id == sa.bindparam("id"), _LIVE)
                  .values(agent_key=sa.bindparam("new_key"), updated_at=sa.bindparam("now")))
_UPDATE: Final = (sa.update(agents).where(_IN_TENANT, agents.c.id == sa.bindparam("id"), _LIVE)
                  .values(display_name=sa.bindparam("display_name"), config=sa.bindparam("config"),
                          updated_at=sa.bindparam("now")))
_ARCHIVE: Final = (sa.update(agents).where(_IN_TENANT, agents.c.id == sa.bindparam("id"), _LIVE)
                   .values(deleted_at=sa.bindparam("now"), updated_at=sa.bindparam("now")))
_DELETE: Final = sa.delete(agents).where(_IN_TENANT, agents.c.id == sa.bindparam("id"))
# Telemetry has no FK (volume): the agent's rows stay as history, anonymised, instead of dangling.
_FORGET_IN_TELEMETRY: Final = tuple(
    sa.update(table).where(table.c.agent_id == sa.bindparam("id")).values(agent_id=sa.null())
    for table in (spans, traces, usage_snapshots))
_KEY_OF_ANY: Final = sa.select(agents.c.agent_key).where(_IN_TENANT, agents.c.id == sa.bindparam("id"))
_KEYS_OF: Final = Sql(lambda d: sa.select(agents.c.id, agents.c.agent_key).where(
    _IN_TENANT, _LIVE, agents.c.id.in_(json_values("ids", d))))
_CLEAR_DEFAULT: Final = (sa.update(organizations)
                         .where(organizations.c.id == sa.bindparam("tenant_id"),
                                organizations.c.default_agent_id == sa.bindparam("id"))
                         .values(default_agent_id=sa.null()))


class Agent(NamedTuple):
    """An agent with both identities.  ``id`` for storage, events, APIs and traces; ``agent_key`` for
    prompts, paths, logs and the UI (always together with the tenant).

    A named tuple rather than a frozen dataclass: it is built on every resolution (the hot path of every
    request), and a frozen dataclass costs several times as much to construct."""

    id: AgentId
    tenant_id: OrgId
    agent_key: AgentKey
    display_name: str
    config: dict[str, Any]
    created_at: str
    updated_at: str
    deleted_at: str | None = None


#: The canonical agent ID check alone (one compiled match): resolve_agent's common case, before ``is_id``.
_CANONICAL_AGENT_ID: Final = canonical_matcher("agent")
#: ``tuple.__new__`` builds the named tuple without its generated ``__new__`` (a Python frame per row).
_new_tuple: Final = tuple.__new__


def _agent(row: tuple[Any, ...]) -> Agent:
    # The NewTypes are the identity at run time; calling them would cost a call each on the hot path, and so
    # would load_json for the commonest config, the empty one.
    config = row[4]
    return _new_tuple(Agent, (row[0], row[1], row[2], row[3], {} if config == "{}" else load_json(config),
                              row[5], row[6], row[7]))


def _live_agent(row: tuple[Any, ...], tenant_id: OrgId) -> Agent:
    """An agent from a row of ``_LIVE_COLUMNS`` read in ``tenant_id`` (live, so ``deleted_at`` is None)."""
    config = row[3]
    return _new_tuple(Agent, (row[0], tenant_id, row[1], row[2], {} if config == "{}" else load_json(config),
                              row[4], row[5], None))


def _is_canonical_agent_id(value: object) -> TypeGuard[str]:
    """A canonical agent ID, decided by its start and one compiled match (nothing else pays for the pattern):
    the common case of every look-up by ID, ahead of :func:`parse_id`'s general checks."""
    return type(value) is str and value.startswith("agent-") and _CANONICAL_AGENT_ID(value) is not None


def _is_short_agent_key(value: object) -> TypeGuard[str]:
    """A short ``agent_key`` (no ID shape is one), decided by one cheap test ahead of the key pattern."""
    return type(value) is str and is_short_key(value)


def _duplicate_key(scope: Scope, key: str) -> ConflictError:
    return ConflictError(f"agent_key {key!r} is already used by another agent of tenant {scope.tenant_id}",
                         field="agent_key", value=key)


def _changed(tx: Tx, op: str, scope: Scope, agent_id: str, key: str, *, previous_key: str | None = None) -> None:
    """Record the change on the change feed: every process's caches drop the agent (by ID, key and previous
    key) and WebSocket clients of the tenant hear of it once it commits."""
    tx.record_change(Change("agent", op, scope.tenant_id, agent_id, key, previous_key if previous_key else key))


def create_agent(tx: Tx, scope: Scope, *, agent_key: str, display_name: str | None = None,
                 config: dict[str, Any] | None = None) -> Agent:
    """Create an agent under a freshly minted ID; a duplicate ``agent_key`` in the tenant is a conflict."""
    # A valid key is also a valid display name (a slug, within both limits): the default needs no check.
    key = agent_key if _is_short_agent_key(agent_key) else parse_agent_key(agent_key)
    name = key if display_name is None else require_text(display_name, field="display_name", max_length=200)
    stamp = now()
    values = {"tenant_id": scope.tenant_id, "agent_key": key, "display_name": name,
              "config": "{}" if config is None else dump_json(config, field="config"), "created_at": stamp,
              "updated_at": stamp}
    try:
        agent_id = tx.insert_minted("agent", _INSERT, values)
    except UniqueViolation as error:
        if "agent_key" in error.columns:
            raise _duplicate_key(scope, key) from None
        raise
    _changed(tx, "created", scope, agent_id, key)
    return _new_tuple(Agent, (agent_id, scope.tenant_id, key, name, config or {}, stamp, stamp, None))


def get_agent(tx: Tx, scope: Scope, agent_id: str) -> Agent:
    """The agent with this ID in the scope's tenant, or :class:`NotFoundError`."""
    # execute().fetchone() rather than one() (the drivers return tuples): a frame less per look-up.
    if not _is_canonical_agent_id(agent_id):
        agent_id = parse_id(agent_id, "agent")
    row = tx.execute(_BY_ID, (scope.tenant_id, agent_id)).fetchone()
    if row is None:
        raise NotFoundError("agent", agent_id)
    return _live_agent(row, scope.tenant_id)


def get_agent_by_key(tx: Tx, scope: Scope, agent_key: str) -> Agent:
    """The agent with this key in the scope's tenant, or :class:`NotFoundError`."""
    if not _is_short_agent_key(agent_key):
        agent_key = parse_agent_key(agent_key)
    row = tx.execute(_BY_KEY, (scope.tenant_id, agent_key)).fetchone()
    if row is None:
        raise NotFoundError("agent", agent_key)
    return _live_agent(row, scope.tenant_id)


def resolve_agent(tx: Tx, scope: Scope, id_or_key: str) -> Agent:
    """The agent named by an ID (canonical or legacy) or an ``agent_key``, in the scope's tenant.

    The two forms can never be confused: a key may not have the shape of an ID.  The ID of another entity
    (``team-…``) raises :class:`InvalidIdError`; a value that is neither raises
    :class:`InvalidAgentKeyError` naming both expectations.
    """
    # ``execute().fetchone()`` rather than ``one()``: a frame less on the path of every request; the row is
    # copied into the named tuple whatever sequence the driver returns.
    # The two common cases first, each decided by one cheap test: a canonical agent ID and a short key.
    # Then legacy IDs.
    if _is_canonical_agent_id(id_or_key):
        row = tx.execute(_BY_ID, (scope.tenant_id, id_or_key)).fetchone()
    elif _is_short_agent_key(id_or_key):
        row = tx.execute(_BY_KEY, (scope.tenant_id, id_or_key)).fetchone()
    elif is_id(id_or_key, "agent"):
        row = tx.execute(_BY_ID, (scope.tenant_id, id_or_key)).fetchone()
    else:
        problem = agent_key_problem(id_or_key)
        if problem is not None:
            if isinstance(id_or_key, str) and looks_like_an_id(id_or_key):
                raise InvalidIdError(id_or_key, "agent", field="agent")  # e.g. a team ID where an agent belongs
            raise InvalidAgentKeyError(id_or_key, f"expected an agent ID ({CANONICAL.described_for('agent')}) or an "
                                       f"agent_key; as a key it {problem}", field="agent")
        row = tx.one(_BY_KEY, (scope.tenant_id, id_or_key))
    if row is None:
        raise NotFoundError("agent", id_or_key)
    config = row[3]  # _live_agent(row, scope.tenant_id), inlined: a frame less per request
    return _new_tuple(Agent, (row[0], scope.tenant_id, row[1], row[2], {} if config == "{}" else load_json(config),
                              row[4], row[5], None))


def list_agents(tx: Tx, scope: Scope, *, after: Sequence[Any] | None = None, limit: int | None = None) -> list[Agent]:
    """The tenant's live agents by key: all of them, or a page (``limit``) after the key ``after``
    (:data:`PAGES`)."""
    return PAGES.fetch(tx, {"tenant_id": scope.tenant_id}, _agent, after=after, limit=limit)


def keys_of(tx: Tx, scope: Scope, agent_ids: Sequence[str]) -> dict[str, str]:
    """The ``agent_key`` of each live agent of the tenant among ``agent_ids`` (one query)."""
    if not agent_ids:
        return {}
    rows = tx.all(_KEYS_OF, {"tenant_id": scope.tenant_id, "ids": json.dumps(list(agent_ids))})
    return {str(row[0]): str(row[1]) for row in rows}


def rename_agent(tx: Tx, scope: Scope, agent_id: str, new_key: str) -> Agent:
    """Give the agent a new ``agent_key`` (its ID never changes); the old key is free at once."""
    agent = get_agent(tx, scope, agent_id)
    key = parse_agent_key(new_key)
    try:
        tx.execute(_RENAME, {"tenant_id": scope.tenant_id, "id": agent.id, "new_key": key, "now": now()})
    except UniqueViolation as error:
        if "agent_key" in error.columns:
            raise _duplicate_key(scope, key) from None
        raise
    _changed(tx, "renamed", scope, agent.id, key, previous_key=agent.agent_key)
    return get_agent(tx, scope, agent.id)


def update_agent(tx: Tx, scope: Scope, agent_id: str, *, display_name: str | None = None,
                 config: dict[str, Any] | None = None) -> Agent:
    agent = get_agent(tx, scope, agent_id)
    name = require_text(display_name, field="display_name", max_length=200) if display_name is not None \
        else agent.display_name
    tx.execute(_UPDATE, {"tenant_id": scope.tenant_id, "id": agent.id, "display_name": name,
                         "config": dump_json(config if config is not None else agent.config, field="config"),
                         "now": now()})
    _changed(tx, "updated", scope, agent.id, agent.agent_key)
    return get_agent(tx, scope, agent.id)


def archive_agent(tx: Tx, scope: Scope, agent_id: str) -> None:
    """Soft-delete: the row stays (with its history) but is not found, and its key is free at once."""
    agent = get_agent(tx, scope, agent_id)
    tx.execute(_ARCHIVE, {"tenant_id": scope.tenant_id, "id": agent.id, "now": now()})
    _changed(tx, "archived", scope, agent.id, agent.agent_key)


def delete_agent(tx: Tx, scope: Scope, agent_id: str) -> None:
    """Delete the agent and everything it owns; always succeeds for an agent of the tenant.

    Foreign keys cascade to owned rows (documents, memory, links both ways, memberships, MCP servers,
    cron jobs, grants) and set nullable references to NULL (team leadership, tasks and attachments it
    created); the references without an FK are cleared here: the organization's default agent, and the
    agent ID in telemetry rows (kept, anonymised, for usage history).
    """
    agent_id = parse_id(agent_id, "agent")
    row = tx.one(_KEY_OF_ANY, {"tenant_id": scope.tenant_id, "id": agent_id})
    if row is None:
        raise NotFoundError("agent", agent_id)
    tx.execute(_CLEAR_DEFAULT, {"tenant_id": scope.tenant_id, "id": agent_id})
    for statement in _FORGET_IN_TELEMETRY:
        tx.execute(statement, {"id": agent_id})
    tx.execute(_DELETE, {"tenant_id": scope.tenant_id, "id": agent_id})
    _changed(tx, "deleted", scope, agent_id, row[0])
