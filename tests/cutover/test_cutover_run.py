"""`agentfy cutover run`: every legacy identity to its canonical ID, on SQLite and PostgreSQL.

What a user of the cutover relies on, each test on both engines (the ``db`` / ``db_url`` fixtures):

* a fresh legacy database (bare UUIDs), an already migrated one (``organization-…`` prefixes) and a mixed one
  come out with canonical primary keys only, the platform organization at ``org-silver-days-zxy8s9bpp6hp``,
  renamed IDs keeping their tail, and every reference (foreign keys, soft and declared references, JSON
  documents) following its identity — checked row by row against the starting state translated through the
  recorded hops; values that are not identities (``group:…``, ``system``, a stranger's UUID, user content,
  Agentfy's three-word legacy IDs) and the audit log stay as they were; row counts are unchanged; the orphan
  scan is clean; an earlier hop chains to the new ID; running again changes nothing;
* credentials are encrypted again for their new owner, and a wrong or missing key aborts; signed contexts
  are revoked while API keys keep working (also over HTTP, where an old ID is explained with
  ``migrated_to`` but is no alias);
* a dry run leaves the database byte for byte (SQLite) or checksum for checksum (PostgreSQL) identical; a
  canonical database is left alone;
* aborts leave the database as it was (an undeclared reference, a renamed ID that exists already, a primary
  key that is neither canonical nor legacy, a random source that always repeats); minted IDs that collide
  are minted again;
* the CLI as an operator uses it (seed refused, a failed run, dry run, run with a backup, nothing to do,
  seed accepted) and its help.

PostgreSQL: the cutover refuses to run while other sessions are connected, so
:func:`cutover` disposes the ``db`` fixture's pool and waits for the server to let go of it first (the pool
reconnects lazily afterwards).  A PostgreSQL run restores its backup into a scratch database (a couple of
seconds), so related scenarios share runs where they can.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import sqlite3
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import psycopg
import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from agentfy.cli import app
from agentfy.cutover.detect import legacy_identities
from agentfy.cutover.errors import BackupError, CutoverError, IdConflictError, UnknownReferenceError
from agentfy.cutover.hops import record_hops, resolve_migrated_id
from agentfy.cutover.references import ENTITY_TABLES, JSON_COLUMNS
from agentfy.cutover.run import CutoverOptions, CutoverReport, run_cutover
from agentfy.errors import ApiError
from agentfy.gateway.app import create_app
from agentfy.gateway.auth import principal_from_key, sign_context, verify_context
from agentfy.identity import Scope
from agentfy.ids import format_id, is_canonical_id
from agentfy.ids.registry import MODEL_BY_PREFIX
from agentfy.store import orphans
from agentfy.store.db import Database
from agentfy.store.repos import agents, api_keys, credentials, orgs, teams
from agentfy.store.repos.credentials import KEY_ENV, CredentialCipher, CredentialDecryptionError
from agentfy.store.repos.orgs import PLATFORM_ORG_ID
from agentfy.store.schema import metadata
from tests.cutover.legacy_db import (
    OLD_PREFIXES,
    PLATFORM_LEGACY_UUID,
    PLATFORM_PREFIXED_ID,
    LegacyManifest,
    LegacyShape,
    Style,
    generate_legacy_database,
)
from tests.helpers.databases import PG_ADMIN_URL

KEY = CredentialCipher.generate_key()
CIPHER = CredentialCipher(KEY)
SIGNING_SECRET = b"s" * 32
SHAPE = LegacyShape(organizations=3, members=2, credentials=1, policies=1, agents=3, teams=1, sessions=2,
                    messages_per_session=2, memory_documents=1, chunks_per_document=2, kg_entities=2,
                    kg_relations=1, vault_documents=1, telemetry=2, events=2)
#: Agentfy's other legacy format: three words and 20 Crockford characters (accepted, never translated).
THREE_WORD_AGENT_ID = "agent-calm-rivers-jump-0123456789abcdefghjk"
#: A UUID that is no identity of the database.
STRANGER = "11111111-2222-4333-8444-555555555555"
#: Rewritten but not compared value by value (encrypted again: checked by decrypting).
NOT_COMPARED = {("org_credentials", "nonce"), ("org_credentials", "ciphertext")}
#: What the cutover writes besides the rewritten tables (checked separately), and history (never rewritten).
BOOKKEEPING = {"id_migrations", "platform_settings"}
HISTORY = {"org_audit"}

runner = CliRunner()
Rows = dict[str, list[dict[str, Any]]]


# -- helpers --------------------------------------------------------------------------------------------------
def generate(db: Database, style: Style = "uuid") -> LegacyManifest:
    return generate_legacy_database(db, replace(SHAPE, style=style), seed=5, cipher=CIPHER)


def alone(db: Database) -> None:
    """Close ``db``'s pool and, on PostgreSQL, wait until the server has let go of its sessions (a closed
    client's backend stays in ``pg_stat_activity`` a moment, and the cutover refuses while it is listed)."""
    db.dispose()
    if db.dialect != "postgresql":
        return
    deadline = time.monotonic() + 10
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        while admin.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND backend_type = "
                            "'client backend'", (db.engine.url.database,)).fetchone() != (0,):
            assert time.monotonic() < deadline, f"sessions still connected to {db.engine.url.database}"
            time.sleep(0.02)


