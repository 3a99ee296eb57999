"""Benchmark of the event bus on SQLite and PostgreSQL.

Run: ``make bench`` (or ``.venv/bin/python -m bench.events``; ``python -m bench.events sqlite`` for one
engine).  Prints, alternating candidate and baseline in one run:

* publish throughput with publish-time ID validation on vs off (goal: validation costs under 5%, i.e. a
  ratio of at least 0.95), one event per transaction and 100 per transaction;
* consume throughput: a worker claiming, handling (a no-op handler) and acknowledging, vs publishing the
  same number of events (for scale; consuming is a claim, a handler transaction and an acknowledgement).
"""

from __future__ import annotations

import itertools
import sys
import time
import uuid

from agentfy.events.event import DomainEvent
from agentfy.events.outbox import BusSettings, publish
from agentfy.events.validation import check_event_ids
from agentfy.events.worker import Worker
from agentfy.identity import Scope
from agentfy.store.db import Database, Tx
from agentfy.store.repos import agents, orgs
from bench.harness import compare, header
from bench.store import databases

ON, OFF = BusSettings(), BusSettings(validate_ids=False)
_sources = itertools.count()


def run(dialect: str, db: Database) -> None:
    with db.transaction() as tx:
        scope = Scope(orgs.create_organization(tx, slug=f"bench-{uuid.uuid4().hex[:8]}", name="B").id)
        agent = agents.create_agent(tx, scope, agent_key="bench-bot")

    def publisher(settings: BusSettings, per_tx: int):  # type: ignore[no-untyped-def]
        def run_(n: int) -> None:
            for _ in range(0, n, per_tx):
                with db.transaction() as tx:
                    for _ in range(per_tx):
                        publish(tx, type="bench.happened", tenant_id=scope.tenant_id,
                                source_id=f"s{next(_sources)}", agent_id=agent.id, user_id="u", settings=settings)
        return run_

    def noop(tx: Tx, s: Scope, event: DomainEvent) -> None:
        return None

    worker = Worker(db, {"bench.happened": noop}, batch_size=50)

    def consume(n: int) -> None:
        done = 0
        while done < n:
            handled = worker.run_once()
            if not handled:
                publisher(ON, 100)(n - done)  # keep the queue fed
            done += handled

    results = [
        compare(f"{dialect}: publish, 1 per transaction", publisher(ON, 1), publisher(OFF, 1), n=1000,
                baseline_label="validation off", goal=0.95),
        compare(f"{dialect}: publish, 100 per transaction", publisher(ON, 100), publisher(OFF, 100), n=5000,
                baseline_label="validation off", goal=0.95),
        compare(f"{dialect}: consume (claim, no-op, ack)", consume, publisher(ON, 1), n=1000, rounds=3,
                baseline_label="publish 1 per tx"),
    ]
    for result in results:
        print(result.line())
    # The same question measured directly, which noise in the whole-publish rates (WAL checkpoints, index
    # growth) cannot hide: what does the validation itself cost per event, as a share of a publish?
    sample = DomainEvent(id="domain-event-calm-rivers-k8m4p2d7n9x3", type="bench.happened",
                         tenant_id=scope.tenant_id, source_id="s", occurred_at="now", agent_id=agent.id)
    checks = 100_000
    start = time.perf_counter()
    for _ in range(checks):
        check_event_ids(sample, strict=False)
    per_check = (time.perf_counter() - start) / checks
    for result in results[:2]:
        share = per_check * result.baseline_rate
        print(f"{result.name}: validation alone {per_check * 1e6:.2f} us/event = {share:.2%} of a publish"
              f"  goal < 5%: {'met' if share < 0.05 else 'NOT met'}")


def main() -> None:
    only = sys.argv[1] if len(sys.argv) > 1 else None
    header("agentfy.events: publish and consume throughput")
    for dialect, db in databases():
        if only in (None, dialect):
            run(dialect, db)


if __name__ == "__main__":
    main()
