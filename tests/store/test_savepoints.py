"""Savepoints and pipelined statements (both engines): the same outcomes whether each command is a round trip of
its own (SQLite) or PostgreSQL's savepoint commands travel with the statements around them."""

from __future__ import annotations

import pytest

from agentfy.store.db import Database, Tx
from agentfy.store.errors import StoreError
from tests.helpers.statements import recording
from tests.helpers.tenants import make_tenant

_INSERT = "INSERT INTO skills (id, tenant_id, owner_id, name, content, created_at) VALUES (:id, :t, 'u', :name, '', '')"
_NAMES = "SELECT name FROM skills ORDER BY name"


@pytest.fixture
def tenant(db: Database) -> str:
    return str(make_tenant(db, "acme").id)


def _add(tx: Tx, tenant: str, name: str) -> None:
    tx.execute(_INSERT, {"id": tx.db.mint("skill"), "t": tenant, "name": name})


def _names(db: Database) -> list[str]:
    with db.transaction(write=False) as tx:
        return [row[0] for row in tx.all(_NAMES)]


def test_a_savepoint_keeps_its_statements_and_the_transaction_goes_on(db: Database, tenant: str) -> None:
    with db.transaction() as tx:
        with tx.savepoint():
            _add(tx, tenant, "inside")
        _add(tx, tenant, "after")  # the deferred RELEASE goes with this statement on PostgreSQL
        with tx.savepoint():
            _add(tx, tenant, "last")  # its RELEASE goes with the COMMIT
    assert _names(db) == ["after", "inside", "last"]


def test_a_failed_statement_in_a_savepoint_is_undone_alone(db: Database, tenant: str) -> None:
    with db.transaction() as tx:
        _add(tx, tenant, "before")
        with pytest.raises(StoreError), tx.savepoint():
            _add(tx, tenant, "undone")
            tx.execute("INSERT INTO skills (id) VALUES (NULL)")  # fails in the database
        _add(tx, tenant, "after")
    assert _names(db) == ["after", "before"]


def test_the_first_statement_of_a_savepoint_failing_is_undone_alone(db: Database, tenant: str) -> None:
    # On PostgreSQL the SAVEPOINT is sent with this very statement: the savepoint exists, the rollback finds it.
    with db.transaction() as tx:
        with pytest.raises(StoreError), tx.savepoint():
            tx.execute("INSERT INTO skills (id) VALUES (NULL)")
        _add(tx, tenant, "after")
    assert _names(db) == ["after"]


def test_nested_savepoints_and_blocks_that_ran_nothing(db: Database, tenant: str) -> None:
    with db.transaction() as tx:
        with tx.savepoint():
            pass  # nothing ran: nothing is sent
        with pytest.raises(ValueError, match="before any statement"), tx.savepoint():
            raise ValueError("before any statement")
        with pytest.raises(StoreError), tx.savepoint():
            _add(tx, tenant, "outer, undone")
            with tx.savepoint():
                _add(tx, tenant, "inner, released then undone with the outer")
            tx.execute("INSERT INTO skills (id) VALUES (NULL)")
        with tx.savepoint():
            _add(tx, tenant, "outer kept")
            with pytest.raises(StoreError), tx.savepoint():
                tx.execute("INSERT INTO skills (id) VALUES (NULL)")
            _add(tx, tenant, "after the inner failure")
    assert _names(db) == ["after the inner failure", "outer kept"]


def test_a_savepoint_costs_no_round_trip_of_its_own_on_postgresql(db: Database, tenant: str) -> None:
    with recording(db) as recorded, db.transaction() as tx, tx.savepoint():
        _add(tx, tenant, "a")
    assert len(recorded.statements) == 5, recorded.summary()  # BEGIN, SAVEPOINT, INSERT, RELEASE, COMMIT
    assert recorded.round_trips == (5 if db.dialect == "sqlite" else 3), recorded.summary()


def test_pipelined_statements_return_their_rows_in_order(db: Database, tenant: str) -> None:
    with recording(db) as recorded, db.transaction() as tx:
        first, second, third = tx.pipelined([
            ("SELECT 1", None), (_INSERT, {"id": db.mint("skill"), "t": tenant, "name": "p"}), (_NAMES, None)])
    assert (first, second, third) == ([(1,)], [], [("p",)])
    assert recorded.round_trips == (5 if db.dialect == "sqlite" else 3), recorded.summary()


def test_a_failure_in_a_pipeline_fails_the_transaction_and_runs_nothing_after_it(db: Database,
                                                                                   tenant: str) -> None:
    with pytest.raises(StoreError), db.transaction() as tx:
        tx.pipelined([(_INSERT, {"id": db.mint("skill"), "t": tenant, "name": "rolled back"}),
                      ("INSERT INTO skills (id) VALUES (NULL)", None),
                      (_INSERT, {"id": db.mint("skill"), "t": tenant, "name": "never run"})])
    assert _names(db) == []
    with db.transaction() as tx, tx.savepoint():  # the connection is fine for the next transaction
        tx.pipelined([(_INSERT, {"id": db.mint("skill"), "t": tenant, "name": "in a savepoint"})])
    assert _names(db) == ["in a savepoint"]