def cutover(db: Database, tmp_path: Path, **options: Any) -> CutoverReport:
    """Run the cutover on ``db`` once it has no session open (PostgreSQL refuses to run beside one)."""
    alone(db)
    settings: dict[str, Any] = {"backup": tmp_path / "backup", "cipher": CIPHER, **options}
    return run_cutover(db.url, CutoverOptions(**settings))


def execute(db: Database, statement: str, params: Mapping[str, Any] | None = None) -> None:
    with db.transaction() as tx:
        tx.execute(statement, dict(params or {}))


def scalar(db: Database, statement: str, params: Mapping[str, Any] | None = None) -> Any:
    with db.transaction(write=False) as tx:
        return tx.scalar(statement, dict(params or {}))


def column(db: Database, statement: str, params: Mapping[str, Any] | None = None) -> list[Any]:
    with db.transaction(write=False) as tx:
        return [row[0] for row in tx.all(statement, dict(params or {}))]


def column_rows(db: Database, statement: str) -> list[tuple[Any, ...]]:
    with db.transaction(write=False) as tx:
        return [tuple(row) for row in tx.all(statement)]


def rows(db: Database) -> Rows:
    """Every row of every table, as dicts."""
    with db.engine.connect() as connection:
        return {table.name: [dict(row._mapping) for row in connection.execute(sa.select(table))]
                for table in metadata.sorted_tables}


def comparable(data: Rows) -> dict[str, list[str]]:
    """Rows in a comparable form: each table's rows sorted (their order is not defined)."""
    return {table: sorted(repr(sorted(row.items())) for row in table_rows) for table, table_rows in data.items()}


def fingerprint(db: Database) -> dict[str, Any]:
    """Everything a failed or dry run must leave alone: every row (nonces and ciphertexts included) and, on
    PostgreSQL, every constraint (the cutover drops and re-adds the foreign keys inside its transaction)."""
    state: dict[str, Any] = comparable(rows(db))
    if db.dialect == "postgresql":
        with db.engine.connect() as connection:
            state["constraints"] = sorted(tuple(row) for row in connection.exec_driver_sql(
                "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint "
                "WHERE connamespace = current_schema()::regnamespace"))
    db.dispose()
    return state


def counts(db: Database) -> dict[str, int]:
    with db.engine.connect() as connection:
        return {t.name: int(connection.execute(sa.select(sa.func.count()).select_from(t)).scalar_one())
                for t in metadata.sorted_tables}


def hops_of(db: Database, old_ids: list[str]) -> dict[str, str]:
    """Old ID -> current ID, for those of ``old_ids`` the recorded hops translate."""
    with db.transaction(write=False) as tx:
        resolved = {old: resolve_migrated_id(tx, old) for old in old_ids}
    return {old: new for old, new in resolved.items() if new is not None}


def all_identities(manifest: LegacyManifest) -> list[str]:
    return [value for values in manifest.identities.values() for value in values]


def entity_ids(db: Database, table: str) -> list[str]:
    return [str(value) for value in column(db, f"SELECT id FROM {table}")]


def translated(before: Rows, mapping: Mapping[str, str]) -> Rows:
    """The rewritable tables as the cutover must leave them: every value that is a translated identity (a
    whole column value, or a string inside a JSON document) replaced, everything else as it was."""
    json_columns = set(JSON_COLUMNS)

    def in_json(node: Any) -> Any:
        if isinstance(node, str):
            return mapping.get(node, node)
        if isinstance(node, dict):
            return {mapping.get(key, key): in_json(value) for key, value in node.items()}
        if isinstance(node, list):
            return [in_json(item) for item in node]
        return node

    def translate(table: str, name: str, value: Any) -> Any:
        if (table, name) in json_columns:  # compared as documents: the formatting is the cutover's choice
            return json.dumps(in_json(json.loads(value)), sort_keys=True)
        return mapping.get(value, value) if isinstance(value, str) else value

    return {table: [{name: translate(table, name, value) for name, value in row.items()
                     if (table, name) not in NOT_COMPARED} for row in table_rows]
            for table, table_rows in before.items() if table not in BOOKKEEPING | HISTORY}


