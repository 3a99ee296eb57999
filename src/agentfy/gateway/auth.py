"""Authentication: a credential decides the principal, and is checked against its whole chain on every use.

* ``Authorization: Bearer <credential>`` (the scheme's case does not matter).  An organization key
  (``agfy_ok_…``) gives that organization's tenant, the key's role and its acting person; a team key
  (``agfy_tk_…``) gives the team's tenant with the ``member`` role, acting as nobody.  The tenant is never
  taken from a request body, query or header.  A platform-admin key (a key of the platform organization
  marked ``platform_admin``) may manage organizations.
* The chain of an API key: not revoked, not expired, and — if it acts as a person — that person still a
  member, the key's role then being the lower of its own and the member's (a demotion narrows at once).
* Signed contexts: short-lived HMAC-SHA256 tokens carrying the tenant, the actor, the role, the ID of the key
  that signed them, and the platform's signing epoch.  They are refused (401 ``revoked``) once that key is
  revoked, expired or narrowed below the context's role, its person is no longer a member, its organization
  is deleted, or the epoch is bumped (``bump_signing_epoch``: every signed context at once).  A signed
  context can never mint, revoke or manage credentials or members (``permissions.access``: ``api_key_only``).

Every check reads the database; :mod:`agentfy.gateway.principals` caches the outcome, and the change feed
drops the cached principal the moment a revocation, removal, demotion, deletion or epoch bump commits, in
every process.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from dataclasses import dataclass, field
from typing import Final

import sqlalchemy as sa

from agentfy.errors import ApiError
from agentfy.identity import OrgId, Scope
from agentfy.identity.context import RequestContext
from agentfy.identity.roles import is_role, role_rank
from agentfy.store.changefeed import Change
from agentfy.store.db import Database, Tx, now
from agentfy.store.repos import api_keys, teams
from agentfy.store.schema import platform_settings

__all__ = ["Principal"]

SIGNED_CONTEXT_PREFIX: Final = "agfy_sc_"
#: Longer than any credential this platform issues: a value over it is refused without a look-up.
CREDENTIAL_MAX_LENGTH: Final = 4096
_EPOCH: Final = sa.select(platform_settings.c.value).where(platform_settings.c.name == "signing_epoch")
_SET_EPOCH_SQLITE_PG: Final = ("INSERT INTO platform_settings (name, value) VALUES ('signing_epoch', :value) "
                               "ON CONFLICT (name) DO UPDATE SET value = excluded.value")


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a request acts as: decided by its credential only.

    ``key_id`` is the API key or team key the credential is — or, for a signed context, the key that signed
    it.  ``expires_at`` (seconds since the epoch) is when a signed context stops being valid.
    """

    tenant_id: OrgId
    role: str
    user_id: str | None = None
    team_id: str | None = None
    platform_admin: bool = False
    key_id: str | None = None
    signed_context: bool = False
    expires_at: float | None = None
    _context: RequestContext | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def scope(self) -> Scope:
        return Scope(self.tenant_id)

    def context(self) -> RequestContext:
        """The request context for this principal (HTTP: the user is both scope and actor); made once per
        principal (a cached one serves many requests, and the context is immutable)."""
        context = self._context
        if context is None:
            context = RequestContext(tenant_id=self.tenant_id, user_id=self.user_id, role=self.role)
            object.__setattr__(self, "_context", context)
        return context

    @property
    def credential(self) -> str:
        """``signed_context``, ``team_key`` or ``api_key``: what the request authenticated with."""
        if self.signed_context:
            return "signed_context"
        return "team_key" if self.team_id is not None else "api_key"


def unauthorized(message: str = "a valid API key is required: Authorization: Bearer <key>") -> ApiError:
    return ApiError(401, "unauthorized", message)


def revoked(message: str) -> ApiError:
    """A credential that was good and no longer is (revoked, expired, its member removed or demoted, its
    organization deleted, the signing epoch bumped)."""
    return ApiError(401, "revoked", message)


def bearer(header: str | None) -> str:
    """The credential of an ``Authorization`` header: ``Bearer`` in any case, one space or more, a value of
    printable ASCII.  Anything else — no header, another scheme, control characters, non-ASCII bytes that a
    client sent — is a 401, never an error of its own."""
    if not header:
        raise unauthorized()
    scheme, _, value = header.partition(" ")
    value = value.strip()
    if scheme.lower() != "bearer" or not value or len(value) > CREDENTIAL_MAX_LENGTH \
            or not value.isascii() or not value.isprintable():
        raise unauthorized()
    return value


