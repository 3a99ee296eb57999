"""First start: migrate, create the platform organization, and issue (once) a platform-admin API key.

The key is printed once and only its hash is stored; a second start finds a live platform-admin key and
prints nothing.  The ``admin_api_key`` setting adopts a key chosen by the operator instead (its hash is
stored on first start; later starts with the same value change nothing).  The signing secret of signed
contexts comes from :func:`agentfy.keys.signing_secret`.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentfy.cutover.detect import refuse_legacy_identities
from agentfy.identity import Scope
from agentfy.settings import Settings
from agentfy.store.db import Database
from agentfy.store.migrate import maintenance_lock, upgrade_locked
from agentfy.store.repos import api_keys, orgs


@dataclass(frozen=True)
class Bootstrap:
    platform_org_id: str
    created_platform_org: bool
    new_admin_key: str | None  # shown once, when this start created it


def prepare(db: Database, settings: Settings | None = None) -> Bootstrap:
    """Bring the database to the newest schema and make sure the platform can be administered.

    Under the maintenance lock: processes starting together on one database take turns, so exactly one
    migrates, creates the platform organization and issues (and prints) the first admin key; the others
    find all of it done."""
    with maintenance_lock(db):
        upgrade_locked(db)
        refuse_a_legacy_database(db)
        return _bootstrap(db, settings.admin_api_key.get_secret_value()
                          if settings is not None and settings.admin_api_key is not None else None)


def _bootstrap(db: Database, from_settings: str | None) -> Bootstrap:
    with db.transaction() as tx:
        platform, created = orgs.ensure_platform_organization(tx)
        scope = Scope(platform.id)
        new_key: str | None = None
        if from_settings:
            chain = api_keys.key_chain(tx, from_settings)
            if chain is None:
                api_keys.create_api_key(tx, scope, name="platform admin (from settings)", role="owner",
                                        platform_admin=True, key=from_settings)
            elif chain.key.revoked_at is not None:
                raise ValueError("the admin_api_key setting ($AGENTFY_ADMIN_API_KEY) names a revoked key (revoked at "
                                 f"{chain.key.revoked_at}, by "
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
