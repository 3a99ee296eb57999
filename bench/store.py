"""Benchmark of the store against plain SQL doing the same work, on SQLite and PostgreSQL.

Run: ``make bench`` (or ``.venv/bin/python -m bench.store``).  For each engine it prints, each with a
baseline measured alternately in the same run:

* agent create rate: ``create_agent`` in its own transaction vs the same rows written by plain SQL in one
  transaction on a driver connection — the agent's ``INSERT`` and its change-feed record: the ``change_log``
  row on SQLite, the ``pg_notify`` on PostgreSQL (goal: within 1.5x, i.e. a ratio of at least 0.67);
* ``resolve_agent`` by ID and by key vs the plain ``SELECT`` by primary key / by (tenant, key), many in one
  transaction, and one per transaction vs the driver's ``BEGIN``/``SELECT``/``COMMIT``, as are ``get_agent``
  (by ID) and ``get_agent_by_key`` one per transaction (goal on both engines: within 1.3x, a ratio of at
  least 0.77); on PostgreSQL a store read begins no transaction (one statement, no ``BEGIN``/``COMMIT``:
  see ``Database.transaction``), so each of those rows is also compared with the driver's lone ``SELECT`` in
  autocommit, the same work as the store's;
* a 100,000-row knowledge-graph batch ingest (validated in full before the first write) vs one plain
  ``executemany`` of the same rows.

PostgreSQL: a scratch database is created on ``$AGENTFY_BENCH_PG_URL`` (default the local server) and
dropped at the end; without a server that part is skipped with the reason.
"""

from __future__ import annotations

import itertools
import sqlite3
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg

from agentfy.identity import Scope
from agentfy.ids import format_id
from agentfy.store.changefeed import Change
from agentfy.store.changefeed.changes import CHANNEL
from agentfy.store.db import Database, now
from agentfy.store.migrate import upgrade
from agentfy.store.repos import agents, knowledge, orgs
from bench.harness import compare, header
from bench.postgres import scratch_database, server_problem
from bench.verdicts import record_comparison

INGEST_ROWS = 100_000
#: One look-up per transaction (what a request pays) within 1.3x of the driver's BEGIN/SELECT/COMMIT, on both
#: engines (on SQLite the store's own overhead is all there is to see; on PostgreSQL the round trips dominate).
EACH_GOAL = 1 / 1.3
#: Creating an agent within 1.5x of plain SQL writing the same rows.
CREATE_GOAL = 0.67
_keys = itertools.count()

INSERT_AGENT = ("INSERT INTO agents (id, tenant_id, agent_key, display_name, config, created_at, updated_at) "
                "VALUES ({p}, {p}, {p}, {p}, '{{}}', {p}, {p})")
#: The change feed's record of a created agent, as plain SQL writes it: a change_log row (SQLite), a
#: notification (PostgreSQL).  The payload is the same JSON the store sends.
LOG_CHANGE = "INSERT INTO change_log (origin, payload, created_at) VALUES (?, ?, ?)"
NOTIFY = "SELECT pg_notify(%s, %s)"
SELECT_BY_ID = ("SELECT id, tenant_id, agent_key, display_name, config, created_at, updated_at, deleted_at "
                "FROM agents WHERE tenant_id = {p} AND id = {p} AND deleted_at IS NULL")
SELECT_BY_KEY = ("SELECT id, tenant_id, agent_key, display_name, config, created_at, updated_at, deleted_at "
                 "FROM agents WHERE tenant_id = {p} AND agent_key = {p} AND deleted_at IS NULL")
INSERT_ENTITY = ("INSERT INTO kg_entities (id, tenant_id, agent_id, user_id, name, entity_type, properties, "
                 "created_at) VALUES ({p}, {p}, {p}, {p}, {p}, {p}, '{{}}', {p})")


