"""What a transaction costs in round trips on PostgreSQL.  A read begins no transaction: its plain reads run as
statements of their own (no ``BEGIN``, no ``COMMIT``: two round trips of the three a one-statement read cost),
and the first statement that needs a transaction begins one, which the block's end commits or rolls back as
any other.  A write's ``BEGIN`` is sent with its first statement, in one round trip (a pipeline)."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
import sqlalchemy as sa
from hypothesis import given
from hypothesis import strategies as st
from opentelemetry import trace

from agentfy.ids import format_id
from agentfy.store import db as db_module
from agentfy.store.changefeed import Change
from agentfy.store.db import Database
from agentfy.store.errors import ConflictError, NotFoundError, UnavailableError
from agentfy.store.repos import agents
from tests.helpers.statements import recording
from tests.helpers.tenants import make_tenant
from tests.store.helpers import count, new_agent


def test_a_read_sends_its_statements_alone(pg_db: Database) -> None:
    acme = make_tenant(pg_db, "acme").scope
    bot = new_agent(pg_db, acme, "bot")
    with recording(pg_db) as recorded, pg_db.transaction(write=False) as tx:
        assert agents.get_agent(tx, acme, bot.id).agent_key == "bot"
        assert [a.agent_key for a in agents.list_agents(tx, acme)] == ["bot"]
    assert recorded.transactions == 0 and recorded.round_trips == 2, recorded.summary()
    assert pg_db.pool.checked_out == 0


def test_a_read_on_sqlite_is_still_one_transaction(sqlite_db: Database) -> None:
    """SQLite's BEGIN and COMMIT cost microseconds, and its read transaction is one snapshot: kept."""
    acme = make_tenant(sqlite_db, "acme").scope
    bot = new_agent(sqlite_db, acme, "bot")
    with recording(sqlite_db) as recorded, sqlite_db.transaction(write=False) as tx:
        agents.get_agent(tx, acme, bot.id)
    assert recorded.statements[0] == "BEGIN" and recorded.statements[-1] == "COMMIT"


def test_a_write_in_a_read_begins_a_transaction_that_rolls_back_whole(pg_db: Database) -> None:
    """A block declared a read that writes is still atomic from its first write on: the failure after two
    inserts leaves neither."""
    acme = make_tenant(pg_db, "acme").scope
    before = count(pg_db, "agents")
    with pytest.raises(NotFoundError), recording(pg_db) as recorded, pg_db.transaction(write=False) as tx:
        agents.list_agents(tx, acme)
        agents.create_agent(tx, acme, agent_key="one")
        agents.create_agent(tx, acme, agent_key="two")
        agents.get_agent(tx, acme, format_id("agent"))  # no such agent
    assert count(pg_db, "agents") == before
    assert recorded.transactions == 1 and recorded.statements[-1] == "ROLLBACK", recorded.summary()
    assert not recorded.statements[0].startswith("BEGIN"), "the read before the first write ran on its own"


def test_a_row_lock_taken_in_a_read_is_held_until_the_block_ends(pg_db: Database) -> None:
    acme = make_tenant(pg_db, "acme").scope
    bot = new_agent(pg_db, acme, "bot")
    locked = sa.text("SELECT id FROM agents WHERE id = :id FOR UPDATE")
    with pg_db.transaction(write=False) as tx:
        assert tx.scalar(locked, {"id": bot.id}) == bot.id
        with psycopg.connect(pg_db.conninfo, autocommit=True) as other, pytest.raises(psycopg.errors.LockNotAvailable):
            other.execute("SELECT id FROM agents WHERE id = %s FOR UPDATE NOWAIT", (bot.id,))
    with psycopg.connect(pg_db.conninfo, autocommit=True) as other:  # released at the block's end
        assert other.execute("SELECT id FROM agents WHERE id = %s FOR UPDATE NOWAIT", (bot.id,)).fetchone()


def test_a_change_recorded_in_a_read_is_sent_when_it_commits(pg_db: Database) -> None:
    """A recorded change is notified in its transaction, at COMMIT: recording one begins it."""
    acme = make_tenant(pg_db, "acme").scope
    seen: list[Change] = []

    def heard(change: Change) -> None:
        seen.append(change)

    pg_db.changes.on_committed(heard)
    with recording(pg_db) as recorded, pg_db.transaction(write=False) as tx:
        agents.create_agent(tx, acme, agent_key="noted")
    assert recorded.transactions == 1 and recorded.statements[-1] == "COMMIT", recorded.summary()
    assert any(change.key == "noted" for change in seen)


