"""Organization API keys: high-entropy bearer tokens, stored as a SHA-256 hash and a short visible prefix.

``create_api_key`` returns the plaintext key exactly once.  ``find_api_key`` and :func:`key_chain` are look-ups
by credential, not by tenant: they run before any tenant is known, and the key's own tenant becomes the
request's scope.  A key is good while it is not revoked, not expired, and — if it acts as a person — that
person is still a member; its role is then the lower of its own and the member's (:func:`KeyChain.verdict`).
Removing a member revokes their keys, demoting one narrows them, in the same transaction, so the stored
state agrees with what the chain check enforces.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.sql.dml import ReturningUpdate

from agentfy.identity import OrgId, Scope, parse_id
from agentfy.identity.roles import ROLES, role_rank
from agentfy.store.changefeed import Change
from agentfy.store.db import Tx, now
from agentfy.store.errors import ConflictError, InvalidInputError, NotFoundError
from agentfy.store.paging import Keyset
from agentfy.store.repos._common import require_role, require_text
from agentfy.store.schema import api_keys, org_members
from agentfy.store.sql import insert_returning_id

KEY_PREFIX: Final = "agfy_ok_"
VISIBLE_CHARACTERS: Final = 16

_COLUMNS: Final = (api_keys.c.id, api_keys.c.tenant_id, api_keys.c.name, api_keys.c.role, api_keys.c.user_id,
                   api_keys.c.platform_admin, api_keys.c.key_prefix, api_keys.c.created_at, api_keys.c.revoked_at,
                   api_keys.c.expires_at)
_INSERT: Final = insert_returning_id(api_keys, ["tenant_id", "name", "role", "user_id", "platform_admin",
                                                "key_prefix", "key_hash", "created_at", "expires_at"])
_LIVE: Final = sa.and_(api_keys.c.revoked_at.is_(None),
                       sa.or_(api_keys.c.expires_at.is_(None), api_keys.c.expires_at > sa.bindparam("now")))
_BY_HASH: Final = sa.select(*_COLUMNS).where(api_keys.c.key_hash == sa.bindparam("hash"), _LIVE)
_WITH_MEMBER: Final = api_keys.outerjoin(org_members, sa.and_(org_members.c.org_id == api_keys.c.tenant_id,
                                                              org_members.c.user_id == api_keys.c.user_id))
_CHAIN_BY_HASH: Final = (sa.select(*_COLUMNS, org_members.c.role).select_from(_WITH_MEMBER)
                         .where(api_keys.c.key_hash == sa.bindparam("hash")))
_CHAIN_BY_ID: Final = (sa.select(*_COLUMNS, org_members.c.role).select_from(_WITH_MEMBER)
                       .where(api_keys.c.id == sa.bindparam("id")))
_REVOKE_OF_USER: Final = (sa.update(api_keys).where(api_keys.c.tenant_id == sa.bindparam("tenant_id"),
                                                    api_keys.c.user_id == sa.bindparam("user_id"),
                                                    api_keys.c.revoked_at.is_(None))
                          .values(revoked_at=sa.bindparam("now")).returning(api_keys.c.id))
#: Per target role: lower every live key of a person whose role is above it to that role.
_NARROW_OF_USER: Final[Mapping[str, ReturningUpdate[tuple[str]]]] = {
    role: (sa.update(api_keys).where(api_keys.c.tenant_id == sa.bindparam("tenant_id"),
                                     api_keys.c.user_id == sa.bindparam("user_id"), api_keys.c.revoked_at.is_(None),
                                     sa.or_(*(api_keys.c.role == r for r in ROLES if role_rank(r) > role_rank(role))))
           .values(role=role).returning(api_keys.c.id))
    for role in ROLES if role != "owner"}
_LIVE_PLATFORM_ADMIN_KEYS: Final = sa.select(api_keys.c.id).where(api_keys.c.platform_admin.is_(sa.true()), _LIVE)
_LIVE_OWNER_KEYS: Final = sa.select(api_keys.c.id).where(api_keys.c.tenant_id == sa.bindparam("tenant_id"),
                                                         api_keys.c.role == "owner", _LIVE)
PAGES: Final[Keyset[ApiKey]] = Keyset(sa.select(*_COLUMNS).where(api_keys.c.tenant_id == sa.bindparam("tenant_id")),
                                        (api_keys.c.created_at, api_keys.c.id), lambda k: (k.created_at, k.id))
_REVOKE: Final = (sa.update(api_keys).where(api_keys.c.tenant_id == sa.bindparam("tenant_id"),
                                            api_keys.c.id == sa.bindparam("id"), api_keys.c.revoked_at.is_(None))
                  .values(revoked_at=sa.bindparam("now")))
_ANY_PLATFORM_KEY: Final = _LIVE_PLATFORM_ADMIN_KEYS.limit(1)


@dataclass(frozen=True, slots=True)
class ApiKey:
    id: str
    tenant_id: OrgId
    name: str
    role: str
    user_id: str | None
    platform_admin: bool
    key_prefix: str
    created_at: str
    revoked_at: str | None
    expires_at: str | None = None


@dataclass(frozen=True, slots=True)
class KeyChain:
    """A key with what its validity depends on: the role of the person it acts as in its organization (``None``
    if it acts as nobody, or the person is no longer a member)."""

    key: ApiKey
    member_role: str | None

    def verdict(self, at: str) -> tuple[str | None, str]:
        """``(role, reason)``: the role the key has now (the lower of its own and its member's), or ``None``
        and why it has none (revoked, expired, its person no longer a member)."""
        key = self.key
        if key.revoked_at is not None:
            return None, "the API key was revoked"
        if key.expires_at is not None and key.expires_at <= at:
            return None, "the API key has expired"
        if key.user_id is None:
            return key.role, ""
        if self.member_role is None:
            return None, "the person this API key acts as is no longer a member of its organization"
        return min(key.role, self.member_role, key=role_rank), ""


@dataclass(frozen=True, slots=True)
class IssuedApiKey:
    """A new key: ``key`` is shown once and never stored."""

    record: ApiKey
    key: str = field(repr=False)


def hash_api_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def _record(row: tuple[Any, ...]) -> ApiKey:
    return ApiKey(row[0], row[1], row[2], row[3], row[4], bool(row[5]), row[6], row[7], row[8], row[9])


def create_api_key(tx: Tx, scope: Scope, *, name: str, role: str, user_id: str | None = None,
                   platform_admin: bool = False, key: str | None = None,
                   expires_at: str | None = None) -> IssuedApiKey:
    """A new key of the scope's organization with ``role``; ``key`` adopts a given plaintext (from the
    environment at first start) instead of generating one; ``expires_at`` (the store's time format) ends it."""
    require_role(role)
    plaintext = key if key is not None else KEY_PREFIX + secrets.token_urlsafe(32)
    if len(plaintext) < 32:
        raise InvalidInputError("an API key must be at least 32 characters", field="key", value=None)
    label = require_text(name, field="name", max_length=200)
    user = parse_id(user_id, "user") if user_id is not None else None
    stamp = now()
    values: dict[str, Any] = {"tenant_id": scope.tenant_id, "name": label, "role": role, "user_id": user,
                              "platform_admin": platform_admin, "key_prefix": plaintext[:VISIBLE_CHARACTERS],
                              "key_hash": hash_api_key(plaintext), "created_at": stamp, "expires_at": expires_at}
    key_id = tx.insert_minted("api-key", _INSERT, values)
    record = ApiKey(key_id, scope.tenant_id, label, role, user, platform_admin, plaintext[:VISIBLE_CHARACTERS],
                    stamp, None, expires_at)
    return IssuedApiKey(record, plaintext)


def find_api_key(tx: Tx, key: str) -> ApiKey | None:
    """The live key with this plaintext, or ``None`` (unknown or revoked)."""
    row = tx.one(_BY_HASH, {"hash": hash_api_key(key), "now": now()})
    return None if row is None else _record(row)


def key_chain(tx: Tx, key: str) -> KeyChain | None:
    """The key with this plaintext — revoked and expired ones too, so the caller can say which — and its
    member's role; ``None`` for a value that is no key."""
    row = tx.one(_CHAIN_BY_HASH, {"hash": hash_api_key(key)})
    return None if row is None else KeyChain(_record(row), row[10])


def key_chain_by_id(tx: Tx, key_id: str) -> KeyChain | None:
    """:func:`key_chain` by the key's ID (a signed context names the key that signed it)."""
    row = tx.one(_CHAIN_BY_ID, {"id": key_id})
    return None if row is None else KeyChain(_record(row), row[10])


def list_api_keys(tx: Tx, scope: Scope,
                  *, after: Sequence[Any] | None = None, limit: int | None = None) -> list[ApiKey]:
    """The organization's keys, revoked ones too, oldest first (all, or a page)."""
    return PAGES.fetch(tx, {"tenant_id": scope.tenant_id}, _record, after=after, limit=limit)


def revoke_api_key(tx: Tx, scope: Scope, key_id: str) -> None:
    """Revoke a live key of the organization.  Refused (:class:`ConflictError`) when it is the platform's
    last live platform-admin key or its organization's last live owner key: either would lock them out."""
    key_id = parse_id(key_id, "api-key")
    stamp = now()
    platform_keys = {row[0] for row in tx.all(_LIVE_PLATFORM_ADMIN_KEYS, {"now": stamp})}
    if platform_keys == {key_id}:
        raise ConflictError("this is the last live platform-admin key: issue another first (agentfy admin "
                            "rotate-key), or the platform cannot be administered", field="key_id", value=key_id)
    owner_keys = {row[0] for row in tx.all(_LIVE_OWNER_KEYS, {"tenant_id": scope.tenant_id, "now": stamp})}
    if owner_keys == {key_id}:
        raise ConflictError("this is the organization's last live owner key: issue another owner key first, or "
                            "nobody could manage the organization's keys", field="key_id", value=key_id)
    if tx.execute(_REVOKE, {"tenant_id": scope.tenant_id, "id": key_id, "now": stamp}).rowcount == 0:
        raise NotFoundError("api key", key_id)
    tx.record_change(Change("api_key", "revoked", scope.tenant_id, key_id))


def revoke_keys_of_user(tx: Tx, scope: Scope, user_id: str) -> list[str]:
    """Revoke every live key of the organization that acts as ``user_id`` (they are leaving it)."""
    revoked = [str(row[0]) for row in tx.all(_REVOKE_OF_USER, {"tenant_id": scope.tenant_id, "user_id": user_id,
                                                                "now": now()})]
    for key_id in revoked:
        tx.record_change(Change("api_key", "revoked", scope.tenant_id, key_id))
    return revoked


def narrow_keys_of_user(tx: Tx, scope: Scope, user_id: str, role: str) -> list[str]:
    """Lower to ``role`` every live key acting as ``user_id`` whose role is above it (they were demoted)."""
    statement = _NARROW_OF_USER.get(role)
    if statement is None:  # nothing is above the owner role
        return []
    narrowed = [str(row[0]) for row in tx.all(statement, {"tenant_id": scope.tenant_id, "user_id": user_id})]
    for key_id in narrowed:
        tx.record_change(Change("api_key", "narrowed", scope.tenant_id, key_id))
    return narrowed


def platform_admin_key_exists(tx: Tx) -> bool:
    return tx.one(_ANY_PLATFORM_KEY, {"now": now()}) is not None


def live_platform_admin_keys(tx: Tx) -> list[str]:
    """The IDs of every live platform-admin key."""
    return [str(row[0]) for row in tx.all(_LIVE_PLATFORM_ADMIN_KEYS, {"now": now()})]
