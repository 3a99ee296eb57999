"""A worker process for the multi-process bus tests: ``python -m tests.events.proc_worker URL NAME MODE``.

MODE ``drain``: handle events until none is due, recording each handled source in the audit log.
MODE ``claim-and-die``: claim events, announce it on stdout, then wait to be killed (never acknowledges).
"""

from __future__ import annotations

import sys
import time

from agentfy.events.event import DomainEvent
from agentfy.events.outbox import claim
from agentfy.events.settings import BusSettings
from agentfy.events.worker import Worker
from agentfy.identity import Scope
from agentfy.store.db import Database, Tx
from agentfy.store.repos import audit


def record(tx: Tx, scope: Scope, event: DomainEvent) -> None:
    audit.record_audit(tx, scope, action="handled", target_id=event.source_id)


def main() -> None:
    url, name, mode = sys.argv[1:4]
    db = Database(url)
    if mode == "claim-and-die":
        held = claim(db, name, ["test.happened"], settings=BusSettings(lease_seconds=1.0))
        print(f"claimed {len(held)}", flush=True)
        time.sleep(60)
        return
    worker = Worker(db, {"test.happened": record}, name=name, settings=BusSettings(batch_size=5))
    idle = 0
    while idle < 3:
        idle = idle + 1 if worker.run_once() == 0 else 0
        if idle:
            time.sleep(0.05)
    db.dispose()


if __name__ == "__main__":
    main()
