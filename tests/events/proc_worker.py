"""A worker process for the multi-process bus tests: ``python -m tests.events.proc_worker URL NAME MODE``.

The bus settings come from the environment (``AGENTFY_EVENTS_*``), read at this process's edge
(:func:`agentfy.settings.load_settings`) and passed down, as ``agentfy worker`` does.

MODE ``drain``: handle events until none is due, recording each handled source in the audit log.
MODE ``drain-crashing``: the same, but the event with source ``crash`` kills the process (``os._exit``),
  as an out-of-memory kill or a segfault would.
MODE ``claim-and-die``: claim events, announce it on stdout, then wait to be killed (never acknowledges).
MODE ``serve-slow``: run workers until SIGINT/SIGTERM (the code path of ``agentfy worker``) with a staged
  handler whose computation takes 30 s.
"""

from __future__ import annotations

import os
import sys
import time

from agentfy.events.event import DomainEvent
from agentfy.events.outbox import claim
from agentfy.events.runner import run_until_signalled
from agentfy.events.settings import BusSettings
from agentfy.events.worker import Worker
from agentfy.identity import Scope
from agentfy.settings import load_settings
from agentfy.store.db import Database, Tx
from agentfy.store.repos import audit


def record(tx: Tx, scope: Scope, event: DomainEvent) -> None:
    audit.record_audit(tx, scope, action="handled", target_id=event.source_id)


def record_or_crash(tx: Tx, scope: Scope, event: DomainEvent) -> None:
    if event.source_id == "crash":
        os._exit(3)
    record(tx, scope, event)


class SlowStaged:
    """Computes for 30 s outside any transaction, then records."""

    def read(self, tx: Tx, scope: Scope, event: DomainEvent) -> None:
        return None

    def compute(self, inputs: None) -> None:
        time.sleep(30)

    def write(self, tx: Tx, scope: Scope, event: DomainEvent, inputs: None, result: None) -> None:
        record(tx, scope, event)


def drain(db: Database, name: str, handler: object, bus: BusSettings) -> None:
    worker = Worker(db, {"test.happened": handler}, name=name, settings=bus)  # type: ignore[dict-item]
    idle = 0
    while idle < 3:
        idle = idle + 1 if worker.run_once() == 0 else 0
        if idle:
            time.sleep(0.05)


def main() -> None:
    url, name, mode = sys.argv[1:4]
    bus = load_settings().events
    db = Database(url)
    if mode == "claim-and-die":
        held = claim(db, name, ["test.happened"], settings=BusSettings(lease_seconds=1.0))
        print(f"claimed {len(held)}", flush=True)
        time.sleep(60)
        return
    if mode == "serve-slow":
        run_until_signalled(db, {"test.happened": SlowStaged()}, settings=bus)
    else:
        drain(db, name, record_or_crash if mode == "drain-crashing" else record, bus)
    db.dispose()


if __name__ == "__main__":
    main()
