"""Organizations (the tenants), users and memberships.

Creating and listing organizations is platform administration: those functions take no tenant scope
because they act *on* tenants; the gateway lets only a platform-admin key reach them.  Everything that
acts *inside* an organization takes its ``Scope``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import sqlalchemy as sa

from agentfy.identity import OrgId, OrgMemberId, Scope, UserId, parse_id
from agentfy.identity.keys import tenant_slug_problem
from agentfy.store.changefeed import Change
from agentfy.store.db import Tx, now
from agentfy.store.errors import ConflictError, InvalidInputError, NotFoundError, UniqueViolation
from agentfy.store.paging import Keyset
from agentfy.store.repos import api_keys
from agentfy.store.repos._common import dump_json, load_json, require_role, require_text
from agentfy.store.schema import (
    event_outbox,
    org_members,
    organizations,
    spans,
    traces,
    usage_snapshots,
    users,
)
from agentfy.store.sql import insert, insert_returning_id

#: The platform organization: its ID is a constant, so every environment agrees on it.
PLATFORM_ORG_ID: Final = OrgId("org-silver-days-zxy8s9bpp6hp")
PLATFORM_ORG_SLUG: Final = "platform"

_ORG_COLUMNS: Final = (organizations.c.id, organizations.c.slug, organizations.c.name,
                       organizations.c.default_agent_id, organizations.c.settings, organizations.c.created_at)
_INSERT_ORG: Final = insert_returning_id(organizations, ["slug", "name", "settings", "created_at"])
_INSERT_ORG_WITH_ID: Final = insert(organizations, ["id", "slug", "name", "settings", "created_at"])
_ORG_BY_ID: Final = sa.select(*_ORG_COLUMNS).where(organizations.c.id == sa.bindparam("id"))
_ORG_BY_SLUG: Final = sa.select(*_ORG_COLUMNS).where(organizations.c.slug == sa.bindparam("slug"))
ORG_PAGES: Final[Keyset[Organization]] = Keyset(sa.select(*_ORG_COLUMNS), (organizations.c.slug,),
                                                  lambda o: (o.slug,))
_DELETE_ORG: Final = sa.delete(organizations).where(organizations.c.id == sa.bindparam("id"))
# Telemetry has no FK (volume); a deleted tenant's telemetry goes with it.  The audit log stays: history.
_DELETE_TELEMETRY: Final = tuple(sa.delete(table).where(table.c.tenant_id == sa.bindparam("id"))
                                 for table in (spans, traces, usage_snapshots, event_outbox))
_SET_DEFAULT_AGENT: Final = (sa.update(organizations).where(organizations.c.id == sa.bindparam("id"))
                             .values(default_agent_id=sa.bindparam("agent_id")))

_INSERT_USER: Final = insert_returning_id(users, ["email", "display_name", "created_at"])
_USER_BY_ID: Final = sa.select(users.c.id, users.c.email, users.c.display_name).where(users.c.id == sa.bindparam("id"))
_INSERT_MEMBER: Final = insert_returning_id(org_members, ["org_id", "user_id", "role", "created_at"])
_MEMBER_ROLE: Final = sa.select(org_members.c.id, org_members.c.role).where(
    org_members.c.org_id == sa.bindparam("tenant_id"), org_members.c.user_id == sa.bindparam("user_id"))
MEMBER_PAGES: Final[Keyset[Member]] = Keyset(
    sa.select(org_members.c.id, org_members.c.user_id, org_members.c.role)
    .where(org_members.c.org_id == sa.bindparam("tenant_id")), (org_members.c.user_id,), lambda m: (m.user_id,))
_DELETE_MEMBER: Final = sa.delete(org_members).where(org_members.c.org_id == sa.bindparam("tenant_id"),
                                                     org_members.c.user_id == sa.bindparam("user_id"))
# The owners' memberships, locked (PostgreSQL) so two removals or demotions cannot both see "another owner
# is left" and leave none; SQLite writers are serialised by BEGIN IMMEDIATE already.
_OWNERS_FOR_UPDATE: Final = (sa.select(org_members.c.user_id)
                             .where(org_members.c.org_id == sa.bindparam("tenant_id"), org_members.c.role == "owner")
                             .with_for_update())
_SET_MEMBER_ROLE: Final = (sa.update(org_members).where(org_members.c.org_id == sa.bindparam("tenant_id"),
                                                        org_members.c.user_id == sa.bindparam("user_id"))
                           .values(role=sa.bindparam("role")))
# The agent lives in the tenant: checked before it becomes the default (the column has no FK).
_AGENT_IN_TENANT: Final = sa.text("SELECT 1 FROM agents WHERE id = :agent_id AND tenant_id = :tenant_id "
                                  "AND deleted_at IS NULL")


@dataclass(frozen=True, slots=True)
class Organization:
    id: OrgId
    slug: str
    name: str
    default_agent_id: str | None
    settings: dict[str, Any]
    created_at: str


@dataclass(frozen=True, slots=True)
class User:
    id: UserId
    email: str | None
    display_name: str


@dataclass(frozen=True, slots=True)
class Member:
    id: OrgMemberId
    user_id: UserId
    role: str


def _org(row: tuple[Any, ...]) -> Organization:
    return Organization(OrgId(row[0]), row[1], row[2], row[3], load_json(row[4]), row[5])


def parse_slug(value: object) -> str:
    """An organization slug: a lower-case slug of at most 63 characters that never has the shape of an ID
    (a slug is display, URL and path material; mistaking one for an ID, or the reverse, must be impossible)."""
    problem = tenant_slug_problem(value)
    if problem is not None:
        shown = value if isinstance(value, str) else type(value).__name__
        raise InvalidInputError(f"slug {shown!r} {problem}", field="slug", value=value)
    return str(value)


def _slug_conflict(slug: str) -> ConflictError:
    return ConflictError(f"slug {slug!r} is already used by another organization", field="slug", value=slug)


# -- platform administration (acts on tenants) ------------------------------------------------------------
def create_organization(tx: Tx, *, slug: str, name: str, settings: dict[str, Any] | None = None) -> Organization:
    """A new tenant under a freshly minted ``org-…`` ID; a duplicate slug is a conflict."""
    values = {"slug": parse_slug(slug), "name": require_text(name, field="name", max_length=200),
              "settings": dump_json(settings, field="settings"), "created_at": now()}
    try:
        org_id = tx.insert_minted("org", _INSERT_ORG, values)
    except UniqueViolation:
        raise _slug_conflict(values["slug"]) from None
    return Organization(OrgId(org_id), values["slug"], values["name"], None, settings or {}, values["created_at"])


def ensure_platform_organization(tx: Tx) -> tuple[Organization, bool]:
    """The platform organization ``org-silver-days-zxy8s9bpp6hp``, created if missing; ``(org, created)``."""
    row = tx.one(_ORG_BY_ID, {"id": PLATFORM_ORG_ID})
    if row is not None:
        return _org(row), False
    stamp = now()
    try:
        tx.execute(_INSERT_ORG_WITH_ID, {"id": PLATFORM_ORG_ID, "slug": PLATFORM_ORG_SLUG, "name": "Platform",
                                         "settings": "{}", "created_at": stamp})
    except UniqueViolation:
        raise ConflictError(f"another organization already has the slug {PLATFORM_ORG_SLUG!r}; the platform "
                            "organization cannot be created", field="slug", value=PLATFORM_ORG_SLUG) from None
    return Organization(PLATFORM_ORG_ID, PLATFORM_ORG_SLUG, "Platform", None, {}, stamp), True


def list_organizations(tx: Tx, *, after: Sequence[Any] | None = None, limit: int | None = None) -> list[Organization]:
    """Every organization by slug (all, or a page: see ``store.paging``)."""
    return ORG_PAGES.fetch(tx, {}, _org, after=after, limit=limit)


def get_organization_by_slug(tx: Tx, slug: str) -> Organization:
    """The organization with ``slug`` (operators name organizations by slug: ``agentfy chat --org``)."""
    row = tx.one(_ORG_BY_SLUG, {"slug": slug})
    if row is None:
        raise NotFoundError("organization", slug)
    return _org(row)


def delete_organization(tx: Tx, org_id: str) -> None:
    """Delete a tenant and everything it owns (every tenant table cascades; telemetry and the tenant's
    events in the outbox, which have no FK, are deleted with it);
    always succeeds.  The audit log keeps its rows: it is history, and records IDs as they were."""
    org_id = parse_id(org_id, "org")
    if tx.execute(_DELETE_ORG, {"id": org_id}).rowcount == 0:
        raise NotFoundError("organization", org_id)
    for statement in _DELETE_TELEMETRY:
        tx.execute(statement, {"id": org_id})
    tx.record_change(Change("org", "deleted", org_id, org_id))


# -- inside a tenant ---------------------------------------------------------------------------------------
def get_organization(tx: Tx, scope: Scope) -> Organization:
    """The scope's own organization."""
    row = tx.one(_ORG_BY_ID, {"id": scope.tenant_id})
    if row is None:
        raise NotFoundError("organization", scope.tenant_id)
    return _org(row)


