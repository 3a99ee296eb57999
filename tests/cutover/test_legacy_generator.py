"""The legacy database generator: complete, consistent, of the requested style, and deterministic."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from agentfy.ids import is_canonical_id
from agentfy.store import orphans
from agentfy.store.db import Database
from agentfy.store.repos.api_keys import hash_api_key
from agentfy.store.repos.credentials import CredentialCipher, CredentialDecryptionError
from agentfy.store.repos.teams import hash_team_api_key
from agentfy.store.schema import metadata
from tests.cutover.legacy_db import (
    OLD_PREFIXES,
    PLATFORM_LEGACY_UUID,
    PLATFORM_PREFIXED_ID,
    LegacyManifest,
    LegacyShape,
    RowStyle,
    generate_legacy_database,
)

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
SMALL = LegacyShape(organizations=4, members=3, credentials=2, policies=1, agents=3, teams=2, sessions=2,
                    messages_per_session=3, memory_documents=2, chunks_per_document=2, kg_entities=3,
                    kg_relations=2, vault_documents=2, telemetry=2, events=2)
KEY = CredentialCipher.generate_key()


@pytest.fixture
def cipher() -> CredentialCipher:
    return CredentialCipher(KEY)


def shape_of(style: str, base: LegacyShape = SMALL) -> LegacyShape:
    return LegacyShape(**{**vars(base), "style": style})


def expected_counts(s: LegacyShape) -> dict[str, int]:
    """Rows per table, derived from the shape independently of the generator."""
    o, a = s.organizations, s.agents
    teams = s.teams if a else 0
    per_org_if_agents = 1 if a else 0
    counts = {
        "organizations": o, "users": o * s.members, "org_members": o * s.members,
        "org_credentials": o * s.credentials, "org_policies": o * s.policies, "api_keys": o,
        "agents": o * a, "agent_links": o * 2 * max(a - 1, 0), "agent_mcp_servers": o * per_org_if_agents,
        "skills": o * per_org_if_agents, "cron_jobs": o * per_org_if_agents,
        "agent_config_permissions": o * per_org_if_agents, "teams": o * teams,
        "team_members": o * teams * min(a, 2), "team_api_keys": o * teams, "team_tasks": o * teams,
        "sessions": o * s.sessions * per_org_if_agents,
        "session_messages": o * s.sessions * s.messages_per_session * per_org_if_agents,
        "episodic_summaries": o * s.sessions * per_org_if_agents,
        "memory_documents": o * s.memory_documents * per_org_if_agents,
        "memory_chunks": o * s.memory_documents * s.chunks_per_document * per_org_if_agents,
        "kg_entities": o * s.kg_entities * per_org_if_agents,
        "kg_relations": o * s.kg_relations * per_org_if_agents * (1 if s.kg_entities else 0),
        "vault_documents": o * s.vault_documents * per_org_if_agents,
        "team_task_attachments": o * (1 if teams and s.vault_documents else 0),
        "traces": o * s.telemetry, "spans": o * s.telemetry * 2, "usage_snapshots": o * s.telemetry,
        "event_outbox": o * s.events * per_org_if_agents,
        "org_audit": o * (1 + s.members + min(a, 2)), "platform_settings": 1,
    }
    return {table: n for table, n in counts.items() if n}


def table_counts(db: Database) -> dict[str, int]:
    with db.transaction(write=False) as tx:
        found = {t.name: int(tx.scalar(sa.select(sa.func.count()).select_from(t))) for t in metadata.sorted_tables}
    return {name: n for name, n in found.items() if n}


def dump(db: Database) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, sorted; nonces and ciphertexts (drawn from the OS) and the autoincrement
    key of usage snapshots (a sequence on PostgreSQL) are left out."""
    skip = {("org_credentials", "nonce"), ("org_credentials", "ciphertext"), ("usage_snapshots", "id")}
    out: dict[str, list[tuple[Any, ...]]] = {}
    with db.engine.connect() as connection:
        for table in metadata.sorted_tables:
            columns = [c for c in table.columns if (table.name, c.name) not in skip]
            rows = connection.execute(sa.select(*columns)).all()
            out[table.name] = sorted((tuple(r) for r in rows), key=repr)
    return out


