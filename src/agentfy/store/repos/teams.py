"""Teams, their members and their API keys.

Teams have an ID only (no key or slug: nothing displays or addresses a team by name, so there is no second
identity to keep apart from the first).  Members are referenced by agent ID; the
gateway resolves an ``agent_key`` to the ID before calling.  Every referenced agent must belong to the
scope's tenant: the foreign key only proves the agent exists *somewhere*, so each write checks the tenant
first, and an agent of another tenant is "not found" like a missing one.

API keys are shown once: the plaintext is returned by :func:`create_team_api_key` and only its SHA-256 and a
short visible prefix are stored.  A plain (unsalted, fast) hash is enough because the key carries 256 bits
of randomness; there is nothing to brute-force, and a deterministic hash is what makes the key findable.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import sqlalchemy as sa

from agentfy.identity import AgentId, OrgId, Scope, TeamApiKeyId, TeamId, TeamMemberId, parse_id
from agentfy.store.changefeed import Change
from agentfy.store.db import Tx, now
from agentfy.store.errors import ConflictError, NotFoundError, UniqueViolation
from agentfy.store.paging import Keyset
from agentfy.store.repos import agents
from agentfy.store.repos._common import require_text
from agentfy.store.schema import team_api_keys, team_members, teams
from agentfy.store.sql import insert_returning_id

#: Every team API key starts with this, so a leaked key is recognisable (secret scanners, logs).
TEAM_API_KEY_PREFIX: Final = "agfy_tk_"
#: How many characters of the random part the stored, displayed prefix keeps.
TEAM_API_KEY_VISIBLE_CHARS: Final = 8
_TEAM_API_KEY_MAX_LENGTH: Final = 200

_IN_TENANT: Final = teams.c.tenant_id == sa.bindparam("tenant_id")
_TEAM_COLUMNS: Final = (teams.c.id, teams.c.tenant_id, teams.c.name, teams.c.lead_agent_id, teams.c.created_at)
_INSERT_TEAM: Final = insert_returning_id(teams, ["tenant_id", "name", "lead_agent_id", "created_at"])
_TEAM_BY_ID: Final = sa.select(*_TEAM_COLUMNS).where(_IN_TENANT, teams.c.id == sa.bindparam("team_id"))
TEAM_PAGES: Final[Keyset[Team]] = Keyset(sa.select(*_TEAM_COLUMNS).where(_IN_TENANT), (teams.c.name, teams.c.id),
                                           lambda t: (t.name, t.id))
_DELETE_TEAM: Final = sa.delete(teams).where(_IN_TENANT, teams.c.id == sa.bindparam("team_id"))
_SET_LEAD: Final = (sa.update(teams).where(_IN_TENANT, teams.c.id == sa.bindparam("team_id"))
                    .values(lead_agent_id=sa.bindparam("lead_agent_id")))

_MEMBER_IN_TENANT: Final = team_members.c.tenant_id == sa.bindparam("tenant_id")
_MEMBER_COLUMNS: Final = (team_members.c.id, team_members.c.team_id, team_members.c.agent_id, team_members.c.role,
                          team_members.c.created_at)
_INSERT_MEMBER: Final = insert_returning_id(team_members, ["tenant_id", "team_id", "agent_id", "role", "created_at"])
MEMBER_PAGES: Final[Keyset[TeamMember]] = Keyset(
    sa.select(*_MEMBER_COLUMNS).where(_MEMBER_IN_TENANT, team_members.c.team_id == sa.bindparam("team_id")),
    (team_members.c.created_at, team_members.c.id),
    lambda m: (m.created_at, m.id))
_DELETE_MEMBER: Final = sa.delete(team_members).where(_MEMBER_IN_TENANT,
                                                      team_members.c.team_id == sa.bindparam("team_id"),
                                                      team_members.c.agent_id == sa.bindparam("agent_id"))

_KEY_IN_TENANT: Final = team_api_keys.c.tenant_id == sa.bindparam("tenant_id")
_KEY_COLUMNS: Final = (team_api_keys.c.id, team_api_keys.c.tenant_id, team_api_keys.c.team_id, team_api_keys.c.name,
                       team_api_keys.c.key_prefix, team_api_keys.c.created_at, team_api_keys.c.revoked_at)
_INSERT_KEY: Final = insert_returning_id(team_api_keys, ["tenant_id", "team_id", "name", "key_prefix", "key_hash",
                                                         "created_at"])
_KEY_BY_ID: Final = sa.select(*_KEY_COLUMNS).where(_KEY_IN_TENANT, team_api_keys.c.id == sa.bindparam("key_id"))
KEY_PAGES: Final[Keyset[TeamApiKey]] = Keyset(
    sa.select(*_KEY_COLUMNS).where(_KEY_IN_TENANT, team_api_keys.c.team_id == sa.bindparam("team_id")),
    (team_api_keys.c.created_at, team_api_keys.c.id),
    lambda k: (k.created_at, k.id))
# Not tenant-scoped on purpose: see find_team_api_key.
_KEY_BY_HASH: Final = sa.select(*_KEY_COLUMNS).where(team_api_keys.c.key_hash == sa.bindparam("key_hash"),
                                                     team_api_keys.c.revoked_at.is_(None))
_LIVE_KEY_BY_ID: Final = sa.select(*_KEY_COLUMNS).where(team_api_keys.c.id == sa.bindparam("key_id"),
                                                        team_api_keys.c.revoked_at.is_(None))
# COALESCE keeps the first revocation time: revoking twice changes nothing.
_REVOKE_KEY: Final = (sa.update(team_api_keys).where(_KEY_IN_TENANT, team_api_keys.c.id == sa.bindparam("key_id"))
                      .values(revoked_at=sa.func.coalesce(team_api_keys.c.revoked_at, sa.bindparam("now"))))


@dataclass(frozen=True, slots=True)
class Team:
    id: TeamId
    tenant_id: OrgId
    name: str
    lead_agent_id: AgentId | None
    created_at: str


@dataclass(frozen=True, slots=True)
class TeamMember:
    id: TeamMemberId
    team_id: TeamId
    agent_id: AgentId
    role: str
    created_at: str


@dataclass(frozen=True, slots=True)
class TeamApiKey:
    """A team API key as stored: no secret, only the visible prefix.  ``tenant_id`` lets the gateway build
    the request's :class:`Scope` after :func:`find_team_api_key`."""

    id: TeamApiKeyId
    tenant_id: OrgId
    team_id: TeamId
    name: str
    key_prefix: str
    created_at: str
    revoked_at: str | None