def rewritable(data: Rows) -> Rows:
    """The rewritable tables as they are, in the form :func:`translated` gives."""
    return translated(data, {})


def cutover_and_check_every_reference(
        db: Database, tmp_path: Path, style: Style,
        prepare: Callable[[LegacyManifest], None] = lambda _: None, **options: Any,
) -> tuple[LegacyManifest, CutoverReport, dict[str, str]]:
    """Generate a legacy database of ``style`` (``prepare`` may add to it), run the cutover, and check what
    holds for every style: each primary key is canonical, each reference and JSON document follows its
    identity through the recorded hops, nothing else changed, history stayed, the row counts hold, the
    orphan scan is clean, and a second run changes nothing.  Returns the manifest, the report and the
    hops (old ID -> new ID).  ``options`` go to the first run."""
    manifest = generate(db, style)
    platform = manifest.platform_org_id
    execute(db, "UPDATE skills SET owner_id = 'system' WHERE tenant_id = :org", {"org": platform})  # not IDs
    execute(db, "UPDATE cron_jobs SET created_by = 'system' WHERE tenant_id = :org", {"org": platform})
    prepare(manifest)
    before, counts_before = rows(db), counts(db)

    report = cutover(db, tmp_path, **options)

    mapping = hops_of(db, all_identities(manifest))
    assert report.hops == report.changed_identities == len(mapping) > 0
    assert report.minted + report.fixed + report.renamed == report.changed_identities
    assert len(set(mapping.values())) == len(mapping)  # no two identities became one
    assert mapping[platform] == PLATFORM_ORG_ID
    for table, prefix in ENTITY_TABLES.items():
        for value in entity_ids(db, table):
            assert is_canonical_id(value, prefix) or value == THREE_WORD_AGENT_ID, (table, value)

    after = rows(db)
    assert comparable(rewritable(after)) == comparable(translated(before, mapping))
    assert comparable({"audit": after["org_audit"]}) == comparable({"audit": before["org_audit"]})  # history
    recorded = {row["old_id"]: row for row in after["id_migrations"] if row["run_id"] == report.run_id}
    assert {old: row["new_id"] for old, row in recorded.items()} == mapping
    for table, olds in manifest.identities.items():
        assert all(recorded[old]["entity"] == MODEL_BY_PREFIX[ENTITY_TABLES[table]] for old in olds if old in mapping)
    assert counts(db) == {**counts_before, "id_migrations": counts_before["id_migrations"] + len(mapping)}
    assert report.signing_epoch == int(manifest.signing_epoch) + 1
    assert scalar(db, "SELECT value FROM platform_settings WHERE name = 'signing_epoch'") == str(report.signing_epoch)
    assert orphans.scan(db) == []
    assert legacy_identities(db) == {}
    assert set(column(db, "SELECT owner_id FROM skills WHERE tenant_id = :org", {"org": PLATFORM_ORG_ID})) \
        == {"system"}
    assert set(column(db, "SELECT scope FROM agent_config_permissions")) \
        == {f"group:legacy-{n}" for n in range(SHAPE.organizations)}

    settled = fingerprint(db)
    again = cutover(db, tmp_path, backup=tmp_path / "second-backup")
    assert again.changed_identities == again.hops == 0 and again.signing_epoch is None
    assert fingerprint(db) == settled  # no epoch bump, no hop, no backup
    assert not (tmp_path / "second-backup").exists()
    return manifest, report, mapping