def wipe(db: Database) -> None:
    with db.transaction() as tx:
        for table in reversed(metadata.sorted_tables):
            tx.execute(sa.delete(table))


def old_form(value: str, prefix: str) -> bool:
    """``value`` is an already-migrated ID of entity ``prefix``: the retired organization prefix with a
    canonical tail, or (other entities) a canonical ID."""
    old = OLD_PREFIXES.get(prefix)
    if old is None:
        return is_canonical_id(value, prefix)
    return value.startswith(old + "-") and is_canonical_id(prefix + value[len(old):], prefix)


def matches(value: str, prefix: str, style: RowStyle) -> bool:
    return UUID.fullmatch(value) is not None if style == "uuid" else old_form(value, prefix)


def id_values(db: Database) -> Iterator[tuple[orphans.IdColumn, str]]:
    for column in orphans.id_columns():
        col = metadata.tables[column.table].c[column.column]
        with db.engine.connect() as connection:
            for (value,) in connection.execute(sa.select(col).where(col.is_not(None), col != "")):
                yield column, value


@pytest.fixture
def generated(db: Database, cipher: CredentialCipher, request: pytest.FixtureRequest) -> LegacyManifest:
    return generate_legacy_database(db, shape_of(request.param), seed=7, cipher=cipher)


STYLES = ["uuid", "prefixed", "mixed"]


@pytest.mark.parametrize("generated", STYLES, indirect=True)
def test_counts_match_the_shape_and_the_manifest(db: Database, generated: LegacyManifest) -> None:
    counts = table_counts(db)
    assert counts == expected_counts(generated.shape)
    assert generated.counts == counts
    for table, n in generated.identity_counts.items():
        assert counts[table] == n == len(generated.identities[table])  # small: complete lists
    assert len(generated.org_styles) == generated.shape.organizations


@pytest.mark.parametrize("generated", STYLES, indirect=True)
def test_every_reference_resolves_and_the_scan_sees_only_legacy_formats(db: Database,
                                                                         generated: LegacyManifest) -> None:
    findings = orphans.scan(db)
    assert not [f for f in findings if not f.problem.startswith("not a valid ")], findings
    if generated.shape.style == "uuid":
        assert findings == []  # bare UUIDs are Agentfy's accepted legacy format
    else:  # only the retired organization prefixes are refused
        assert {f.problem for f in findings} <= {f"not a valid {p} ID" for p in OLD_PREFIXES}


@pytest.mark.parametrize("generated", ["uuid", "prefixed"], indirect=True)
def test_every_id_column_holds_the_requested_style(db: Database, generated: LegacyManifest) -> None:
    style: RowStyle = "uuid" if generated.shape.style == "uuid" else "prefixed"
    seen = 0
    for column, value in id_values(db):
        assert matches(value, column.prefix, style), (column.table, column.column, value)
        seen += 1
    assert seen > 200
    expected_platform = PLATFORM_LEGACY_UUID if style == "uuid" else PLATFORM_PREFIXED_ID
    assert generated.platform_org_id == expected_platform
    assert expected_platform in generated.identities["organizations"]


@pytest.mark.parametrize("generated", ["mixed"], indirect=True)
def test_a_mixed_database_holds_both_styles_per_organization(db: Database, generated: LegacyManifest) -> None:
    assert generated.platform_org_id == PLATFORM_LEGACY_UUID
    assert set(generated.org_styles.values()) == {"uuid", "prefixed"}
    for org_id, style in generated.org_styles.items():
        assert matches(org_id, "org", style)
    tenant_columns = [c for c in orphans.id_columns() if c.column in ("tenant_id", "org_id")]
    with db.engine.connect() as connection:
        for column in tenant_columns:
            table = metadata.tables[column.table]
            id_cols = [c for c in orphans.id_columns() if c.table == column.table]
            rows = connection.execute(sa.select(*(table.c[c.column] for c in id_cols))).all()
            for row in rows:
                style = generated.org_styles[row[id_cols.index(column)]]
                for c, value in zip(id_cols, row, strict=True):
                    if value:
                        assert matches(value, c.prefix, style), (c.table, c.column, value)


