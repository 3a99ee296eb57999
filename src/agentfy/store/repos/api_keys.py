"""Organization API keys: high-entropy bearer tokens, stored as a SHA-256 hash and a short visible prefix.

``create_api_key`` returns the plaintext key exactly once.  ``find_api_key`` is a look-up by credential,
not by tenant: it runs before any tenant is known, and the key's own tenant becomes the request's scope.
A revoked key is never found, so revocation takes effect on the next request.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass, field
from typing import Any, Final

import sqlalchemy as sa

from agentfy.identity import OrgId, Scope, parse_id
from agentfy.store.changefeed import Change
from agentfy.store.db import Tx, now
from agentfy.store.errors import InvalidInputError, NotFoundError
from agentfy.store.repos._common import require_text
from agentfy.store.schema import ROLES, api_keys
from agentfy.store.sql import insert_returning_id

KEY_PREFIX: Final = "agfy_ok_"
VISIBLE_CHARACTERS: Final = 16

_COLUMNS: Final = (api_keys.c.id, api_keys.c.tenant_id, api_keys.c.name, api_keys.c.role, api_keys.c.user_id,
                   api_keys.c.platform_admin, api_keys.c.key_prefix, api_keys.c.created_at, api_keys.c.revoked_at)
_INSERT: Final = insert_returning_id(api_keys, ["tenant_id", "name", "role", "user_id", "platform_admin",
                                                "key_prefix", "key_hash", "created_at"])
_BY_HASH: Final = sa.select(*_COLUMNS).where(api_keys.c.key_hash == sa.bindparam("hash"),
                                             api_keys.c.revoked_at.is_(None))
_LIST: Final = sa.select(*_COLUMNS).where(api_keys.c.tenant_id == sa.bindparam("tenant_id")).order_by(
    api_keys.c.created_at)
_REVOKE: Final = (sa.update(api_keys).where(api_keys.c.tenant_id == sa.bindparam("tenant_id"),
                                            api_keys.c.id == sa.bindparam("id"), api_keys.c.revoked_at.is_(None))
                  .values(revoked_at=sa.bindparam("now")))
_ANY_PLATFORM_KEY: Final = sa.select(api_keys.c.id).where(api_keys.c.platform_admin.is_(sa.true()),
                                                          api_keys.c.revoked_at.is_(None)).limit(1)


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


@dataclass(frozen=True, slots=True)
class IssuedApiKey:
    """A new key: ``key`` is shown once and never stored."""

    record: ApiKey
    key: str = field(repr=False)


def hash_api_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def _record(row: tuple[Any, ...]) -> ApiKey:
    return ApiKey(row[0], row[1], row[2], row[3], row[4], bool(row[5]), row[6], row[7], row[8])


def create_api_key(tx: Tx, scope: Scope, *, name: str, role: str, user_id: str | None = None,
                   platform_admin: bool = False, key: str | None = None) -> IssuedApiKey:
    """A new key of the scope's organization with ``role``; ``key`` adopts a given plaintext (from the
    environment at first start) instead of generating one."""
    if role not in ROLES:
        raise InvalidInputError(f"role {role!r} is unknown; expected one of {', '.join(ROLES)}", field="role",
                                value=role)
    plaintext = key if key is not None else KEY_PREFIX + secrets.token_urlsafe(32)
    if len(plaintext) < 32:
        raise InvalidInputError("an API key must be at least 32 characters", field="key", value=None)
    label = require_text(name, field="name", max_length=200)
    user = parse_id(user_id, "user") if user_id is not None else None
    stamp = now()
    values: dict[str, Any] = {"tenant_id": scope.tenant_id, "name": label, "role": role, "user_id": user,
                              "platform_admin": platform_admin, "key_prefix": plaintext[:VISIBLE_CHARACTERS],
                              "key_hash": hash_api_key(plaintext), "created_at": stamp}
    key_id = tx.insert_minted("api-key", _INSERT, values)
    record = ApiKey(key_id, scope.tenant_id, label, role, user, platform_admin, plaintext[:VISIBLE_CHARACTERS],
                    stamp, None)
    return IssuedApiKey(record, plaintext)


def find_api_key(tx: Tx, key: str) -> ApiKey | None:
    """The live key with this plaintext, or ``None`` (unknown or revoked)."""
    row = tx.one(_BY_HASH, {"hash": hash_api_key(key)})
    return None if row is None else _record(row)


def list_api_keys(tx: Tx, scope: Scope) -> list[ApiKey]:
    return [_record(row) for row in tx.all(_LIST, {"tenant_id": scope.tenant_id})]


def revoke_api_key(tx: Tx, scope: Scope, key_id: str) -> None:
    key_id = parse_id(key_id, "api-key")
    if tx.execute(_REVOKE, {"tenant_id": scope.tenant_id, "id": key_id, "now": now()}).rowcount == 0:
        raise NotFoundError("api key", key_id)
    tx.record_change(Change("api_key", "revoked", scope.tenant_id, key_id))


def platform_admin_key_exists(tx: Tx) -> bool:
    return tx.one(_ANY_PLATFORM_KEY) is not None