# -- the three kinds of legacy database -----------------------------------------------------------------------
def test_a_fresh_legacy_database_gets_canonical_ids_everywhere(db: Database, tmp_path: Path) -> None:
    def prepare(manifest: LegacyManifest) -> None:
        agent = manifest.identities["agents"][0]
        execute(db, "INSERT INTO agents (id, tenant_id, agent_key, display_name, config, created_at, updated_at) "
                    "VALUES (:id, :org, 'old-dev', 'Old dev agent', '{}', 'now', 'now')",
                {"id": THREE_WORD_AGENT_ID, "org": PLATFORM_LEGACY_UUID})
        execute(db, "UPDATE teams SET lead_agent_id = :id WHERE tenant_id = :org",
                {"id": THREE_WORD_AGENT_ID, "org": PLATFORM_LEGACY_UUID})
        execute(db, "UPDATE agents SET display_name = :text WHERE id = :id", {"text": f"see {STRANGER}", "id": agent})
        execute(db, "UPDATE session_messages SET content = :text", {"text": f"agent {agent} said hi"})  # a quote
        peers = json.dumps({"peers": {manifest.identities["agents"][1]: [manifest.identities["users"][0]]}})
        execute(db, "UPDATE agents SET config = :c WHERE id = :id", {"c": peers, "id": agent})  # an ID as a key

    manifest, report, mapping = cutover_and_check_every_reference(db, tmp_path, "uuid", prepare)

    assert manifest.platform_org_id == PLATFORM_LEGACY_UUID
    assert set(mapping) == set(all_identities(manifest))  # every UUID changed
    assert report.minted == report.changed_identities - 1  # the platform organization's new ID is fixed
    assert report.identities == manifest.identity_counts
    org_id, default_agent_id, settings = next(iter(column_rows(
        db, "SELECT id, default_agent_id, settings FROM organizations WHERE slug = 'platform'")))
    assert org_id == PLATFORM_ORG_ID
    assert default_agent_id in column(db, "SELECT id FROM agents WHERE tenant_id = :o", {"o": org_id})
    assert json.loads(settings)["default_agent"] == default_agent_id
    assert all(is_canonical_id(t, "org") for t in column(db, "SELECT tenant_id FROM event_outbox"))
    assert all(is_canonical_id(json.loads(a)["tenant.id"], "org") for a in column(db, "SELECT attributes FROM spans"))
    # Agentfy's three-word legacy ID stays, and so do its references; a stranger's UUID and a quote stay.
    assert scalar(db, "SELECT tenant_id FROM agents WHERE id = :id", {"id": THREE_WORD_AGENT_ID}) == PLATFORM_ORG_ID
    assert column(db, "SELECT lead_agent_id FROM teams WHERE tenant_id = :o", {"o": org_id}) == [THREE_WORD_AGENT_ID]
    assert hops_of(db, [THREE_WORD_AGENT_ID, STRANGER]) == {}
    first_agent, second_agent = manifest.identities["agents"][:2]
    config = json.loads(scalar(db, "SELECT config FROM agents WHERE id = :id", {"id": mapping[first_agent]}))
    assert config == {"peers": {mapping[second_agent]: [mapping[manifest.identities["users"][0]]]}}
    assert scalar(db, "SELECT display_name FROM agents WHERE id = :id", {"id": mapping[first_agent]}) \
        == f"see {STRANGER}"
    assert set(column(db, "SELECT content FROM session_messages")) == {f"agent {first_agent} said hi"}


@pytest.mark.slow
def test_an_already_migrated_database_swaps_the_retired_prefixes_and_keeps_tails(db: Database,
                                                                                 tmp_path: Path) -> None:
    uuid_era = "5b0c1e2a-3d4f-4a5b-8c6d-7e8f9a0b1c2d"

    def prepare(manifest: LegacyManifest) -> None:  # an earlier hop: UUID -> organization-…
        prefixed_org = next(org for org in manifest.org_styles if org != manifest.platform_org_id)
        with db.transaction() as tx:
            record_hops(tx, [(uuid_era, prefixed_org, "Organization")], run_id="agnt2-588")

    manifest, report, mapping = cutover_and_check_every_reference(db, tmp_path, "prefixed", prepare)

    assert manifest.platform_org_id == PLATFORM_PREFIXED_ID
    assert report.minted == 0
    renamed_tables = {table for table, prefix in ENTITY_TABLES.items() if prefix in OLD_PREFIXES}
    assert {ENTITY_TABLES[t] for t in renamed_tables} == {"org", "org-member", "org-credential", "org-policy"}
    assert report.renamed == sum(manifest.identity_counts[t] for t in renamed_tables)
    for table, olds in manifest.identities.items():
        prefix = ENTITY_TABLES[table]
        current = set(entity_ids(db, table))
        for old in olds:
            if table in renamed_tables:  # organization-<words>-<tail> -> org-<words>-<tail>
                assert mapping[old] == prefix + old.removeprefix(OLD_PREFIXES[prefix]) and mapping[old] in current
            else:  # canonical already: unchanged, no hop
                assert old not in mapping and old in current
    prefixed_org = next(org for org in manifest.org_styles if org != manifest.platform_org_id)
    assert hops_of(db, [uuid_era]) == {uuid_era: "org" + prefixed_org.removeprefix("organization")}  # two hops