def set_default_agent(tx: Tx, scope: Scope, agent_id: str | None) -> None:
    """Make an agent of the tenant its default (``None`` clears it)."""
    if agent_id is not None:
        agent_id = parse_id(agent_id, "agent")
        if tx.one(_AGENT_IN_TENANT, {"agent_id": agent_id, "tenant_id": scope.tenant_id}) is None:
            raise NotFoundError("agent", agent_id)
    tx.execute(_SET_DEFAULT_AGENT, {"id": scope.tenant_id, "agent_id": agent_id})
    tx.record_change(Change("org", "updated", scope.tenant_id, scope.tenant_id))


def create_user(tx: Tx, *, display_name: str, email: str | None = None) -> User:
    """A person who can be a member of organizations (users are global; membership is per tenant)."""
    name = require_text(display_name, field="display_name", max_length=200)
    values = {"email": email, "display_name": name, "created_at": now()}
    try:
        user_id = tx.insert_minted("user", _INSERT_USER, values)
    except UniqueViolation:
        raise ConflictError(f"email {email!r} is already registered", field="email", value=email) from None
    return User(UserId(user_id), email, name)


def add_member(tx: Tx, scope: Scope, user_id: str, role: str) -> Member:
    """Make a user a member of the scope's organization with ``role`` (owner, admin, operator, member)."""
    user_id = parse_id(user_id, "user")
    if tx.one(_USER_BY_ID, {"id": user_id}) is None:
        raise NotFoundError("user", user_id)
    values = {"org_id": scope.tenant_id, "user_id": user_id, "role": require_role(role), "created_at": now()}
    try:
        member_id = tx.insert_minted("org-member", _INSERT_MEMBER, values)
    except UniqueViolation:
        raise ConflictError(f"user {user_id!r} is already a member", field="user_id", value=user_id) from None
    tx.record_change(Change("member", "added", scope.tenant_id, user_id))
    return Member(OrgMemberId(member_id), UserId(user_id), values["role"])


