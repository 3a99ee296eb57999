"""Lease renewal while a worker handles a batch, so a handler may run longer than the lease.

The lease exists to detect a worker that stopped (its events are redelivered when it runs out); a worker
that is merely slow must keep them.  A heartbeat thread renews the batch's leases every ``renew_interval``
(a third of the lease by default, so two renewals may fail before the lease is at risk) until the worker
has locked the events in its write transaction, from which point the lock protects them.  It is started
only when the batch has work to do outside that transaction (a staged handler): a batch of plain handlers
goes from its claim to its lock in milliseconds.

A renewal that fails (the database is briefly unreachable) is logged and tried again at the next beat.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from types import TracebackType
from typing import Final

from agentfy.events.logs import log
from agentfy.events.outbox import renew
from agentfy.events.settings import BusSettings
from agentfy.store.db import Database

logger: Final = logging.getLogger("agentfy.eventbus")


class Heartbeat:
    """``with Heartbeat(db, worker, event_ids, settings) as beat:`` … ``beat.start()`` renews the leases
    until :meth:`stop` or the end of the block."""

    def __init__(self, db: Database, worker: str, event_ids: Sequence[str], settings: BusSettings) -> None:
        self.db = db
        self.worker = worker
        self.event_ids = list(event_ids)
        self.settings = settings
        self.renewals = 0
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"agentfy-heartbeat-{worker}", daemon=True)

    def __enter__(self) -> Heartbeat:
        return self

    def start(self) -> None:
        """Start renewing (once; later calls do nothing)."""
        if not self._thread.is_alive() and not self._stopped.is_set() and self._thread.ident is None:
            self._thread.start()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.stop()

    def stop(self, *, wait: bool = True) -> None:
        """Stop renewing (idempotent); with ``wait``, return once no renewal is in flight.

        The worker stops the heartbeat from inside its write transaction *without* waiting (the block's end
        waits): a renewal in flight may be queued for the very write lock that transaction holds (SQLite: one
        writer per file), so waiting for it there would hold every writer of the process until the renewal
        gave up after the busy timeout.  A renewal that runs after the batch's transaction renews nothing:
        it touches only events the worker still holds unacknowledged."""
        self._stopped.set()
        if wait and self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()

    def _beat(self) -> None:
        while not self._stopped.wait(self.settings.renew_interval):
            try:
                renew(self.db, self.worker, self.event_ids, self.settings)
                self.renewals += 1
            except Exception as error:
                log(logger, logging.WARNING, "eventbus.renew_failed", {
                    "worker": self.worker, "events": len(self.event_ids), "reason": f"{type(error).__name__}: {error}"})