@pytest.mark.slow
def test_a_mixed_database_gets_both_treatments_and_credentials_follow_their_owner(db: Database,
                                                                                  tmp_path: Path) -> None:
    manifest, report, mapping = cutover_and_check_every_reference(db, tmp_path, "mixed", page_size=2)  # many pages

    assert set(manifest.org_styles.values()) == {"uuid", "prefixed"}
    assert report.minted > 0 and report.renamed > 1
    for old_org, style in manifest.org_styles.items():
        if style == "prefixed":
            assert mapping[old_org] == "org" + old_org.removeprefix("organization")
        else:
            assert is_canonical_id(mapping[old_org], "org")
    for agent in manifest.identities["agents"]:  # agents of prefixed organizations were canonical already
        assert (agent in mapping) == (len(agent) == 36)
    assert report.credentials == len(manifest.credentials) == SHAPE.organizations * SHAPE.credentials
    with db.transaction(write=False) as tx:
        for old_id, legacy in manifest.credentials.items():
            row = tx.one("SELECT org_id, nonce, ciphertext FROM org_credentials WHERE id = :id",
                         {"id": mapping[old_id]})
            assert row is not None
            owner, nonce, ciphertext = row
            assert owner == mapping[legacy.org_id] != legacy.org_id
            assert CIPHER.decrypt(owner, nonce, ciphertext) == legacy.secret
            with pytest.raises(CredentialDecryptionError):  # bound to the new owner only
                CIPHER.decrypt(legacy.org_id, nonce, ciphertext)


def test_a_canonical_database_is_left_alone(db: Database, tmp_path: Path) -> None:
    with db.transaction() as tx:
        orgs.ensure_platform_organization(tx)
        scope = Scope(orgs.create_organization(tx, slug="acme", name="Acme").id)
        helper = agents.create_agent(tx, scope, agent_key="helper")
        teams.create_team(tx, scope, name="Core", lead_agent_id=helper.id)
        api_keys.create_api_key(tx, scope, name="owner", role="owner")
        credentials.put_credential(tx, scope, CIPHER, "provider", b"sk-live")
    before = fingerprint(db)

    report = cutover(db, tmp_path, cipher=None)

    assert report.changed_identities == 0 and report.identities == {} and report.changes == {}
    assert fingerprint(db) == before
    assert not (tmp_path / "backup").exists()


# -- signed contexts, API keys, the HTTP API ------------------------------------------------------------------
@pytest.mark.slow
def test_signed_contexts_are_revoked_and_api_keys_keep_working(db: Database, tmp_path: Path) -> None:
    manifest = generate(db)
    old_org = next(org for org in manifest.org_styles if org != manifest.platform_org_id)
    key = manifest.api_keys[old_org]
    with db.transaction() as tx:
        token = sign_context(tx, SIGNING_SECRET, principal_from_key(tx, key), ttl_seconds=3600)
        assert verify_context(tx, SIGNING_SECRET, token).tenant_id == old_org
    old_agent = str(scalar(db, "SELECT id FROM agents WHERE tenant_id = :o ORDER BY agent_key", {"o": old_org}))

    report = cutover(db, tmp_path)

    assert report.signing_epoch == int(manifest.signing_epoch) + 1
    new = hops_of(db, [old_org, old_agent])
    new_org, new_agent = new[old_org], new[old_agent]
    with db.transaction(write=False) as tx:
        with pytest.raises(ApiError) as revoked:
            verify_context(tx, SIGNING_SECRET, token)
        assert revoked.value.status == 401 and "revoked" in revoked.value.message
        assert principal_from_key(tx, key).tenant_id == new_org
    with TestClient(create_app(db, signing_secret=SIGNING_SECRET)) as client:
        headers = {"Authorization": f"Bearer {key}"}
        assert client.get("/v1/org", headers={"Authorization": f"Bearer {token}"}).status_code == 401
        assert client.get("/v1/org", headers=headers).json()["id"] == new_org
        assert client.get(f"/v1/ids/{old_org}", headers=headers).json()["migrated_to"] == new_org
        assert client.get(f"/v1/ids/{old_agent}", headers=headers).json()["migrated_to"] == new_agent
        stranger = {"Authorization": f"Bearer {manifest.api_keys[manifest.platform_org_id]}"}
        assert client.get(f"/v1/ids/{old_agent}", headers=stranger).json()["migrated_to"] is None  # not theirs
        assert client.get(f"/v1/agents/{old_agent}", headers=headers).status_code == 404  # no alias
        assert client.get(f"/v1/agents/{new_agent}", headers=headers).json()["id"] == new_agent