def principal_from_key(tx: Tx, key: str) -> Principal:
    """The principal of an API key or team key, or 401 (unknown, revoked, expired, member gone)."""
    if key.startswith(teams.TEAM_API_KEY_PREFIX):
        team_key = teams.find_team_api_key(tx, key)
        if team_key is None:
            raise unauthorized("the API key is unknown or revoked")
        return Principal(OrgId(team_key.tenant_id), "member", team_id=team_key.team_id, key_id=team_key.id)
    chain = api_keys.key_chain(tx, key)
    if chain is None:
        raise unauthorized("the API key is unknown")
    role, reason = chain.verdict(now())
    if role is None:
        raise revoked(reason)
    found = chain.key
    return Principal(found.tenant_id, role, found.user_id, platform_admin=found.platform_admin, key_id=found.id)


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
    """A token that :func:`verify_context` turns back into ``principal`` until it expires, the epoch moves, or
    the key it names stops being good.  Only an API key or team key may sign (never a signed context)."""
    if principal.signed_context or principal.key_id is None:
        raise ApiError(403, "forbidden", "only an API key can sign a context; a signed context cannot renew itself")
    claims = {"t": principal.tenant_id, "r": principal.role, "u": principal.user_id, "m": principal.team_id,
              "k": principal.key_id, "e": signing_epoch(tx), "x": int(time.time()) + ttl_seconds}
    body = _b64(json.dumps(claims, separators=(",", ":"), sort_keys=True).encode("utf-8"))
    mac = _b64(hmac.new(secret, body.encode("ascii"), hashlib.sha256).digest())
    return f"{SIGNED_CONTEXT_PREFIX}{body}.{mac}"


def _claims(secret: bytes, token: str) -> dict[str, object]:
    try:
        body, mac = token[len(SIGNED_CONTEXT_PREFIX):].split(".", 1)
        expected = _b64(hmac.new(secret, body.encode("ascii"), hashlib.sha256).digest())
        # Bytes, not text: compare_digest raises TypeError on a str outside ASCII, and the token is the caller's.
        if not token.startswith(SIGNED_CONTEXT_PREFIX) or not hmac.compare_digest(
                mac.encode("utf-8", "surrogatepass"), expected.encode("ascii")):
            raise ValueError("bad signature")
        claims = json.loads(_unb64(body))
    except (ValueError, UnicodeError) as error:
        raise unauthorized("the signed context is not valid") from error
    if not isinstance(claims, dict):
        raise unauthorized("the signed context is not valid")
    return claims


def verify_context(tx: Tx, secret: bytes, token: str, *, allow_expired: bool = False) -> Principal:
    """The principal of a signed context, or 401: forged, expired, from an older epoch, or its chain broken.

    ``allow_expired``: for a WebSocket connection it already authenticated, whose expiry limited only when it
    could connect; the epoch and the chain are checked all the same."""
    claims = _claims(secret, token)
    expires, tenant, role, user, team, key_id = (claims.get(name) for name in ("x", "t", "r", "u", "m", "k"))
    if not isinstance(expires, int) or (expires < time.time() and not allow_expired):
        raise unauthorized("the signed context has expired")
    if claims.get("e") != signing_epoch(tx):
        raise revoked("the signed context was revoked (the signing epoch moved)")
    if not isinstance(tenant, str) or not is_role(role) or not isinstance(key_id, str):
        raise revoked("the signed context names no signing key: sign a new one")
    assert isinstance(role, str)
    if team is not None:
        team_key = teams.live_team_api_key(tx, key_id)
        if team_key is None or team_key.team_id != team or team_key.tenant_id != tenant:
            raise revoked("the team key that signed this context was revoked")
        return Principal(OrgId(tenant), role, None, team_id=str(team), key_id=key_id, signed_context=True,
                         expires_at=float(expires))
    chain = api_keys.key_chain_by_id(tx, key_id)
    if chain is None or chain.key.tenant_id != tenant or chain.key.user_id != user:
        raise revoked("the API key that signed this context no longer exists")
    current, reason = chain.verdict(now())
    if current is None:
        raise revoked(f"{reason}: the contexts it signed are revoked with it")
    if role_rank(current) < role_rank(role):
        raise revoked(f"the API key that signed this context now has the {current} role, below the context's")
    return Principal(OrgId(tenant), role, user if isinstance(user, str) else None, key_id=key_id,
                     signed_context=True, expires_at=float(expires))


def lookup(tx: Tx, secret: bytes, token: str, *, allow_expired: bool = False) -> Principal:
    """The principal of any bearer credential (API key, team key or signed context), or 401."""
    if token.startswith(SIGNED_CONTEXT_PREFIX):
        return verify_context(tx, secret, token, allow_expired=allow_expired)
    return principal_from_key(tx, token)