class Plain:
    """The baseline: a bare driver connection, positional parameters, no validation."""

    def __init__(self, db: Database) -> None:
        self.sqlite = db.dialect == "sqlite"
        if self.sqlite:
            path = db.engine.url.database
            assert path
            self.conn: Any = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            self.conn.execute("PRAGMA foreign_keys = ON")
            self.conn.execute("PRAGMA synchronous = NORMAL")
            self.p = "?"
        else:
            url = db.engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
            self.conn = psycopg.connect(url)
            #: A read as the store runs it on PostgreSQL: one statement, no BEGIN/COMMIT.
            self.lone: Any = psycopg.connect(url, autocommit=True).cursor()
            self.p = "%s"
        self.cur = self.conn.cursor()

    def sql(self, template: str) -> str:
        return template.format(p=self.p)

    def begin(self, *, write: bool = True) -> None:
        if self.sqlite:
            self.cur.execute("BEGIN IMMEDIATE" if write else "BEGIN")

    def commit(self) -> None:
        if self.sqlite:
            self.cur.execute("COMMIT")
        else:
            self.conn.commit()

    def close(self) -> None:
        if not self.sqlite:
            self.lone.connection.close()
        self.conn.close()


def databases() -> Iterator[tuple[str, Database]]:
    """A migrated embedded SQLite database, then a migrated PostgreSQL scratch database (skipped, with the
    reason, when there is no server); each disposed of after its turn."""
    with tempfile.TemporaryDirectory() as tmp:
        db = Database(f"sqlite:///{Path(tmp) / 'bench.db'}")
        upgrade(db)
        yield "sqlite", db
        db.dispose()
    problem = server_problem()
    if problem is not None:
        print(f"# postgresql: skipped, {problem}")
        return
    with scratch_database() as url:
        db = Database(url)
        upgrade(db)
        yield "postgresql", db
        db.dispose()