# -- dry run ------------------------------------------------------------------------------------------------------
def file_state(db: Database) -> str:
    """SQLite: the database file's SHA-256 with every connection closed and the WAL checkpointed into it."""
    db.dispose()
    path = Path(db.engine.url.database or "")
    connection = sqlite3.connect(path)
    try:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        connection.close()
    return hashlib.sha256(path.read_bytes()).hexdigest()


def server_state(db: Database) -> dict[str, Any]:
    """PostgreSQL: per table, its row count and an md5 of its rows in order, and the constraints."""
    db.dispose()
    uri = db.engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
    state: dict[str, Any] = {}
    with psycopg.connect(uri) as connection:
        for table in metadata.sorted_tables:
            state[table.name] = connection.execute(
                "SELECT count(*), md5(coalesce(string_agg(t::text, ',' ORDER BY t::text), '')) "
                f'FROM "{table.name}" AS t').fetchone()
        state["constraints"] = connection.execute(
            "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint "
            "WHERE connamespace = current_schema()::regnamespace ORDER BY 1, 2").fetchall()
    return state


@pytest.mark.slow
def test_a_dry_run_reports_the_changes_and_leaves_the_database_identical(db: Database, tmp_path: Path) -> None:
    manifest = generate(db)
    state: Callable[[Database], Any] = file_state if db.dialect == "sqlite" else server_state
    before = state(db)

    report = cutover(db, tmp_path, dry_run=True, backup=None)

    assert report.dry_run and report.backup is None
    assert report.changed_identities == sum(manifest.identity_counts.values())
    assert report.changes["organizations.id"] == report.changes["organizations.settings"] == SHAPE.organizations
    assert report.changes["event_outbox.payload"] == SHAPE.organizations * SHAPE.events
    assert report.signing_epoch == int(manifest.signing_epoch) + 1  # what it would become
    assert state(db) == before
    assert {p.name for p in tmp_path.iterdir()} <= {"agentfy.db"}  # no backup left behind
    assert legacy_identities(db) != {}


# -- refusals: the database stays as it was --------------------------------------------------------------------
def refused(db: Database, tmp_path: Path, error: type[CutoverError], match: str, **options: Any) -> None:
    """The cutover aborts with ``error`` (its message matching ``match``) and leaves the database as it was."""
    before = fingerprint(db)
    with pytest.raises(error, match=match):
        cutover(db, tmp_path, **options)
    assert fingerprint(db) == before


def test_what_the_cutover_refuses_leaves_the_database_as_it_was(db: Database, tmp_path: Path) -> None:
    manifest = generate(db, "mixed")
    agent = next(a for a in manifest.identities["agents"] if len(a) == 36)  # a UUID being translated
    prefixed_org = next(org for org, style in manifest.org_styles.items() if style == "prefixed")

    # credentials of a translated organization, and no key, or the wrong one
    refused(db, tmp_path, CutoverError, rf"\${KEY_ENV} or --credentials-key-file", cipher=None)
    refused(db, tmp_path, CutoverError, "does not decrypt with its owner ID and the given key",
            cipher=CredentialCipher(CredentialCipher.generate_key()))
    # a random source that always repeats itself: minting again never helps
    refused(db, tmp_path, IdConflictError, "repeats itself", random=bytes)

    # a translated ID in a text column nobody declared as a reference (it would be left dangling)
    for table, text_column in (("agents", "display_name"), ("teams", "name")):
        row = manifest.identities[table][-1]
        original = scalar(db, f"SELECT {text_column} FROM {table} WHERE id = :id", {"id": row})
        execute(db, f"UPDATE {table} SET {text_column} = :text WHERE id = :id", {"text": f"ask {agent}", "id": row})
        refused(db, tmp_path, UnknownReferenceError, rf"{table}\.{text_column} holds {agent}")
        execute(db, f"UPDATE {table} SET {text_column} = :text WHERE id = :id", {"text": original, "id": row})

    # organization-<words>-<tail> would become org-<words>-<tail>, which exists already
    renamed = "org" + prefixed_org.removeprefix("organization")
    execute(db, "INSERT INTO organizations (id, slug, name, settings, created_at) "
                "VALUES (:id, 'clash', 'Clash', '{}', 'now')", {"id": renamed})
    refused(db, tmp_path, IdConflictError, f"{prefixed_org} would become {renamed}, but organizations already")
    execute(db, "DELETE FROM organizations WHERE id = :id", {"id": renamed})

    # a primary key that is neither canonical nor a legacy ID the cutover translates (it does not guess)
    execute(db, "INSERT INTO agents (id, tenant_id, agent_key, display_name, config, created_at, updated_at) "
                "VALUES ('agent-not-an-id', :org, 'odd', 'Odd', '{}', 'now', 'now')", {"org": prefixed_org})
    refused(db, tmp_path, IdConflictError, r"agents\.id holds 'agent-not-an-id'")


