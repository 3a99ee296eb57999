"""The connection pool: bounded with a checkout timeout, and rid of connections the server killed."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from fastapi.testclient import TestClient

from agentfy.gateway.app import create_app
from agentfy.settings import SettingsError, load_settings
from agentfy.store import db as db_module
from agentfy.store.db import Database
from agentfy.store.errors import UnavailableError
from agentfy.store.pool import PoolSettings
from agentfy.store.repos import agents, api_keys
from tests.helpers.tenants import make_tenant
from tests.store.helpers import new_agent


@pytest.fixture
def small(db_url: str) -> Iterator[Database]:
    database = Database(db_url, pool=PoolSettings(pool_size=1, max_overflow=1, pool_timeout=0.3,
                                                  overflow_idle_seconds=0))
    yield database
    database.dispose()


def hold(db: Database, release: threading.Event, held: threading.Barrier) -> threading.Thread:
    def run() -> None:
        with db.transaction(write=False):
            held.wait()
            release.wait(10)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_a_full_pool_answers_unavailable_after_the_timeout_never_hangs(small: Database) -> None:
    release, held = threading.Event(), threading.Barrier(3)
    holders = [hold(small, release, held) for _ in range(2)]
    held.wait()
    started = time.monotonic()
    with pytest.raises(UnavailableError, match=r"within 0\.3 s .* size 1 \+ overflow 1"), \
            small.transaction(write=False):
        pass
    assert 0.25 < time.monotonic() - started < 3
    assert small.pool.checked_out == 2
    release.set()
    for thread in holders:
        thread.join()
    assert small.pool.checked_out == 0 and small.pool.idle == 1  # overflow_idle_seconds=0: closed when returned
    with small.transaction(write=False) as tx:
        assert tx.scalar("SELECT 1") == 1


def test_overflow_connections_serve_the_next_burst_and_are_closed_once_no_burst_needs_them(
        db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A burst above ``pool_size`` opens overflow connections; the next burst within the idle window reuses
    them (no connection opened: on PostgreSQL each is a server process forked), and once the window passes
    without a burst, the surplus is closed as transactions return it, down to ``pool_size``."""
    window = 60.0
    database = Database(db_url, pool=PoolSettings(pool_size=1, max_overflow=2, overflow_idle_seconds=window))
    opened: list[object] = []
    connect = database.pool._connect

    def counted() -> tuple[object, object]:
        pair = connect()
        opened.append(pair[0])
        return pair

    monkeypatch.setattr(database.pool, "_connect", counted)
    try:
        def burst() -> None:
            release, held = threading.Event(), threading.Barrier(4)
            holders = [hold(database, release, held) for _ in range(3)]
            held.wait()
            assert database.pool.checked_out == 3
            release.set()
            for thread in holders:
                thread.join()

        burst()
        assert len(opened) == 3 and database.pool.idle == 3  # all kept: returned during the burst
        burst()
        assert len(opened) == 3 and database.pool.idle == 3  # the second burst opened nothing
        database.pool._burst_at -= window + 1  # as if the window had passed without a burst (no sleeping)
        for _ in range(3):
            with database.transaction(write=False) as tx:
                assert tx.scalar("SELECT 1") == 1
        assert len(opened) == 3 and database.pool.idle == 1  # the surplus closed, pool_size kept
    finally:
        database.dispose()


def test_a_waiting_transaction_gets_the_first_connection_returned(db_url: str) -> None:
    database = Database(db_url, pool=PoolSettings(pool_size=1, max_overflow=0, pool_timeout=5))
    try:
        release, held = threading.Event(), threading.Barrier(2)
        holder = hold(database, release, held)
        held.wait()
        threading.Timer(0.2, release.set).start()
        started = time.monotonic()
        with database.transaction(write=False) as tx:
            assert tx.scalar("SELECT 1") == 1
        assert 0.15 < time.monotonic() - started < 4
        holder.join()
    finally:
        database.dispose()