@pytest.mark.parametrize("generated", STYLES, indirect=True)
def test_credentials_decrypt_with_the_legacy_owner_only(db: Database, generated: LegacyManifest,
                                                        cipher: CredentialCipher) -> None:
    table = metadata.tables["org_credentials"]
    with db.engine.connect() as connection:
        rows = connection.execute(sa.select(table.c.id, table.c.org_id, table.c.nonce, table.c.ciphertext)).all()
    assert len(rows) == len(generated.credentials) == SMALL.organizations * SMALL.credentials
    for credential_id, org_id, nonce, ciphertext in rows:
        expected = generated.credentials[credential_id]
        assert expected.org_id == org_id
        assert cipher.decrypt(org_id, nonce, ciphertext) == expected.secret
        with pytest.raises(CredentialDecryptionError):  # bound to the legacy ID: another owner fails
            cipher.decrypt("org-silver-days-zxy8s9bpp6hp", nonce, ciphertext)


@pytest.mark.parametrize("generated", STYLES, indirect=True)
def test_ids_inside_json_documents_exist(db: Database, generated: LegacyManifest) -> None:
    with db.engine.connect() as connection:
        def ids_of(table: str, **where: str) -> set[str]:
            t = metadata.tables[table]
            query = sa.select(t.c.id).where(*(t.c[k] == v for k, v in where.items()))
            return set(connection.execute(query).scalars())

        orgs = connection.execute(sa.text("SELECT id, default_agent_id, settings FROM organizations")).all()
        for org_id, default_agent_id, settings_text in orgs:
            settings = json.loads(settings_text)
            agents = ids_of("agents", tenant_id=org_id)
            assert settings["default_agent"] == default_agent_id
            assert default_agent_id in agents
            assert {settings["agents"]["primary"], settings["agents"]["fallback"]} <= agents
            assert settings["escalation_team"] in ids_of("teams", tenant_id=org_id)
            assert set(settings["notify_members"]) == ids_of("org_members", org_id=org_id)
        for org_id, document_text in connection.execute(sa.text("SELECT org_id, document FROM org_policies")):
            document = json.loads(document_text)
            assert set(document["allowed_agents"]) <= ids_of("agents", tenant_id=org_id)
            assert document["approver"] in ids_of("org_members", org_id=org_id)
            assert document["team"] in ids_of("teams", tenant_id=org_id)
            assert document["organization"] == org_id
        for tenant_id, payload in connection.execute(sa.text("SELECT tenant_id, payload FROM cron_jobs")):
            assert json.loads(payload)["agent_id"] in ids_of("agents", tenant_id=tenant_id)
        for tenant_id, payload in connection.execute(sa.text("SELECT tenant_id, payload FROM event_outbox")):
            data = json.loads(payload)
            assert data["tenant_id"] == tenant_id
            assert data["agent_id"] in ids_of("agents", tenant_id=tenant_id)
            assert data["team_id"] in ids_of("teams", tenant_id=tenant_id)
        audit = connection.execute(sa.text("SELECT id, org_id, target_id FROM org_audit")).all()
        assert all(UUID.fullmatch(audit_id) for audit_id, _, _ in audit)  # a technical UUID, any style
        assert {org_id for _, org_id, _ in audit} == set(generated.org_styles)