def test_a_backup_that_cannot_be_written_aborts_and_changes_nothing(db: Database, tmp_path: Path) -> None:
    generate(db)
    refused(db, tmp_path, BackupError, "the backup", backup=tmp_path / "no such directory" / "backup")


def test_two_identities_renamed_to_the_same_id_are_a_conflict(db: Database, tmp_path: Path) -> None:
    insert = "INSERT INTO organizations (id, slug, name, settings, created_at) VALUES (:id, :slug, 'P', '{}', 'now')"
    execute(db, insert, {"id": PLATFORM_LEGACY_UUID, "slug": "platform"})  # becomes org-silver-days-…
    execute(db, insert, {"id": PLATFORM_PREFIXED_ID, "slug": "platform-2"})  # and so would this one
    refused(db, tmp_path, IdConflictError, PLATFORM_ORG_ID)


def test_one_uuid_shared_by_two_entities_is_a_conflict(db: Database, tmp_path: Path) -> None:
    manifest = generate(db)
    shared = manifest.identities["agents"][0]
    execute(db, "INSERT INTO users (id, email, display_name, created_at) "
                "VALUES (:id, 'twin@x.example', 'Twin', 'now')", {"id": shared})
    refused(db, tmp_path, IdConflictError, f"{shared} is the primary key of a row in agents and one in users")


@pytest.mark.slow
def test_a_translated_id_inside_a_longer_json_string_is_refused(db: Database, tmp_path: Path) -> None:
    """Only whole string values are references; a link that embeds an old ID would be left dangling."""
    manifest = generate(db)
    agent = next(a for a in manifest.identities["agents"] if len(a) == 36)
    execute(db, "UPDATE agents SET config = :config WHERE id = :id",
            {"config": json.dumps({"link": f"/v1/agents/{agent}"}), "id": agent})
    refused(db, tmp_path, UnknownReferenceError,
            rf"agents\.config of row {agent} holds, inside a longer string, {agent}")


def test_a_translated_id_in_a_json_column_that_is_not_json_is_refused(db: Database, tmp_path: Path) -> None:
    manifest = generate(db)
    agent = next(a for a in manifest.identities["agents"] if len(a) == 36)
    execute(db, "UPDATE agents SET config = :config WHERE id = :id", {"config": f"delegate to {agent}", "id": agent})
    refused(db, tmp_path, UnknownReferenceError, rf"agents\.config of row {agent} is not valid JSON but holds {agent}")


def test_a_uuid_that_names_no_identity_may_sit_inside_a_longer_json_string(db: Database, tmp_path: Path) -> None:
    """Only a *translated* ID inside a longer string is refused: an unrelated UUID in a link stays as it is."""
    manifest = generate(db)
    agent = next(a for a in manifest.identities["agents"] if len(a) == 36)
    link = "/v1/traces/2f1e6a4c-9b7d-4c3e-8a5f-0d1c2b3a4e5f"
    execute(db, "UPDATE agents SET config = :config WHERE id = :id",
            {"config": json.dumps({"link": link, "delegate_to": agent}), "id": agent})
    report = cutover(db, tmp_path)
    new_agent = scalar(db, "SELECT new_id FROM id_migrations WHERE old_id = :old", {"old": agent})
    assert json.loads(scalar(db, "SELECT config FROM agents WHERE id = :id", {"id": new_agent})) == {
        "link": link, "delegate_to": new_agent}
    assert report.changes["agents.config"] >= 1