@dataclass(frozen=True, slots=True)
class IssuedTeamApiKey:
    """A freshly created key: the record and the plaintext ``key``, which exists only here (not in repr)."""

    api_key: TeamApiKey
    key: str = field(repr=False)


def _team(row: tuple[Any, ...]) -> Team:
    return Team(TeamId(row[0]), OrgId(row[1]), row[2], None if row[3] is None else AgentId(row[3]), row[4])


def _member(row: tuple[Any, ...]) -> TeamMember:
    return TeamMember(TeamMemberId(row[0]), TeamId(row[1]), AgentId(row[2]), row[3], row[4])


def _api_key(row: tuple[Any, ...]) -> TeamApiKey:
    return TeamApiKey(TeamApiKeyId(row[0]), OrgId(row[1]), TeamId(row[2]), row[3], row[4], row[5], row[6])


def _name(value: object) -> str:
    return require_text(value, field="name", max_length=200)


def _require_team(tx: Tx, scope: Scope, team_id: str) -> Team:
    row = tx.one(_TEAM_BY_ID, {"tenant_id": scope.tenant_id, "team_id": team_id})
    if row is None:
        raise NotFoundError("team", team_id)
    return _team(row)


def hash_team_api_key(key: str) -> str:
    """The stored form of a key: SHA-256, lower-case hex."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


# -- teams ------------------------------------------------------------------------------------------------
def create_team(tx: Tx, scope: Scope, *, name: str, lead_agent_id: str | None = None) -> Team:
    """A new team, optionally led by an agent of the tenant (the lead is not made a member implicitly)."""
    lead = None if lead_agent_id is None else parse_id(lead_agent_id, "agent", field="lead_agent_id")
    team_name = _name(name)
    if lead is not None:
        agents.get_agent(tx, scope, lead)
    stamp = now()
    team_id = tx.insert_minted("team", _INSERT_TEAM, {"tenant_id": scope.tenant_id, "name": team_name,
                                                      "lead_agent_id": lead, "created_at": stamp})
    tx.record_change(Change("team", "created", scope.tenant_id, team_id))
    return Team(TeamId(team_id), scope.tenant_id, team_name, None if lead is None else AgentId(lead), stamp)


def get_team(tx: Tx, scope: Scope, team_id: str) -> Team:
    """The team with this ID in the scope's tenant, or :class:`NotFoundError`."""
    return _require_team(tx, scope, parse_id(team_id, "team"))