@pytest.mark.parametrize("generated", ["prefixed"], indirect=True)
def test_keys_and_signing_epoch_are_recorded(db: Database, generated: LegacyManifest) -> None:
    with db.engine.connect() as connection:
        keys = {row[0]: row[1:] for row in connection.execute(
            sa.text("SELECT key_hash, tenant_id, platform_admin FROM api_keys"))}
        team_keys = {row[0]: row[1] for row in connection.execute(
            sa.text("SELECT key_hash, team_id FROM team_api_keys"))}
        epoch = connection.execute(sa.text("SELECT value FROM platform_settings WHERE name = 'signing_epoch'"))
        assert epoch.scalar_one() == "3"
    for org_id, key in generated.api_keys.items():
        tenant_id, platform_admin = keys[hash_api_key(key)]
        assert tenant_id == org_id
        assert bool(platform_admin) == (org_id == PLATFORM_PREFIXED_ID)
    assert generated.api_keys[PLATFORM_PREFIXED_ID] == generated.platform_admin_key
    for team_id, key in generated.team_api_keys.items():
        assert team_keys[hash_team_api_key(key)] == team_id


def test_the_same_seed_gives_the_same_database(db: Database, cipher: CredentialCipher) -> None:
    shape = shape_of("mixed")
    first = generate_legacy_database(db, shape, seed=11, cipher=cipher)
    contents = dump(db)
    wipe(db)
    second = generate_legacy_database(db, shape, seed=11, cipher=cipher, batch_size=1)  # batching is invisible
    assert dump(db) == contents
    assert second == first
    wipe(db)
    other = generate_legacy_database(db, shape, seed=12, cipher=cipher)
    assert set(other.identities["agents"]).isdisjoint(first.identities["agents"])


def test_an_empty_shape_still_makes_the_platform_organization(db: Database, cipher: CredentialCipher) -> None:
    shape = LegacyShape(organizations=1, members=0, credentials=0, policies=0, agents=0, teams=3, sessions=2,
                        memory_documents=1, kg_entities=1, kg_relations=1, vault_documents=1, telemetry=1,
                        events=1)
    manifest = generate_legacy_database(db, shape, cipher=cipher)
    assert table_counts(db) == expected_counts(shape)
    assert manifest.identities["organizations"] == [PLATFORM_LEGACY_UUID]
    assert orphans.scan(db) == []


def test_it_refuses_a_database_that_holds_organizations(db: Database, cipher: CredentialCipher) -> None:
    generate_legacy_database(db, LegacyShape(organizations=1), cipher=cipher)
    with pytest.raises(ValueError, match="already holds organizations"):
        generate_legacy_database(db, LegacyShape(organizations=1), cipher=cipher)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"organizations": 0}, "at least the platform"), ({"agents": -1}, "agents must not be negative"),
    ({"style": "canonical"}, "style must be"),
])
def test_a_shape_is_validated(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        LegacyShape(**kwargs)


def test_a_bigger_database_is_fast_and_batched(sqlite_db: Database, cipher: CredentialCipher) -> None:
    shape = LegacyShape(organizations=50, members=5, credentials=2, policies=2, agents=10, teams=3, sessions=20,
                        messages_per_session=10, memory_documents=20, chunks_per_document=5, kg_entities=20,
                        kg_relations=20, vault_documents=5, telemetry=20, events=10, style="mixed")
    started = time.perf_counter()
    manifest = generate_legacy_database(sqlite_db, shape, seed=3, cipher=cipher, batch_size=1000, sample_limit=100)
    elapsed = time.perf_counter() - started
    assert elapsed < 10, f"{elapsed:.1f} s"
    counts = table_counts(sqlite_db)
    assert counts == expected_counts(shape) == manifest.counts
    assert sum(counts.values()) > 25_000
    assert manifest.identity_counts["memory_chunks"] == 50 * 20 * 5
    assert len(manifest.identities["memory_chunks"]) == 100  # a sample, not every ID
    assert len(manifest.credentials) == 100
    assert not [f for f in orphans.scan(sqlite_db) if not f.problem.startswith("not a valid ")]


def test_the_generator_is_not_part_of_the_installed_package() -> None:
    """It is test and benchmark tooling: an operator's install has no way to write a legacy database."""
    import importlib.util

    from agentfy import cutover

    assert importlib.util.find_spec("agentfy.cutover.legacy") is None
    assert not any(name.startswith("legacy") for name in (p.name for p in Path(cutover.__file__).parent.iterdir()))
