"""`agentfy db seed` and the detection of identities that still need the cutover (both engines)."""

from __future__ import annotations

from typer.testing import CliRunner

from agentfy.cli import app
from agentfy.cutover.detect import legacy_identities
from agentfy.store.db import Database
from tests.store.helpers import count

runner = CliRunner()


def _insert_org(db: Database, org_id: str, slug: str) -> None:
    with db.transaction() as tx:
        tx.execute("INSERT INTO organizations (id, slug, name, settings, created_at) "
                   "VALUES (:id, :slug, 'X', '{}', 'now')", {"id": org_id, "slug": slug})


def test_seed_adds_fixtures_once(db_url: str) -> None:
    first = runner.invoke(app, ["db", "seed", "--database-url", db_url])
    assert first.exit_code == 0 and "agfy_ok_" in first.stdout
    second = runner.invoke(app, ["db", "seed", "--database-url", db_url])
    assert second.exit_code == 0 and "already seeded" in second.stdout
    db = Database(db_url)
    try:
        assert count(db, "organizations") == 2 and count(db, "agents") == 2
        assert legacy_identities(db) == {}
    finally:
        db.dispose()


def test_seed_refuses_a_database_with_legacy_ids(db_url: str) -> None:
    db = Database(db_url)
    try:
        _insert_org(db, "0193a5b0-7000-7000-8000-000000000001", "platform")
        _insert_org(db, "organization-calm-rivers-k8m4p2d7n9x3", "acme")
        assert legacy_identities(db) == {"organizations": 2}
        result = runner.invoke(app, ["db", "seed", "--database-url", db_url])
        assert result.exit_code == 1 and "legacy IDs (organizations: 2)" in result.stderr
        assert "run the ID cutover first" in result.stderr
        assert count(db, "organizations") == 2  # nothing was added, no second platform organization
    finally:
        db.dispose()


def test_the_other_agentfy_legacy_format_stays_and_is_not_counted(db_url: str) -> None:
    db = Database(db_url)
    try:
        _insert_org(db, "org-calm-rivers-jump-0123456789abcdefghjk", "acme")
        assert legacy_identities(db) == {}
    finally:
        db.dispose()


def test_upgrade_on_a_legacy_database_migrates_and_points_at_the_cutover(db_url: str) -> None:
    db = Database(db_url)
    try:
        _insert_org(db, "0193a5b0-7000-7000-8000-000000000001", "platform")
        result = runner.invoke(app, ["db", "upgrade", "--database-url", db_url])
        assert result.exit_code == 0, result.output
        assert "revision" in result.stdout and "agentfy cutover run" in result.stdout
        assert count(db, "organizations") == 1  # no second platform organization next to the legacy one
    finally:
        db.dispose()


def test_the_gateway_refuses_to_start_on_a_legacy_database(db_url: str) -> None:
    from agentfy.cutover.detect import LegacyDatabaseError
    from agentfy.gateway.bootstrap import prepare

    db = Database(db_url)
    try:
        _insert_org(db, "organization-calm-rivers-k8m4p2d7n9x3", "platform")
        try:
            prepare(db)
        except LegacyDatabaseError as error:
            assert "organizations: 1" in str(error) and "agentfy cutover run" in str(error)
        else:
            raise AssertionError("prepare() started on a legacy database")
        assert count(db, "organizations") == 1 and count(db, "api_keys") == 0
    finally:
        db.dispose()


def test_the_gateway_refuses_legacy_ids_beside_the_platform_organization(db_url: str) -> None:
    """The platform organization existing says nothing about the other rows: one legacy key is enough."""
    from agentfy.cutover.detect import LegacyDatabaseError, has_legacy_identities
    from agentfy.gateway.bootstrap import prepare
    from agentfy.store.repos.orgs import PLATFORM_ORG_ID

    db = Database(db_url)
    try:
        _insert_org(db, PLATFORM_ORG_ID, "platform")
        assert not has_legacy_identities(db)
        _insert_org(db, "5b0c1e2a-3d4f-4a5b-8c6d-7e8f9a0b1c2d", "legacy")
        assert has_legacy_identities(db)
        try:
            prepare(db)
        except LegacyDatabaseError as error:
            assert "organizations: 1" in str(error) and "agentfy cutover run" in str(error)
        else:
            raise AssertionError("prepare() started on a database that still holds a legacy ID")
        assert count(db, "api_keys") == 0  # refused before any admin key was issued
        with db.transaction() as tx:
            tx.execute("DELETE FROM organizations WHERE slug = 'legacy'")
            tx.execute("INSERT INTO agents (id, tenant_id, agent_key, display_name, config, created_at, updated_at) "
                       "VALUES ('organization-calm-rivers-k8m4p2d7n9x3', :org, 'a', 'A', '{}', 'now', 'now')",
                       {"org": PLATFORM_ORG_ID})  # an ID without its table's prefix, in any table
        assert legacy_identities(db) == {"agents": 1}
        result = runner.invoke(app, ["db", "upgrade", "--database-url", db_url])
        assert result.exit_code == 0 and "agentfy cutover run" in result.stdout
        with db.transaction() as tx:
            tx.execute("DELETE FROM agents")
        assert prepare(db).platform_org_id == PLATFORM_ORG_ID  # canonical again: it starts
    finally:
        db.dispose()
