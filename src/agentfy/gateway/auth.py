"""Authentication: API keys decide the principal; signed contexts carry it across a reconnect.

* ``Authorization: Bearer <key>``.  An organization key (``agfy_ok_…``) gives that organization's tenant,
  the key's role and its acting user; a team key (``agfy_tk_…``) gives the team's tenant with the
  ``member`` role.  The tenant is never taken from a request body, query or header.  A platform-admin key
  (a key of the platform organization marked ``platform_admin``) may manage organizations.  Keys are
  looked up on every request, so revoking one takes effect on the next request.
* Signed contexts: short-lived HMAC-SHA256 tokens carrying the tenant, the actor and the role (for a
  WebSocket reconnect, say), stamped with the platform's signing epoch; bumping the epoch
  (``bump_signing_epoch``) revokes every signed context at once.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from dataclasses import dataclass
from typing import Final

import sqlalchemy as sa

from agentfy.gateway.errors import ApiError
from agentfy.identity import OrgId, Scope
from agentfy.identity.context import RequestContext
from agentfy.store.changefeed import Change
from agentfy.store.db import Database, Tx
from agentfy.store.repos import api_keys, teams
from agentfy.store.schema import platform_settings

ROLE_RANK: Final = {"member": 0, "operator": 1, "admin": 2, "owner": 3}
SIGNED_CONTEXT_PREFIX: Final = "agfy_sc_"
_EPOCH: Final = sa.select(platform_settings.c.value).where(platform_settings.c.name == "signing_epoch")
_SET_EPOCH_SQLITE_PG: Final = ("INSERT INTO platform_settings (name, value) VALUES ('signing_epoch', :value) "
                               "ON CONFLICT (name) DO UPDATE SET value = excluded.value")


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a request acts as: decided by its credential only."""

    tenant_id: OrgId
    role: str
    user_id: str | None = None
    team_id: str | None = None
    platform_admin: bool = False
    key_id: str | None = None

    @property
    def scope(self) -> Scope:
        return Scope(self.tenant_id)

    def context(self) -> RequestContext:
        """The request context for this principal (HTTP: the user is both scope and actor)."""
        return RequestContext(tenant_id=self.tenant_id, user_id=self.user_id, role=self.role)

    def require_role(self, minimum: str) -> None:
        if ROLE_RANK[self.role] < ROLE_RANK[minimum]:
            raise ApiError(403, "forbidden", f"this needs the {minimum} role or higher; the key has {self.role}")

    def require_platform_admin(self) -> None:
        if not self.platform_admin:
            raise ApiError(403, "forbidden", "this needs a platform-admin key")


def unauthorized(message: str = "a valid API key is required: Authorization: Bearer <key>") -> ApiError:
    return ApiError(401, "unauthorized", message)


def principal_from_key(tx: Tx, key: str) -> Principal:
    """The principal of an API key or signed context, or 401."""
    if key.startswith(teams.TEAM_API_KEY_PREFIX):
        team_key = teams.find_team_api_key(tx, key)
        if team_key is None:
            raise unauthorized("the API key is unknown or revoked")
        return Principal(OrgId(team_key.tenant_id), "member", team_id=team_key.team_id, key_id=team_key.id)
    found = api_keys.find_api_key(tx, key)
    if found is None:
        raise unauthorized("the API key is unknown or revoked")
    return Principal(found.tenant_id, found.role, found.user_id, platform_admin=found.platform_admin,
                     key_id=found.id)


def bearer(header: str | None) -> str:
    if not header or not header.startswith("Bearer ") or len(header) < 8:
        raise unauthorized()
    return header[7:].strip()


# -- signed contexts ------------------------------------------------------------------------------------------
def signing_epoch(tx: Tx) -> int:
    value = tx.scalar(_EPOCH)
    return int(value) if value is not None else 0


def bump_signing_epoch(db: Database) -> int:
    """Revoke every signed context issued so far; returns the new epoch."""
    with db.transaction() as tx:
        epoch = signing_epoch(tx) + 1
        tx.execute(_SET_EPOCH_SQLITE_PG, {"value": str(epoch)})
        tx.record_change(Change("epoch", "bumped", None, None))
    return epoch


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def sign_context(tx: Tx, secret: bytes, principal: Principal, *, ttl_seconds: int = 300) -> str:
    """A token that :func:`verify_context` turns back into ``principal`` until it expires or the epoch moves."""
    claims = {"t": principal.tenant_id, "r": principal.role, "u": principal.user_id, "m": principal.team_id,
              "e": signing_epoch(tx), "x": int(time.time()) + ttl_seconds}
    body = _b64(json.dumps(claims, separators=(",", ":"), sort_keys=True).encode("utf-8"))
    mac = _b64(hmac.new(secret, body.encode("ascii"), hashlib.sha256).digest())
    return f"{SIGNED_CONTEXT_PREFIX}{body}.{mac}"


def verify_context(tx: Tx, secret: bytes, token: str) -> Principal:
    """The principal of a signed context, or 401 (forged, expired, or from an older epoch)."""
    try:
        body, mac = token[len(SIGNED_CONTEXT_PREFIX):].split(".", 1)
        expected = _b64(hmac.new(secret, body.encode("ascii"), hashlib.sha256).digest())
        if not token.startswith(SIGNED_CONTEXT_PREFIX) or not hmac.compare_digest(mac, expected):
            raise ValueError("bad signature")
        claims = json.loads(_unb64(body))
    except (ValueError, UnicodeDecodeError) as error:
        raise unauthorized("the signed context is not valid") from error
    if claims.get("x", 0) < time.time():
        raise unauthorized("the signed context has expired")
    if claims.get("e") != signing_epoch(tx):
        raise unauthorized("the signed context was revoked")
    return Principal(OrgId(claims["t"]), claims["r"], claims.get("u"), team_id=claims.get("m"))
