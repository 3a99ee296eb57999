"""First start: migrate, create the platform organization, and issue (once) a platform-admin API key.

The key is printed once and only its hash is stored; a second start finds a live platform-admin key and
prints nothing.  ``$AGENTFY_ADMIN_API_KEY`` adopts a key chosen by the operator instead (its hash is stored
on first start; later starts with the same value change nothing).  The signing secret of signed contexts
is ``$AGENTFY_SIGNING_KEY`` (base64 of 32 bytes) or a 0600 key file beside an embedded SQLite database.
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from agentfy.cutover.detect import refuse_legacy_identities
from agentfy.identity import Scope
from agentfy.store.db import Database
from agentfy.store.migrate import maintenance_lock, upgrade_locked
from agentfy.store.repos import api_keys, orgs
from agentfy.store.repos.credentials import load_or_create_key_file

ADMIN_KEY_ENV: Final = "AGENTFY_ADMIN_API_KEY"
SIGNING_KEY_ENV: Final = "AGENTFY_SIGNING_KEY"


@dataclass(frozen=True)
class Bootstrap:
    platform_org_id: str
    created_platform_org: bool
    new_admin_key: str | None  # shown once, when this start created it


def prepare(db: Database) -> Bootstrap:
    """Bring the database to the newest schema and make sure the platform can be administered.

    Under the maintenance lock: processes starting together on one database take turns, so exactly one
    migrates, creates the platform organization and issues (and prints) the first admin key; the others
    find all of it done."""
    with maintenance_lock(db):
        upgrade_locked(db)
        refuse_a_legacy_database(db)
        return _bootstrap(db)


def _bootstrap(db: Database) -> Bootstrap:
    with db.transaction() as tx:
        platform, created = orgs.ensure_platform_organization(tx)
        scope = Scope(platform.id)
        from_env = os.environ.get(ADMIN_KEY_ENV)
        new_key: str | None = None
        if from_env:
            chain = api_keys.key_chain(tx, from_env)
            if chain is None:
                api_keys.create_api_key(tx, scope, name="platform admin (from environment)", role="owner",
                                        platform_admin=True, key=from_env)
            elif chain.key.revoked_at is not None:
                raise ValueError(f"${ADMIN_KEY_ENV} names a revoked key (revoked at {chain.key.revoked_at}, by "
                                 "`agentfy admin rotate-key` or the API): set it to the current key, or unset it")
        elif not api_keys.platform_admin_key_exists(tx):
            new_key = api_keys.create_api_key(tx, scope, name="platform admin", role="owner",
                                              platform_admin=True).key
    return Bootstrap(platform.id, created, new_key)


def refuse_a_legacy_database(db: Database) -> None:
    """:class:`LegacyDatabaseError` while any primary key still needs the ID cutover, whatever else the
    database holds (a platform organization created next to legacy rows included): the platform must not
    start on, or create rows beside, identities the cutover is about to rename.  Costs two index probes per
    entity table (:mod:`agentfy.cutover.detect`)."""
    refuse_legacy_identities(db)


def rotate_admin_key(db: Database) -> tuple[str, list[str]]:
    """A new platform-admin key (its plaintext, returned once) and every other live platform-admin key
    revoked, in one transaction: ``(new key, revoked key IDs)``.  Running servers stop accepting the old keys
    as soon as it commits (the change feed)."""
    with db.transaction() as tx:
        platform, _ = orgs.ensure_platform_organization(tx)
        scope = Scope(platform.id)
        old = api_keys.live_platform_admin_keys(tx)
        issued = api_keys.create_api_key(tx, scope, name="platform admin (rotated)", role="owner",
                                         platform_admin=True)
        for key_id in old:
            api_keys.revoke_api_key(tx, scope, key_id)
    return issued.key, old


def signing_secret(db: Database) -> bytes:
    """``$AGENTFY_SIGNING_KEY``, else a key file beside the SQLite database (``var/signing.key``)."""
    from_env = os.environ.get(SIGNING_KEY_ENV)
    if from_env:
        secret = base64.b64decode(from_env)
        if len(secret) < 32:
            raise ValueError(f"${SIGNING_KEY_ENV} must be base64 of at least 32 bytes")
        return secret
    if db.dialect != "sqlite":
        raise ValueError(f"set ${SIGNING_KEY_ENV} (base64 of 32 bytes): with PostgreSQL every gateway process "
                         "must share the same signing key")
    database = db.engine.url.database or "var/agentfy.db"
    return load_or_create_key_file(Path(database).with_name("signing.key"))