def list_teams(tx: Tx, scope: Scope, *, after: Sequence[Any] | None = None, limit: int | None = None) -> list[Team]:
    """The tenant's teams by name (all, or a page)."""
    return TEAM_PAGES.fetch(tx, {"tenant_id": scope.tenant_id}, _team, after=after, limit=limit)


def set_lead(tx: Tx, scope: Scope, team_id: str, agent_id: str | None) -> Team:
    """Make an agent of the tenant the team's lead (``None``: no lead)."""
    team_id = parse_id(team_id, "team")
    lead = None if agent_id is None else parse_id(agent_id, "agent")
    team = _require_team(tx, scope, team_id)
    if lead is not None:
        agents.get_agent(tx, scope, lead)
    tx.execute(_SET_LEAD, {"tenant_id": scope.tenant_id, "team_id": team.id, "lead_agent_id": lead})
    tx.record_change(Change("team", "updated", scope.tenant_id, team.id))
    return Team(team.id, team.tenant_id, team.name, None if lead is None else AgentId(lead), team.created_at)


def delete_team(tx: Tx, scope: Scope, team_id: str) -> None:
    """Delete the team with its members, tasks (and their attachments) and API keys; never its agents."""
    team_id = parse_id(team_id, "team")
    if tx.execute(_DELETE_TEAM, {"tenant_id": scope.tenant_id, "team_id": team_id}).rowcount == 0:
        raise NotFoundError("team", team_id)
    tx.record_change(Change("team", "deleted", scope.tenant_id, team_id))


# -- members ----------------------------------------------------------------------------------------------
def add_member(tx: Tx, scope: Scope, team_id: str, agent_id: str, *, role: str = "member") -> TeamMember:
    """Add an agent of the tenant to the team; an agent already in it is a conflict."""
    team_id = parse_id(team_id, "team")
    agent_id = parse_id(agent_id, "agent")
    member_role = require_text(role, field="role", max_length=50)
    _require_team(tx, scope, team_id)
    agents.get_agent(tx, scope, agent_id)
    stamp = now()
    try:
        member_id = tx.insert_minted("team-member", _INSERT_MEMBER, {
            "tenant_id": scope.tenant_id, "team_id": team_id, "agent_id": agent_id, "role": member_role,
            "created_at": stamp})
    except UniqueViolation as error:
        if "agent_id" in error.columns:
            raise ConflictError(f"agent_id {agent_id!r} is already a member of team {team_id}", field="agent_id",
                                value=agent_id) from None
        raise
    tx.record_change(Change("team", "updated", scope.tenant_id, team_id))
    return TeamMember(TeamMemberId(member_id), TeamId(team_id), AgentId(agent_id), member_role, stamp)


def remove_member(tx: Tx, scope: Scope, team_id: str, agent_id: str) -> None:
    """Remove the agent from the team; an agent that is not a member is :class:`NotFoundError`."""
    team_id = parse_id(team_id, "team")
    agent_id = parse_id(agent_id, "agent")
    params = {"tenant_id": scope.tenant_id, "team_id": team_id, "agent_id": agent_id}
    if tx.execute(_DELETE_MEMBER, params).rowcount == 0:
        _require_team(tx, scope, team_id)
        raise NotFoundError("team member", agent_id)
    tx.record_change(Change("team", "updated", scope.tenant_id, team_id))


