"""The principal cache: a credential's checked principal, kept until the change feed says it went stale.

Checking a credential's chain costs a database round trip; most requests present a credential checked a
moment ago.  A cached principal is dropped — in every process, the moment the change commits — when:

=================================  ====================================================================
change                             principals dropped
=================================  ====================================================================
``api_key.revoked`` / ``narrowed``  the key's, and every signed context it signed
``team_key.revoked``               the team key's, and every signed context it signed
``team.deleted``                   every principal of the team
``member.removed`` / ``role_changed``  every principal acting as that person in that organization
``org.deleted``                    every principal of the organization
``epoch.bumped``                   every signed context
(the feed lost its connection)     everything; nothing is cached until it is back
=================================  ====================================================================

A look-up that raced with any of these is answered but not cached (a generation counter), so a revoked
credential is never cached after its revocation.  Entries also expire after :data:`TTL_SECONDS` (a backstop)
and a signed context at its own expiry.  Credentials are kept as their SHA-256, never in plain text.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from typing import Final

from agentfy.gateway.auth import Principal
from agentfy.store.changefeed import Change
from agentfy.store.db import Database

TTL_SECONDS: Final = 60.0
MAX_ENTRIES: Final = 100_000
_Doomed = Callable[[Principal], bool]


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


class PrincipalCache:
    """Principals by credential digest, for one database in this process."""

    def __init__(self, db: Database, *, ttl: float = TTL_SECONDS) -> None:
        self._db = db
        self._ttl = ttl
        self._entries: dict[bytes, tuple[Principal, float]] = {}
        self._generation = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        db.changes.on_stale(self._on_change)
        db.changes.on_reset(self._on_reset)

    def get(self, token: str, *, allow_expired: bool = False) -> tuple[Principal | None, int]:
        """``(principal, generation)``: the cached principal (``None`` on a miss) and the generation to hand
        to :meth:`put` after loading it.  A signed context past its expiry is a miss unless ``allow_expired``."""
        generation = self._generation
        entry = self._entries.get(_digest(token))
        if entry is not None:
            principal, expires = entry
            alive = allow_expired or principal.expires_at is None or principal.expires_at > time.time()
            if expires > time.monotonic() and alive:
                self.hits += 1
                return principal, generation
        self.misses += 1
        return None, generation

    def put(self, token: str, principal: Principal, generation: int) -> None:
        """Cache ``principal`` unless something was invalidated since ``generation`` or the feed is down."""
        with self._lock:
            if generation != self._generation or not self._db.changes.cacheable:
                return
            if len(self._entries) >= MAX_ENTRIES:
                self._entries.clear()
            self._entries[_digest(token)] = (principal, time.monotonic() + self._ttl)

    def clear(self) -> None:
        with self._lock:
            self._generation += 1
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    # -- the change feed -------------------------------------------------------------------------------------
    def _on_change(self, change: Change) -> None:
        doomed = _matcher(change)
        if doomed is None:
            return
        with self._lock:
            self._generation += 1
            for digest in [d for d, (principal, _) in self._entries.items() if doomed(principal)]:
                del self._entries[digest]

    def _on_reset(self, _reason: str) -> None:
        self.clear()


def _matcher(change: Change) -> _Doomed | None:
    """Which cached principals ``change`` makes stale (``None``: none)."""
    kind, op, tenant, subject = change.kind, change.op, change.tenant_id, change.id
    if kind in ("api_key", "team_key"):
        return lambda p: p.key_id == subject
    if kind == "team" and op == "deleted":
        return lambda p: p.team_id == subject
    if kind == "member" and op in ("removed", "role_changed"):
        return lambda p: p.tenant_id == tenant and p.user_id == subject
    if kind == "org" and op == "deleted":
        return lambda p: p.tenant_id == tenant
    if kind == "epoch":
        return lambda p: p.signed_context
    return None