def run(dialect: str, db: Database) -> None:
    with db.transaction() as tx:
        scope = Scope(orgs.create_organization(tx, slug=f"bench-{uuid.uuid4().hex[:8]}", name="Bench").id)
    plain = Plain(db)
    insert_agent, by_id, by_key = plain.sql(INSERT_AGENT), plain.sql(SELECT_BY_ID), plain.sql(SELECT_BY_KEY)

    def create_ours(n: int) -> None:
        for _ in range(n):
            with db.transaction() as tx:
                agents.create_agent(tx, scope, agent_key=f"k{next(_keys)}")

    origin = db.changes.origin

    def create_plain(n: int) -> None:
        for _ in range(n):
            plain.begin()
            stamp = now()
            key = f"p{next(_keys)}"
            agent_id = format_id("agent")
            plain.cur.execute(insert_agent, (agent_id, scope.tenant_id, key, key, stamp, stamp))
            payload = Change("agent", "created", scope.tenant_id, agent_id, key, key, time.time()).encode()
            if plain.sqlite:
                plain.cur.execute(LOG_CHANGE, (origin, payload, stamp))
            else:
                plain.cur.execute(NOTIFY, (CHANNEL, payload))
            plain.commit()

    feed = "change_log row" if plain.sqlite else "pg_notify"
    results = [compare(f"{dialect}: create agent (1 per transaction)", create_ours, create_plain, n=500,
                       rounds=5, baseline_label=f"INSERT + {feed}", goal=CREATE_GOAL)]
    with db.transaction() as tx:
        tx.execute("ANALYZE")  # planner statistics, as autovacuum would have them in production
    with db.transaction(write=False) as tx:
        sample = agents.list_agents(tx, scope)[:2000]
    ids, keys = [a.id for a in sample], [a.agent_key for a in sample]

    def resolver(values: list[str]) -> Callable[[int], None]:
        def resolve(n: int) -> None:
            with db.transaction(write=False) as tx:
                for value in values[:n]:
                    agents.resolve_agent(tx, scope, value)
        return resolve

    def selector(sql: str, values: list[str]) -> Callable[[int], None]:
        def select(n: int) -> None:
            plain.begin(write=False)
            for value in values[:n]:
                plain.cur.execute(sql, (scope.tenant_id, value)).fetchone()
            plain.commit()
        return select

    n = len(sample)
    results.append(compare(f"{dialect}: resolve_agent by ID", resolver(ids), selector(by_id, ids), n=n,
                           baseline_label="plain SELECT by id", goal=0.67))
    results.append(compare(f"{dialect}: resolve_agent by key", resolver(keys), selector(by_key, keys), n=n,
                           baseline_label="plain SELECT by key", goal=0.67))

    def resolver_each(values: list[str]) -> Callable[[int], None]:
        def resolve(n: int) -> None:
            for value in values[:n]:
                with db.transaction(write=False) as tx:
                    agents.resolve_agent(tx, scope, value)
        return resolve

    def selector_each(sql: str, values: list[str]) -> Callable[[int], None]:
        def select(n: int) -> None:
            for value in values[:n]:
                plain.begin(write=False)
                plain.cur.execute(sql, (scope.tenant_id, value)).fetchone()
                plain.commit()
        return select

    def getter_each(get: Callable[[Any, Scope, str], agents.Agent], values: list[str]) -> Callable[[int], None]:
        def read(n: int) -> None:
            for value in values[:n]:
                with db.transaction(write=False) as tx:
                    get(tx, scope, value)
        return read

    def lone_selector(sql: str, values: list[str]) -> Callable[[int], None]:
        def select(n: int) -> None:
            for value in values[:n]:
                plain.lone.execute(sql, (scope.tenant_id, value)).fetchone()
        return select

    for label, candidate, sql, values in (
            ("resolve_agent by ID", resolver_each(ids), by_id, ids),
            ("resolve_agent by key", resolver_each(keys), by_key, keys),
            ("get_agent by ID", getter_each(agents.get_agent, ids), by_id, ids),
            ("get_agent_by_key", getter_each(agents.get_agent_by_key, keys), by_key, keys)):
        results.append(compare(f"{dialect}: {label}, 1 per tx", candidate, selector_each(sql, values), n=n,
                               baseline_label="BEGIN/SELECT/COMMIT", goal=EACH_GOAL))
        if not plain.sqlite:  # the store's read is one statement on PostgreSQL: the like-for-like driver call too
            results.append(compare(f"{dialect}: {label}, 1 per tx, like for like", candidate,
                                   lone_selector(sql, values), n=n,
                                   baseline_label="a lone SELECT (autocommit)", goal=EACH_GOAL))

    agent_id = sample[0].id
    insert_entity = plain.sql(INSERT_ENTITY)

    def ingest_ours(count: int) -> None:
        rows = [knowledge.EntityInput(agent_id=agent_id, user_id="u", name=f"e{i}", entity_type="thing")
                for i in range(count)]
        with db.transaction() as tx:
            knowledge.ingest_graph(tx, scope, entities=rows)

    def ingest_plain(count: int) -> None:
        stamp = now()
        rows = [(format_id("kg-entity"), scope.tenant_id, agent_id, "u", f"e{i}", "thing", stamp)
                for i in range(count)]
        plain.begin()
        plain.cur.executemany(insert_entity, rows)
        plain.commit()

    results.append(compare(f"{dialect}: KG batch ingest ({INGEST_ROWS:,} rows)", ingest_ours, ingest_plain,
                           n=INGEST_ROWS, rounds=3, baseline_label="plain executemany", goal=0.67))
    plain.close()
    for result in results:
        print(result.line())
        if "1 per tx" in result.name:
            record_comparison("store-reads", result)
        elif "create agent" in result.name:
            record_comparison("store-writes", result)
    sys.stdout.flush()


def main() -> None:
    only = sys.argv[1] if len(sys.argv) > 1 else None  # `python -m bench.store sqlite` runs one engine
    header("agentfy.store vs plain SQL (rates; a ratio of 0.67 is 'within 1.5x')")
    for dialect, db in databases():
        if only in (None, dialect):
            run(dialect, db)


if __name__ == "__main__":
    main()
