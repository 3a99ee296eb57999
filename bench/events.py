"""Benchmark of the event bus on SQLite and PostgreSQL.

Run: ``make bench`` (or ``.venv/bin/python -m bench.events``; ``python -m bench.events postgresql`` for one
engine).  Prints, each against a baseline measured in the same run on the same database:

* publish throughput with publish-time ID validation on vs off (goal: validation costs under 5%, i.e. a
  ratio of at least 0.95), one event per transaction and 100 per transaction, and the validation's own cost
  per event measured directly;
* consume throughput of the bus's workers (batches of 50, a no-op handler: claim, a savepoint per event,
  one acknowledgement) with 1 and 2 workers, against a raw batched consumer written here — ``SELECT … FOR
  UPDATE SKIP LOCKED`` (``BEGIN IMMEDIATE`` on SQLite) of 50 due events, then one ``UPDATE`` marking them
  done, one transaction per batch, on bare driver connections — with as many threads (goal on PostgreSQL:
  at least 0.5x of it).  Each round publishes the events first (not timed), then times draining them; the
  candidate and the baseline alternate, and the figure is the median of the rounds.
"""

from __future__ import annotations

import itertools
import sqlite3
import statistics
import sys
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import psycopg

from agentfy.events.event import DomainEvent
from agentfy.events.outbox import publish
from agentfy.events.settings import BusSettings
from agentfy.events.validation import check_event_ids
from agentfy.events.worker import Worker
from agentfy.identity import Scope
from agentfy.store.db import Database, Tx, now
from agentfy.store.repos import agents, orgs
from bench.harness import Comparison, compare, header
from bench.store import databases
from bench.verdicts import record, report

ON, OFF = BusSettings(), BusSettings(validate_ids=False)
BATCH = 50
CONSUME_EVENTS = 4000
CONSUME_ROUNDS = 5
_sources = itertools.count()

RAW_PICK = ("SELECT id, tenant_id, type, source_id, agent_id, user_id, occurred_at, payload FROM event_outbox "
            "WHERE status = 'pending' AND available_at <= {p} AND type = 'bench.happened' "
            "ORDER BY available_at LIMIT {n}")


class RawConsumer:
    """The baseline: a batched consumer on a bare driver connection, no validation, no savepoints."""

    def __init__(self, db: Database) -> None:
        self.sqlite = db.dialect == "sqlite"
        if self.sqlite:
            path = db.engine.url.database
            assert path
            self.conn: Any = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30)
            self.conn.execute("PRAGMA synchronous = NORMAL")
            self.pick = RAW_PICK.format(p="?", n=BATCH)
        else:
            url = db.engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
            self.conn = psycopg.connect(url)
            self.pick = RAW_PICK.format(p="%s", n=BATCH) + " FOR UPDATE SKIP LOCKED"
        self.cur = self.conn.cursor()

    def batch(self) -> int:
        """Claim, 'handle' and acknowledge one batch; how many events it had."""
        stamp = now()
        if self.sqlite:
            self.cur.execute("BEGIN IMMEDIATE")
            ids = [row[0] for row in self.cur.execute(self.pick, (stamp,)).fetchall()]
            if ids:
                marks = ", ".join("?" * len(ids))
                self.cur.execute(f"UPDATE event_outbox SET status = 'done', attempts = attempts + 1, finished_at = ? "
                                 f"WHERE id IN ({marks})", (stamp, *ids))
            self.cur.execute("COMMIT")
        else:
            ids = [row[0] for row in self.cur.execute(self.pick, (stamp,)).fetchall()]
            if ids:
                self.cur.execute("UPDATE event_outbox SET status = 'done', attempts = attempts + 1, finished_at = %s "
                                 "WHERE id = ANY(%s)", (stamp, ids))
            self.conn.commit()
        return len(ids)

    def close(self) -> None:
        self.conn.close()