@pytest.mark.parametrize(("env", "message"), [
    ({"AGENTFY_DB_POOL_SIZE": "many"}, r"db\.pool_size 'many': Input should be a valid integer"),
    ({"AGENTFY_DB_POOL_TIMEOUT": "soon"}, r"db\.pool_timeout 'soon': Input should be a valid number"),
    ({"AGENTFY_DB_POOL_SIZE": "0"}, r"db\.pool_size '0': Input should be greater than or equal to 1"),
    ({"AGENTFY_DB_MAX_OVERFLOW": "-1"}, r"db\.max_overflow '-1': Input should be greater than or equal to 0"),
    ({"AGENTFY_DB_POOL_TIMEOUT": "0"}, r"db\.pool_timeout '0': Input should be greater than 0"),
    ({"AGENTFY_DB_OVERFLOW_IDLE_SECONDS": "-1"},
     r"db\.overflow_idle_seconds '-1': Input should be greater than or equal to 0"),
])
def test_pool_settings_from_the_environment_name_a_bad_value(env: dict[str, str], message: str,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(SettingsError, match=message):
        load_settings()


def test_pool_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_settings().db == PoolSettings()
    for name, value in {"AGENTFY_DB_POOL_SIZE": "3", "AGENTFY_DB_MAX_OVERFLOW": "0",
                        "AGENTFY_DB_POOL_TIMEOUT": "1.5", "AGENTFY_DB_OVERFLOW_IDLE_SECONDS": "0"}.items():
        monkeypatch.setenv(name, value)
    assert load_settings().db == PoolSettings(pool_size=3, max_overflow=0, pool_timeout=1.5,
                                              overflow_idle_seconds=0)


def test_the_pool_settings_refuse_bad_values_given_in_code() -> None:
    with pytest.raises(ValueError, match="pool_size\n  Input should be greater than or equal to 1"):
        PoolSettings(pool_size=0)


def test_a_sqlite_write_lock_not_obtained_is_unavailable(sqlite_db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(db_module, "SQLITE_BUSY_TIMEOUT_MS", 100)
    other = Database(sqlite_db.url)
    try:
        with sqlite_db.transaction(), pytest.raises(UnavailableError, match="locked by another writer"), \
                other.transaction():
            pass
    finally:
        other.dispose()


# -- connections the server killed (PostgreSQL) -------------------------------------------------------------------
def terminate_all(db: Database) -> int:
    with psycopg.connect(db.conninfo, autocommit=True) as connection:
        row = connection.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                 "WHERE datname = current_database() AND pid <> pg_backend_pid()").fetchone()
    return int(row[0]) if row else 0


def test_no_transaction_that_starts_after_a_kill_fails(pg_db: Database) -> None:
    acme = make_tenant(pg_db, "acme").scope
    new_agent(pg_db, acme, "bot")
    release, held = threading.Event(), threading.Barrier(4)
    holders = [hold(pg_db, release, held) for _ in range(3)]
    held.wait()
    release.set()
    for thread in holders:
        thread.join()
    assert pg_db.pool.idle == 3
    assert terminate_all(pg_db) >= 3
    for _ in range(5):  # every idle connection is dead: each transaction still succeeds
        with pg_db.transaction(write=False) as tx:
            assert agents.resolve_agent(tx, acme, "bot").agent_key == "bot"
    with pg_db.transaction() as tx:
        new_agent_after = agents.create_agent(tx, acme, agent_key="after")
    assert new_agent_after.agent_key == "after"


def test_a_statement_whose_connection_is_killed_is_unavailable_and_the_connection_is_dropped(pg_db: Database) -> None:
    acme = make_tenant(pg_db, "acme").scope
    with pytest.raises(UnavailableError, match="lost"), pg_db.transaction() as tx:
        pid = tx.scalar("SELECT pg_backend_pid()")
        with psycopg.connect(pg_db.conninfo, autocommit=True) as killer:
            killer.execute("SELECT pg_terminate_backend(%s)", (pid,))
        agents.create_agent(tx, acme, agent_key="never")
    assert pg_db.pool.checked_out == 0
    with pg_db.transaction(write=False) as tx:
        assert agents.list_agents(tx, acme) == []


def test_the_api_answers_503_unavailable_when_no_connection_is_free(db_url: str, tmp_path: Path) -> None:
    database = Database(db_url, pool=PoolSettings(pool_size=1, max_overflow=0, pool_timeout=0.2))
    try:
        acme = make_tenant(database, "acme").scope
        with database.transaction() as tx:
            key = api_keys.create_api_key(tx, acme, name="k", role="owner").key
        with TestClient(create_app(database, signing_secret=b"s" * 32)) as client:
            with database.transaction(write=False):  # the only connection
                answer = client.get("/v1/agents", headers={"Authorization": f"Bearer {key}"})
            assert answer.status_code == 503
            assert answer.json()["error"]["code"] == "unavailable"
            assert "SELECT" not in answer.text
            assert client.get("/v1/agents", headers={"Authorization": f"Bearer {key}"}).status_code == 200
    finally:
        database.dispose()
