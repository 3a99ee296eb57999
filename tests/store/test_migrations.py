"""Migrations run on both engines, match the models, and the database itself refuses junk IDs."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from agentfy.gateway.bootstrap import Bootstrap, prepare
from agentfy.store.db import Database
from agentfy.store.errors import DanglingReferenceError, InvalidInputError
from agentfy.store.migrate import current_revision, head_revision, is_at_head, upgrade
from agentfy.store.schema import metadata
from agentfy.store.search_index import is_index_object
from tests.helpers.databases import PgDatabases


def _assert_no_drift(db: Database) -> None:
    with db.engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True,
                                                                "compare_server_default": True,
                                                                "include_object": is_index_object})
        diff = compare_metadata(context, metadata)
    assert diff == [], f"models and migrations drifted: {diff}"


def test_upgrade_head_on_a_fresh_sqlite_file_and_no_drift(tmp_path) -> None:  # type: ignore[no-untyped-def]
    db = Database(f"sqlite:///{tmp_path / 'fresh.db'}")
    assert current_revision(db) is None and not is_at_head(db)
    upgrade(db)
    assert current_revision(db) == head_revision(db) and is_at_head(db)
    _assert_no_drift(db)
    upgrade(db)  # a second upgrade is a no-op
    db.dispose()


@pytest.mark.slow  # every migration from an empty PostgreSQL database: about 4 seconds
def test_upgrade_head_on_a_fresh_postgresql_database_and_no_drift(pg_databases: PgDatabases) -> None:
    name = pg_databases.create()
    db = Database(pg_databases.url(name))
    try:
        upgrade(db)
        assert is_at_head(db)
        _assert_no_drift(db)
    finally:
        db.dispose()
        pg_databases.drop(name)


def test_sqlite_connections_enforce_foreign_keys_and_use_wal(sqlite_db: Database) -> None:
    with sqlite_db.transaction() as tx:
        assert tx.scalar("PRAGMA foreign_keys") == 1
        assert tx.scalar("PRAGMA journal_mode") == "wal"
        assert tx.scalar("PRAGMA busy_timeout") == 5000


@pytest.mark.parametrize("junk", ["", "Agent-calm-rivers-k8m4p2d7n9x3", "agent calm", "a" * 81, "agent_1",
                                  "agent-calm-rivers-k8m4p2d7n9x3\n", "agent-c\u0430lm"])
def test_raw_sql_writes_of_junk_ids_fail_at_the_database(db: Database, junk: str) -> None:
    with pytest.raises(InvalidInputError, match="is_id"), db.transaction() as tx:
        tx.execute("INSERT INTO organizations (id, slug, name, settings, created_at) "
                   "VALUES (:id, 'acme', 'Acme', '{}', 'now')", {"id": junk})
    with db.transaction() as tx:
        assert tx.scalar("SELECT count(*) FROM organizations") == 0


def test_raw_sql_reference_to_nothing_fails_at_the_database(db: Database) -> None:
    with pytest.raises(DanglingReferenceError), db.transaction() as tx:
        tx.execute("INSERT INTO agents (id, tenant_id, agent_key, display_name, config, created_at, updated_at) "
                   "VALUES ('agent-calm-rivers-k8m4p2d7n9x3', 'org-calm-rivers-k8m4p2d7n9x3', 'bot', 'Bot', '{}', "
                   "'now', 'now')")


def test_errors_never_carry_sql_text(db: Database) -> None:
    with pytest.raises(Exception) as caught, db.transaction() as tx:
        tx.execute("INSERT INTO organizations (id) VALUES (:id)", {"id": "Junk"})
    assert "INSERT" not in str(caught.value) and "organizations" not in str(caught.value)


def test_sqlite_error_type_is_translated_not_leaked(tmp_path) -> None:  # type: ignore[no-untyped-def]
    db = Database(f"sqlite:///{tmp_path / 'x.db'}")
    upgrade(db)
    with pytest.raises(Exception) as caught, db.transaction() as tx:
        tx.execute("SELECT * FROM no_such_table")
    assert not isinstance(caught.value, sqlite3.Error)
    assert "no_such_table" not in str(caught.value)
    db.dispose()


def test_every_table_is_in_the_migration(db: Database) -> None:
    with db.engine.connect() as connection:
        names = set(sa.inspect(connection).get_table_names())
    assert set(metadata.tables) <= names


def _prepare_together(url: str, count: int) -> list[object]:
    """``count`` threads run the whole start-up (migrate, platform organization, first admin key) at once."""
    results: list[object] = []
    start = threading.Barrier(count)

    def run() -> None:
        db = Database(url)
        try:
            start.wait()
            results.append(prepare(db))
        except Exception as error:  # collected: the assertion names it
            results.append(error)
        finally:
            db.dispose()

    threads = [threading.Thread(target=run) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def _check_one_start_did_the_work(results: list[object], db: Database) -> None:
    assert all(isinstance(r, Bootstrap) for r in results), results
    boots = [r for r in results if isinstance(r, Bootstrap)]
    assert sum(b.new_admin_key is not None for b in boots) == 1  # exactly one start prints the first key
    assert sum(b.created_platform_org for b in boots) == 1
    assert current_revision(db) == head_revision(db)


def test_starts_on_an_empty_sqlite_file_take_turns(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    results = _prepare_together(url, 3)
    db = Database(url)
    try:
        _check_one_start_did_the_work(results, db)
    finally:
        db.dispose()


def test_starts_on_an_empty_postgresql_database_take_turns(pg_databases: PgDatabases) -> None:
    name = pg_databases.create()
    try:
        url = pg_databases.url(name)
        results = _prepare_together(url, 3)
        db = Database(url)
        try:
            _check_one_start_did_the_work(results, db)
        finally:
            db.dispose()
    finally:
        pg_databases.drop(name)