def list_members(tx: Tx, scope: Scope, team_id: str,
                 *, after: Sequence[Any] | None = None, limit: int | None = None) -> list[TeamMember]:
    """The team's members in the order they joined; a team not in the tenant is :class:`NotFoundError` (all, or
    a page)."""
    team = get_team(tx, scope, team_id)
    return MEMBER_PAGES.fetch(tx, {"tenant_id": scope.tenant_id, "team_id": team.id}, _member, after=after,
                              limit=limit)


# -- API keys ---------------------------------------------------------------------------------------------
def create_team_api_key(tx: Tx, scope: Scope, team_id: str, *, name: str) -> IssuedTeamApiKey:
    """Issue a key for the team.  The plaintext is in the result only; it cannot be recovered later."""
    team_id = parse_id(team_id, "team")
    key_name = _name(name)
    _require_team(tx, scope, team_id)
    random_part = secrets.token_urlsafe(32)
    key = TEAM_API_KEY_PREFIX + random_part
    visible = TEAM_API_KEY_PREFIX + random_part[:TEAM_API_KEY_VISIBLE_CHARS]
    stamp = now()
    key_id = tx.insert_minted("team-api-key", _INSERT_KEY, {
        "tenant_id": scope.tenant_id, "team_id": team_id, "name": key_name, "key_prefix": visible,
        "key_hash": hash_team_api_key(key), "created_at": stamp})
    record = TeamApiKey(TeamApiKeyId(key_id), scope.tenant_id, TeamId(team_id), key_name, visible, stamp, None)
    return IssuedTeamApiKey(record, key)


def find_team_api_key(tx: Tx, key: str) -> TeamApiKey | None:
    """The live (not revoked) key matching ``key``, or ``None``.

    Not tenant-scoped, deliberately: this is how a request presenting a team key is *authenticated*, before
    any tenant is known; the key itself is the credential, and the record's ``tenant_id`` and ``team_id``
    become the request's scope.  It reveals nothing without the full key, and a value that cannot be a key
    is refused without a query.
    """
    if (not isinstance(key, str) or not key.startswith(TEAM_API_KEY_PREFIX)
            or len(key) > _TEAM_API_KEY_MAX_LENGTH):
        return None
    row = tx.one(_KEY_BY_HASH, {"key_hash": hash_team_api_key(key)})
    return None if row is None else _api_key(row)


def live_team_api_key(tx: Tx, key_id: str) -> TeamApiKey | None:
    """The team key with this ID if it is not revoked (a signed context names the key that signed it).  Not
    tenant-scoped, like :func:`find_team_api_key`: it runs while a credential is checked."""
    row = tx.one(_LIVE_KEY_BY_ID, {"key_id": key_id})
    return None if row is None else _api_key(row)


def list_team_api_keys(tx: Tx, scope: Scope, team_id: str,
                       *, after: Sequence[Any] | None = None, limit: int | None = None) -> list[TeamApiKey]:
    """The team's keys, revoked ones included (``revoked_at`` says which); all, or a page."""
    team = get_team(tx, scope, team_id)
    return KEY_PAGES.fetch(tx, {"tenant_id": scope.tenant_id, "team_id": team.id}, _api_key, after=after,
                           limit=limit)


def revoke_team_api_key(tx: Tx, scope: Scope, key_id: str) -> TeamApiKey:
    """Revoke the key at once (it is no longer found); revoking it again keeps the first time."""
    key_id = parse_id(key_id, "team-api-key", field="key_id")
    params = {"tenant_id": scope.tenant_id, "key_id": key_id}
    if tx.execute(_REVOKE_KEY, {**params, "now": now()}).rowcount == 0:
        raise NotFoundError("team API key", key_id)
    tx.record_change(Change("team_key", "revoked", scope.tenant_id, key_id))
    row = tx.one(_KEY_BY_ID, params)
    if row is None:  # cannot happen: updated just above, in this transaction
        raise NotFoundError("team API key", key_id)
    return _api_key(row)