# -- colliding minted IDs ------------------------------------------------------------------------------------------
class RepeatsFirstIds:
    """A deterministic random source whose first ``repeated`` IDs are one and the same (all-zero bytes: an ID
    takes three reads, none of them rejected), then seeded random bytes."""

    def __init__(self, repeated: int, seed: int = 1) -> None:
        self.zero_reads = 3 * repeated
        self.rng = random.Random(seed)

    def __call__(self, n: int) -> bytes:
        if self.zero_reads > 0:
            self.zero_reads -= 1
            return bytes(n)
        return self.rng.randbytes(n)


@pytest.mark.slow
def test_minted_ids_that_collide_are_minted_again(db: Database, tmp_path: Path) -> None:
    taken = format_id("domain-event", bytes)  # what the source's first IDs are: an event has it already
    insert = ("INSERT INTO event_outbox (id, tenant_id, type, source_id, occurred_at, payload, status, attempts, "
              "available_at) VALUES (:id, :tenant, :type, 'x', 'now', '{}', 'done', 1, 'now')")
    execute(db, insert, {"id": taken, "tenant": PLATFORM_ORG_ID, "type": "current"})
    for n in range(3):
        execute(db, insert, {"id": f"aaaaaaaa-0000-4000-8000-00000000000{n}", "tenant": PLATFORM_ORG_ID,
                             "type": f"legacy.{n}"})

    report = cutover(db, tmp_path, random=RepeatsFirstIds(3))  # three minted IDs alike, and taken

    assert report.minted == report.changed_identities == 3
    events = dict(column_rows(db, "SELECT type, id FROM event_outbox"))
    assert events["current"] == taken
    assert len(set(events.values())) == 4 and all(is_canonical_id(v, "domain-event") for v in events.values())


# -- the command line -----------------------------------------------------------------------------------------
@pytest.mark.slow
def test_the_command_as_an_operator_uses_it(db: Database, db_url: str, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    key_file = tmp_path / "credentials.key"
    key_file.write_text(base64.b64encode(KEY).decode("ascii"))
    key_file.chmod(0o600)  # a key file readable by others is refused
    generate(db)
    before = fingerprint(db)
    command = ["cutover", "run", "--database-url", db_url]

    not_yet = runner.invoke(app, ["db", "seed", "--database-url", db_url])
    assert not_yet.exit_code == 1 and "run the ID cutover first" in not_yet.stderr

    alone(db)
    failed = runner.invoke(app, [*command, "--backup", str(tmp_path / "failed.backup")])  # no credentials key
    assert failed.exit_code == 1
    assert "error:" in failed.stderr and KEY_ENV in failed.stderr and "rolled back" in failed.stderr
    assert fingerprint(db) == before

    command += ["--credentials-key-file", str(key_file)]
    alone(db)
    dry = runner.invoke(app, [*command, "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "dry run" in dry.stdout and "organizations.id" in dry.stdout
    assert fingerprint(db) == before

    backup = tmp_path / "pre-cutover.backup"
    alone(db)
    real = runner.invoke(app, [*command, "--backup", str(backup)])
    assert real.exit_code == 0, real.output
    assert "committed" in real.stdout
    if db.dialect == "sqlite":  # the backup holds the starting state
        with sqlite3.connect(backup) as saved:
            assert saved.execute("SELECT id FROM organizations WHERE slug = 'platform'").fetchone() \
                == (PLATFORM_LEGACY_UUID,)
    else:
        assert backup.read_bytes().startswith(b"PGDMP")  # pg_dump's custom format
    assert hops_of(db, [PLATFORM_LEGACY_UUID]) == {PLATFORM_LEGACY_UUID: PLATFORM_ORG_ID}
    alone(db)
    again = runner.invoke(app, [*command, "--backup", str(tmp_path / "again.backup")])
    assert again.exit_code == 0, again.output
    assert "nothing to do" in again.stdout

    seeded = runner.invoke(app, ["db", "seed", "--database-url", db_url])
    assert seeded.exit_code == 0, seeded.output
    assert "agfy_ok_" in seeded.stdout
    slugs = column(db, "SELECT slug FROM organizations")  # the cutover's platform organization, not a second one
    assert sorted(slugs) == sorted(["platform", "demo", *(f"legacy-org-{n}" for n in range(1, SHAPE.organizations))])
    assert scalar(db, "SELECT slug FROM organizations WHERE id = :id", {"id": PLATFORM_ORG_ID}) == "platform"


def test_the_command_help_names_its_options() -> None:
    result = runner.invoke(app, ["cutover", "run", "--help"])
    assert result.exit_code == 0
    assert "--dry-run" in result.stdout and "--backup" in result.stdout