def member_role(tx: Tx, scope: Scope, user_id: str) -> str | None:
    """The user's role in the scope's organization, or ``None`` if not a member."""
    row = tx.one(_MEMBER_ROLE, {"tenant_id": scope.tenant_id, "user_id": parse_id(user_id, "user")})
    return None if row is None else str(row[1])


def list_members(tx: Tx, scope: Scope, *, after: Sequence[Any] | None = None, limit: int | None = None) -> list[Member]:
    """The organization's members by user ID (all, or a page)."""
    return MEMBER_PAGES.fetch(tx, {"tenant_id": scope.tenant_id},
                              lambda r: Member(OrgMemberId(r[0]), UserId(r[1]), r[2]), after=after, limit=limit)


def _refuse_losing_the_last_owner(tx: Tx, scope: Scope, user_id: str, what: str) -> None:
    owners = {row[0] for row in tx.all(_OWNERS_FOR_UPDATE, {"tenant_id": scope.tenant_id})}
    if owners == {user_id}:
        raise ConflictError(f"{user_id} is the organization's last owner and cannot {what}: make another member "
                            "owner first", field="user_id", value=user_id)


def remove_member(tx: Tx, scope: Scope, user_id: str) -> None:
    """Remove a member; every API key acting as them in this organization is revoked in the same transaction.
    The last owner cannot leave (:class:`ConflictError`): nobody could manage the organization after."""
    user_id = parse_id(user_id, "user")
    role = member_role(tx, scope, user_id)
    if role is None:
        raise NotFoundError("member", user_id)
    if role == "owner":
        _refuse_losing_the_last_owner(tx, scope, user_id, "leave")
    tx.execute(_DELETE_MEMBER, {"tenant_id": scope.tenant_id, "user_id": user_id})
    api_keys.revoke_keys_of_user(tx, scope, user_id)
    tx.record_change(Change("member", "removed", scope.tenant_id, user_id))


def set_member_role(tx: Tx, scope: Scope, user_id: str, role: str) -> Member:
    """Change a member's role.  A demotion narrows every API key acting as them to the new role, in the same
    transaction; the last owner cannot be demoted (:class:`ConflictError`)."""
    user_id = parse_id(user_id, "user")
    new_role = require_role(role)
    row = tx.one(_MEMBER_ROLE, {"tenant_id": scope.tenant_id, "user_id": user_id})
    if row is None:
        raise NotFoundError("member", user_id)
    if row[1] == "owner" and new_role != "owner":
        _refuse_losing_the_last_owner(tx, scope, user_id, "be demoted")
    tx.execute(_SET_MEMBER_ROLE, {"tenant_id": scope.tenant_id, "user_id": user_id, "role": new_role})
    api_keys.narrow_keys_of_user(tx, scope, user_id, new_role)
    tx.record_change(Change("member", "role_changed", scope.tenant_id, user_id))
    return Member(OrgMemberId(row[0]), UserId(user_id), new_role)
