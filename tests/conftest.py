"""Shared fixtures: the database on both engines.

Storage tests take the ``db`` fixture, which runs each test once on SQLite and once on PostgreSQL.
PostgreSQL tests create their own database on the server at ``$AGENTFY_TEST_PG_URL`` (default
``postgresql://postgres@127.0.0.1:5432/postgres``) and drop it at the end.  Without a server they are
skipped with the reason, except under ``CI=true``, where a missing server is an error: CI must run them.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentfy.store.db import Database
from agentfy.store.migrate import upgrade
from tests.helpers.databases import IN_CI, PG_ADMIN_URL, PgDatabases, pg_problem, truncate_all


@pytest.fixture(scope="session")
def pg_server() -> str:
    """The admin URL of a reachable PostgreSQL server (skip locally without one; fail in CI)."""
    problem = pg_problem()
    if problem:
        if IN_CI:
            pytest.fail(f"{problem}; under CI=true the PostgreSQL tests must run")
        pytest.skip(problem)
    return PG_ADMIN_URL


@pytest.fixture(scope="session")
def pg_databases(pg_server: str) -> Iterator[PgDatabases]:
    databases = PgDatabases(pg_server)
    yield databases
    databases.drop_all()


@pytest.fixture(scope="session")
def pg_migrated_url(pg_databases: PgDatabases) -> str:
    """One migrated PostgreSQL database for the session; tests get it emptied (see ``db``)."""
    url = pg_databases.url(pg_databases.create())
    db = Database(url)
    upgrade(db)
    db.dispose()
    return url


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated SQLite file, copied for each test (faster than migrating each time)."""
    path = tmp_path_factory.mktemp("sqlite-template") / "template.db"
    db = Database(f"sqlite:///{path}")
    upgrade(db)
    with db.engine.connect() as connection:
        connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    db.dispose()
    return path


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A migrated, empty database URL on each engine."""
    if request.param == "sqlite":
        template: Path = request.getfixturevalue("sqlite_template")
        target = tmp_path / "agentfy.db"
        shutil.copyfile(template, target)
        return f"sqlite:///{target}"
    url: str = request.getfixturevalue("pg_migrated_url")
    truncate_all(url)
    return url


@pytest.fixture
def db(db_url: str) -> Iterator[Database]:
    database = Database(db_url)
    yield database
    database.dispose()


@pytest.fixture
def sqlite_db(sqlite_template: Path, tmp_path: Path) -> Iterator[Database]:
    """A migrated SQLite database, for what only SQLite has (pragmas, the file itself)."""
    target = tmp_path / "agentfy.db"
    shutil.copyfile(sqlite_template, target)
    database = Database(f"sqlite:///{target}")
    yield database
    database.dispose()


@pytest.fixture
def pg_db(pg_migrated_url: str) -> Iterator[Database]:
    """A migrated, empty PostgreSQL database, for what only PostgreSQL has (the change feed's listening
    connection, advisory locks, killed backends)."""
    truncate_all(pg_migrated_url)
    database = Database(pg_migrated_url)
    yield database
    database.dispose()
