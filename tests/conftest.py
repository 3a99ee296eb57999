"""Shared fixtures: the database on both engines.

Storage tests take the ``db`` fixture, which runs each test once on SQLite and once on PostgreSQL.
PostgreSQL tests create their own database on the server at ``$AGENTFY_TEST_PG_URL`` (default
``postgresql://postgres@127.0.0.1:5432/postgres``) and drop it at the end.  Without a server they are
skipped with the reason, except under ``CI=true``, where a missing server is an error: CI must run them.

Property tests are deterministic: the ``deterministic`` hypothesis profile, loaded here for every test module
before any is imported, seeds each test's data from the test's own code (``derandomize``), so a run draws the
same examples as the last one with the same code and a failure seen once is seen again.  No example database
either: what a run tries depends on the code alone, never on what an earlier run on this machine happened to
find.  Exploring with fresh randomness is ``make fuzz``'s job, or ``pytest --hypothesis-profile=explore``
(random seeds, the failures it finds kept in ``.hypothesis/`` and tried first on the next run).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.database import DirectoryBasedExampleDatabase

from agentfy.store.db import Database
from agentfy.store.migrate import upgrade
from tests.helpers.databases import IN_CI, PG_ADMIN_URL, PgDatabases, pg_problem, truncate_all

#: ``make test`` and CI: the same examples on every run with the same code.  No deadline: on a loaded 2-core
#: machine a slow example is the machine, not the code, and a deadline would make the result depend on load.
#: ``print_blob``: a failure prints the ``@reproduce_failure`` line that replays it exactly.
#: ``too_slow`` is a timing health check, so it is off for the same reason as the deadline.
settings.register_profile("deterministic", derandomize=True, database=None, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
#: Opt-in exploration (``pytest --hypothesis-profile=explore``): fresh randomness each run, failures saved in
#: the git-ignored ``.hypothesis/`` directory and replayed first next time.
settings.register_profile("explore", derandomize=False, deadline=None, print_blob=True,
                          database=DirectoryBasedExampleDatabase(Path(__file__).resolve().parents[1] / ".hypothesis"
                                                                 / "examples"),
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("deterministic")


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


@pytest.fixture
def pg_processes(pg_db: Database) -> Iterator[tuple[Database, Database]]:
    """Two handles on one PostgreSQL database, each listening as a gateway process does (two processes'
    change feeds, broadcasts and markers, in one test process)."""
    pair = (Database(pg_db.url), Database(pg_db.url))
    try:
        for handle in pair:
            assert handle.changes.start_listening(handle.conninfo)
            assert handle.changes.wait_listening(10)
        yield pair
    finally:
        for handle in pair:
            handle.changes.stop_listening()
            handle.dispose()