@pytest.mark.parametrize("traced", [False, True], ids=["untraced", "traced"])
def test_a_read_whose_connection_dies_between_statements_goes_on_on_a_fresh_one(pg_db: Database,
                                                                                   traced: bool) -> None:
    acme = make_tenant(pg_db, "acme").scope
    new_agent(pg_db, acme, "bot")
    if traced:  # statements then run in spans (a no-op tracer here): the same rule
        pg_db.tracer = trace.get_tracer("tests")
    with pg_db.transaction(write=False) as tx:
        pid = tx.scalar("SELECT pg_backend_pid()")
        with psycopg.connect(pg_db.conninfo, autocommit=True) as killer:
            killer.execute("SELECT pg_terminate_backend(%s)", (pid,))
        assert agents.resolve_agent(tx, acme, "bot").agent_key == "bot"
        assert tx.scalar("SELECT pg_backend_pid()") != pid
    assert pg_db.pool.checked_out == 0


def test_a_read_that_cannot_get_a_fresh_connection_is_unavailable_and_gives_back_none(
        pg_db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its dead connection is dropped, never returned to the pool; the pool's count stays right."""
    acme = make_tenant(pg_db, "acme").scope
    with pytest.raises(UnavailableError), pg_db.transaction(write=False) as tx:
        pid = tx.scalar("SELECT pg_backend_pid()")
        with psycopg.connect(pg_db.conninfo, autocommit=True) as killer:
            killer.execute("SELECT pg_terminate_backend(%s)", (pid,))

        def no_connection(*_: object, **__: object) -> object:
            raise UnavailableError("no connection is free")

        monkeypatch.setattr(db_module.Tx, "_acquire", no_connection)
        agents.list_agents(tx, acme)
    monkeypatch.undo()
    assert pg_db.pool.checked_out == 0
    with pg_db.transaction(write=False) as tx:  # and what is pooled is alive
        assert agents.list_agents(tx, acme) == []


# -- writes: BEGIN with the first statement ----------------------------------------------------------------------
class _Pipelines:
    """Counts psycopg pipelines entered (each is one round trip for what it holds)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.entered = 0
        pipeline = psycopg.Connection.pipeline

        def counted(connection: psycopg.Connection[Any]) -> Any:
            self.entered += 1
            return pipeline(connection)

        monkeypatch.setattr(psycopg.Connection, "pipeline", counted)


def test_a_writes_begin_goes_with_its_first_statement(pg_db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    acme = make_tenant(pg_db, "acme").scope
    pipelines = _Pipelines(monkeypatch)
    with recording(pg_db) as recorded, pg_db.transaction() as tx:
        made = agents.create_agent(tx, acme, agent_key="bot")
        agents.get_agent(tx, acme, made.id)
    assert recorded.statements[0] == "BEGIN" and recorded.statements[-1] == "COMMIT", recorded.summary()
    assert pipelines.entered == 1  # BEGIN and the INSERT: one round trip
    with pg_db.transaction(write=False) as tx:
        assert agents.get_agent(tx, acme, made.id).agent_key == "bot"


def test_a_write_that_runs_nothing_sends_nothing(pg_db: Database) -> None:
    with recording(pg_db) as recorded, pg_db.transaction():
        pass
    assert recorded.statements == []
    assert pg_db.pool.checked_out == 0


def test_a_write_whose_first_statement_fails_is_rolled_back_and_its_connection_reused(pg_db: Database) -> None:
    acme = make_tenant(pg_db, "acme").scope
    new_agent(pg_db, acme, "bot")
    with recording(pg_db) as recorded:
        with pytest.raises(ConflictError), pg_db.transaction() as tx:
            agents.create_agent(tx, acme, agent_key="bot")  # taken: the first statement fails
        with pg_db.transaction() as tx:
            agents.create_agent(tx, acme, agent_key="other")
    assert recorded.statements.count("ROLLBACK") == 1, recorded.summary()
    with pg_db.transaction(write=False) as tx:
        assert sorted(a.agent_key for a in agents.list_agents(tx, acme)) == ["bot", "other"]
    assert pg_db.pool.checked_out == 0


def test_a_write_on_a_killed_connection_begins_on_a_fresh_one(pg_db: Database) -> None:
    acme = make_tenant(pg_db, "acme").scope
    with pg_db.transaction(write=False) as tx:
        pid = tx.scalar("SELECT pg_backend_pid()")
    with psycopg.connect(pg_db.conninfo, autocommit=True) as killer:
        killer.execute("SELECT pg_terminate_backend(%s)", (pid,))
    with pg_db.transaction() as tx:
        made = agents.create_agent(tx, acme, agent_key="after")
        assert tx.scalar("SELECT pg_backend_pid()") != pid
    with pg_db.transaction(write=False) as tx:
        assert agents.get_agent(tx, acme, made.id).agent_key == "after"
    assert pg_db.pool.checked_out == 0


def test_a_first_statement_that_fails_on_the_fresh_connection_leaves_no_transaction_in_the_pool(
        pg_db: Database) -> None:
    """Its pooled connection was dead, so BEGIN and the statement ran again on a new one, where the statement
    failed (a taken key): that transaction is rolled back, and the connection goes back to the pool clean."""
    acme = make_tenant(pg_db, "acme").scope
    new_agent(pg_db, acme, "bot")
    with pg_db.transaction(write=False) as tx:
        pid = tx.scalar("SELECT pg_backend_pid()")
    with psycopg.connect(pg_db.conninfo, autocommit=True) as killer:
        killer.execute("SELECT pg_terminate_backend(%s)", (pid,))
    with pytest.raises(ConflictError), pg_db.transaction() as tx:
        agents.create_agent(tx, acme, agent_key="bot")
    assert pg_db.pool.checked_out == 0
    with psycopg.connect(pg_db.conninfo, autocommit=True) as watcher:
        in_transaction = watcher.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                                         " AND state LIKE 'idle in transaction%%'").fetchone()
    assert in_transaction == (0,)
    for number in range(3):  # and whichever pooled connection the next ones get, they work
        with pg_db.transaction() as tx:
            agents.create_agent(tx, acme, agent_key=f"more-{number}")


# -- what counts as a plain read ------------------------------------------------------------------------------
PLAIN = ["SELECT 1", "select id from agents where tenant_id = %s", "  (SELECT a FROM t) UNION (SELECT b FROM u)",
         "SELECT count(*) FROM sessions WHERE status = 'open'", "SELECT pg_backend_pid()",
         "SELECT information FROM forum"]  # FOR and INTO only as parts of other words
NOT_PLAIN = ["SELECT id FROM agents FOR UPDATE", "select id from t for no key update skip locked",
             "SELECT 1 FROM t FOR SHARE", "SELECT 1 FROM t FOR KEY SHARE", "SELECT pg_notify('c', 'x')",
             "SELECT nextval('s')", "SELECT set_config('a', 'b', true)", "SELECT pg_advisory_xact_lock(1)",
             "SELECT pg_try_advisory_lock(1)", "SELECT txid_current()", "SELECT * INTO copy FROM agents",
             "INSERT INTO t VALUES (1)", "UPDATE t SET a = 1", "DELETE FROM t", "WITH x AS (DELETE FROM t) SELECT 1",
             "SAVEPOINT sp_1", "LOCK TABLE agents"]


@pytest.mark.parametrize("sql", PLAIN)
def test_plain_reads(sql: str) -> None:
    assert db_module._plain_read(sql)


@pytest.mark.parametrize("sql", NOT_PLAIN)
def test_statements_that_need_a_transaction(sql: str) -> None:
    assert not db_module._plain_read(sql)


@given(prefix=st.sampled_from(["SELECT id FROM agents", "SELECT a, b FROM t WHERE c = %s ORDER BY a LIMIT 5"]),
       clause=st.sampled_from(["FOR UPDATE", "FOR NO KEY UPDATE", "FOR SHARE", "FOR KEY SHARE"]),
       space=st.text(alphabet=" \t\n", min_size=1, max_size=3), upper=st.booleans())
def test_a_row_lock_however_written_is_never_a_plain_read(prefix: str, clause: str, space: str, upper: bool) -> None:
    sql = f"{prefix}{space}{space.join(clause.split())}"
    assert not db_module._plain_read(sql.upper() if upper else sql.lower())