def drain_in_threads(batches: list[Callable[[], int]]) -> None:
    """Run each ``batch`` callable in its own thread until it finds nothing."""

    def loop(batch: Callable[[], int]) -> None:
        while batch():
            pass

    threads = [threading.Thread(target=loop, args=(b,)) for b in batches]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def run(dialect: str, db: Database) -> None:
    with db.transaction() as tx:
        scope = Scope(orgs.create_organization(tx, slug=f"bench-{uuid.uuid4().hex[:8]}", name="B").id)
        agent = agents.create_agent(tx, scope, agent_key="bench-bot")

    def publisher(settings: BusSettings, per_tx: int) -> Callable[[int], None]:
        def run_(n: int) -> None:
            for _ in range(0, n, per_tx):
                with db.transaction() as tx:
                    for _ in range(per_tx):
                        publish(tx, type="bench.happened", tenant_id=scope.tenant_id,
                                source_id=f"s{next(_sources)}", agent_id=agent.id, user_id="u", settings=settings)
        return run_

    results = [
        compare(f"{dialect}: publish, 1 per transaction", publisher(ON, 1), publisher(OFF, 1), n=1000,
                baseline_label="validation off", goal=0.95),
        compare(f"{dialect}: publish, 100 per transaction", publisher(ON, 100), publisher(OFF, 100), n=5000,
                baseline_label="validation off", goal=0.95),
    ]
    for result in results:
        report("events", result)
    # The same question measured directly, which noise in the whole-publish rates (WAL checkpoints, index
    # growth) cannot hide: what does the validation itself cost per event, as a share of a publish?
    sample = DomainEvent(id="domain-event-calm-rivers-k8m4p2d7n9x3", type="bench.happened",
                         tenant_id=scope.tenant_id, source_id="s", occurred_at="now", agent_id=agent.id)
    checks = 100_000
    start = time.perf_counter()
    for _ in range(checks):
        check_event_ids(sample, strict=False)
    per_check = (time.perf_counter() - start) / checks
    for result in results:
        share = per_check * result.baseline_rate
        print(f"{result.name}: validation alone {per_check * 1e6:.2f} us/event = {share:.2%} of a publish"
              f"  goal < 5%: {'met' if share < 0.05 else 'NOT met'}")
        record("events", f"{result.name}: validation alone", f"{share:.2%} of a publish (goal < 5%)",
               met=share < 0.05)
    sys.stdout.flush()
    consume(dialect, db, publisher(ON, 100))


class StagedNoop:
    """A staged handler doing nothing: what the read / compute-in-a-thread / write split costs."""

    def read(self, tx: Tx, scope: Scope, event: DomainEvent) -> None:
        return None

    def compute(self, inputs: None) -> None:
        return None

    def write(self, tx: Tx, scope: Scope, event: DomainEvent, inputs: None, result: None) -> None:
        return None


def consume(dialect: str, db: Database, fill: Callable[[int], None]) -> None:
    settings = BusSettings(batch_size=BATCH, retention_days=0)

    def noop(tx: Tx, s: Scope, event: DomainEvent) -> None:
        return None

    def clear() -> None:
        with db.transaction() as tx:
            tx.execute("DELETE FROM event_outbox WHERE status = 'done'")
        if dialect == "postgresql":
            with db.engine.connect() as connection:  # keep the dead rows of the last round out of the next
                connection.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql("VACUUM event_outbox")

    def timed(drain: Callable[[], None]) -> float:
        clear()
        fill(CONSUME_EVENTS)
        start = time.perf_counter()
        drain()
        rate = CONSUME_EVENTS / (time.perf_counter() - start)
        with db.transaction(write=False) as tx:
            left = tx.scalar("SELECT count(*) FROM event_outbox WHERE status != 'done'")
        assert left == 0, f"{left} events were not consumed"
        return rate

    for threads in (1, 2):
        for handler, label in ((noop, "no-op handler"), (StagedNoop(), "staged no-op")):
            if threads == 2 and label == "staged no-op":
                continue
            workers = [Worker(db, {"bench.happened": handler}, settings=settings) for _ in range(threads)]
            raws = [RawConsumer(db) for _ in range(threads)]
            ours: list[float] = []
            raw: list[float] = []
            ours_batches = [w.run_once for w in workers]
            raw_batches = [r.batch for r in raws]
            for round_ in range(CONSUME_ROUNDS):
                pair = [(ours, ours_batches), (raw, raw_batches)]
                for rates, batches in pair if round_ % 2 == 0 else reversed(pair):
                    rates.append(timed(lambda b=batches: drain_in_threads(b)))
            for consumer in raws:
                consumer.close()
            result = Comparison(f"{dialect}: consume, {threads} worker{'s' if threads > 1 else ''}, {label}",
                                "", f"raw SKIP LOCKED x{threads}" if dialect == "postgresql" else
                                f"raw batched x{threads}", statistics.median(ours), statistics.median(raw),
                                0.5 if dialect == "postgresql" and label == "no-op handler" else None)
            report("events", result)
            sys.stdout.flush()


def main() -> None:
    only = sys.argv[1] if len(sys.argv) > 1 else None
    header("agentfy.events: publish and consume throughput")
    for dialect, db in databases():
        if only in (None, dialect):
            run(dialect, db)


if __name__ == "__main__":
    main()
