"""Workers: claim a batch of events, run their handlers in each event's tenant scope, acknowledge them.

One batch, step by step:

1. **claim** up to ``batch_size`` due events (every claim counts as an attempt; a suspect — an event whose
   worker stopped while holding it — is claimed alone);
2. the leases are renewed by a :class:`~agentfy.events.heartbeat.Heartbeat` until step 4 locks the events;
3. **stage**: for each staged handler, ``read`` in a read-only transaction, then ``compute`` with no
   transaction open, bounded by ``handler_timeout_seconds`` (:mod:`agentfy.events.handlers`);
4. **write**, one transaction for the whole batch: the events still held are locked (a lease lost meanwhile
   drops out: its writes are never made), each event's handler writes, and the handled events are marked
   done in the same transaction — the handlers' writes commit exactly when their events are acknowledged:
   effects are exactly-once.  A failing event rolls back alone and is rescheduled (or dead-lettered) in
   that transaction: each event's writes run under a savepoint of their own.

Savepoints are taken only once they are needed.  A savepoint costs two round trips per event on
PostgreSQL, more than the rest of the bus's per-event cost (with them the worker reached 0.28x of a raw
batched consumer, see ``docs/benchmarks.md``), and most batches have no failure.  So a batch is first
written without savepoints (acknowledged up front, by the statement that locks it); if a handler fails,
that transaction is rolled back — nothing of it was committed — and the batch is written again with a
savepoint per event, where the event that failed is rescheduled without running again and its
batch-mates run once more.  Handlers are transactional, so a write stage run twice (the first time rolled
back) has its effects once; staged computations are not repeated.

The tenant is parsed into a :class:`Scope` and the agent ID checked before any handler runs, so an event
with a non-ID tenant or agent never reaches one (it is dead-lettered).  A worker asked to stop (``stop``
set: SIGTERM or SIGINT in ``agentfy worker``) abandons the stage it waits for, writes what it finished and
gives the rest back unhandled, so no claim outlives the process.
"""

from __future__ import annotations

import itertools
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, Final

from agentfy.events import admin
from agentfy.events.deadline import HandlerTimeoutError, StageRunner, WorkerStoppingError
from agentfy.events.event import DomainEvent
from agentfy.events.handlers import DETERMINISTIC_ERRORS, AnyHandler, Handler, StagedHandler
from agentfy.events.heartbeat import Heartbeat
from agentfy.events.logs import agent_keys, event_fields, log
from agentfy.events.outbox import Claim, acknowledge, claim, fail_batch, lock_held, release, reschedule
from agentfy.events.settings import DEFAULT_BUS_SETTINGS, BusSettings
from agentfy.identity import Scope, parse_id
from agentfy.identity.context import RequestContext, use
from agentfy.store.db import Database, Tx

logger: Final = logging.getLogger("agentfy.eventbus")

_names = itertools.count(1)
#: How often a running worker deletes handled events older than the retention period.
PRUNE_EVERY_SECONDS: Final = 3600.0
#: How often a busy worker sweeps expired leases and looks for suspects (an idle one does it every poll).
SWEEP_EVERY_SECONDS: Final = 1.0


def default_worker_name() -> str:
    """``host:pid:n``: unique per worker in a process (a lease is held by a name)."""
    return f"{socket.gethostname()}:{os.getpid()}:{next(_names)}"


def route(event: DomainEvent) -> Scope:
    """The event's tenant scope, after checking its agent ID: an ``InvalidIdError`` naming the value, never
    a handler call, for a tenant or agent that is not an ID (an empty agent ID is a team, tenant or
    anonymous event)."""
    scope = Scope.of(event.tenant_id)
    if event.agent_id:
        parse_id(event.agent_id, "agent", field="agent_id")
    return scope


@dataclass(frozen=True)
class _Staged:
    """What the stage step produced for one event: its ``scope`` (and for a staged handler ``inputs`` and
    ``result``), or the ``error`` that failed it before its write stage."""

    scope: Scope | None = None
    inputs: Any = None
    result: Any = None
    error: Exception | None = None


class _RetryWithSavepoints(Exception):
    """A handler failed in a batch written without savepoints: roll it back and write it with them."""


@dataclass(frozen=True)
class Outcome:
    """How one event of a batch ended: ``done``, ``pending`` (retried later), ``dead``, ``lost`` (another
    worker holds it now) or ``released`` (given back unhandled: the worker is stopping)."""

    held: Claim
    status: str
    reason: str | None = None


class Worker:
    """Handles the event types in ``handlers``; ``run_once`` for tests and CLIs, ``run_forever`` to serve.

    ``settings``: the bus settings the process was started with (the defaults when omitted; see
    :mod:`agentfy.events.settings`).  Each worker has a name of its own (``host:pid:n``); run several in
    threads for concurrency (:mod:`agentfy.events.runner`).
    """

    def __init__(self, db: Database, handlers: Mapping[str, AnyHandler], *, name: str | None = None,
                 settings: BusSettings = DEFAULT_BUS_SETTINGS) -> None:
        self.db = db
        self.handlers = dict(handlers)
        self.name = name or default_worker_name()
        self.settings = settings
        self.stop = threading.Event()
        self._staged: dict[str, StagedHandler[Any, Any]] = {}
        self._plain: dict[str, Handler] = {}
        for event_type, handler in self.handlers.items():
            if isinstance(handler, StagedHandler):
                self._staged[event_type] = handler
            else:
                self._plain[event_type] = handler
        self._last_prune = -PRUNE_EVERY_SECONDS
        self._last_sweep = -SWEEP_EVERY_SECONDS
        self._stages = StageRunner(f"agentfy-handler-{self.name}")

    def run_once(self) -> int:
        """Claim one batch and handle it; the number of events claimed (0: nothing was due)."""
        sweep = time.monotonic() - self._last_sweep >= SWEEP_EVERY_SECONDS
        batch = claim(self.db, self.name, self.handlers, settings=self.settings, sweep=sweep)
        if not batch and not sweep:  # before saying nothing is due, look at expired leases and suspects too
            sweep = True
            batch = claim(self.db, self.name, self.handlers, settings=self.settings, sweep=True)
        if sweep:
            self._last_sweep = time.monotonic()
        if batch:
            self.handle_batch(batch)
        return len(batch)

    def run_forever(self, stop: threading.Event | None = None) -> None:
        """Handle batches until ``stop`` (default: :attr:`stop`) is set; a batch that found work is followed
        at once by the next, an idle one by a wait of ``poll_seconds``.  Prunes handled events past their
        retention hourly."""
        if stop is not None:
            self.stop = stop
        while not self.stop.is_set():
            try:
                self._prune_when_due()
                busy = self.run_once()
            except Exception as error:  # the database is down: log, wait, try again
                log(logger, logging.ERROR, "eventbus.batch_failed",
                    {"worker": self.name, "reason": f"{type(error).__name__}: {error}"})
                busy = 0
            if not busy:
                self.stop.wait(self.settings.poll_seconds)

    def handle_batch(self, batch: Sequence[Claim]) -> list[Outcome]:
        """Stage and write ``batch`` (claimed by this worker); see the module docstring.

        Nothing stays claimed when something escapes: an interruption (Ctrl-C) gives the events back
        unhandled; a failure of the batch as a whole (its transaction could not commit) counts as a failed
        attempt of each event, which is then retried alone, so one event that breaks the transaction cannot
        fail its batch-mates for ever.
        """
        try:
            with Heartbeat(self.db, self.name, [c.event.id for c in batch], self.settings) as heartbeat:
                staged = self._stage(batch, heartbeat)
                outcomes = self._write(batch, staged, heartbeat)
        except Exception as error:
            reason = f"{type(error).__name__}: {error}"
            self._settle(batch, lambda: fail_batch(self.db, batch, reason, settings=self.settings))
            raise
        except BaseException:
            self._settle(batch, lambda: release(self.db, self.name, [c.event.id for c in batch]))
            raise
        self._log(outcomes)
        return outcomes

    # -- stage: IDs for every event; read, then compute outside any transaction, for staged handlers --------
    def _stage(self, batch: Sequence[Claim], heartbeat: Heartbeat) -> dict[str, _Staged | None]:
        """``event ID → _Staged``; ``None`` for an event to give back (the worker is stopping)."""
        staged: dict[str, _Staged | None] = {}
        routes: dict[tuple[str, str | None], Scope] = {}  # a batch's events often share tenant and agent
        for held in batch:
            event = held.event
            if self.stop.is_set():
                staged[event.id] = None
                continue
            try:
                scope = routes.get((event.tenant_id, event.agent_id)) or route(event)
            except Exception as error:
                staged[event.id] = _Staged(error=error)
                continue
            routes[(event.tenant_id, event.agent_id)] = scope
            handler = self._staged.get(event.type)
            if handler is None:
                staged[event.id] = _Staged(scope)  # a plain handler: it runs in the write transaction
                continue
            heartbeat.start()  # the batch may now wait longer than its lease: keep renewing it
            try:
                staged[event.id] = self._prepare(handler, scope, event)
            except WorkerStoppingError:
                staged[event.id] = None
        return staged

    def _prepare(self, handler: StagedHandler[Any, Any], scope: Scope, event: DomainEvent) -> _Staged:
        try:
            with use(RequestContext(tenant_id=scope.tenant_id)):
                with self.db.transaction(write=False) as tx:
                    inputs = handler.read(tx, scope, event)
                result = self._stages.run(lambda: handler.compute(inputs), self.settings.handler_timeout_seconds,
                                          self.stop)
        except WorkerStoppingError:
            raise
        except Exception as error:
            return _Staged(error=error)
        return _Staged(scope, inputs, result)

    # -- write: one transaction, a savepoint per event (once one fails) ----------------------------------------
    def _write(self, batch: Sequence[Claim], staged: Mapping[str, _Staged | None],
               heartbeat: Heartbeat) -> list[Outcome]:
        given_back = [c.event.id for c in batch if staged.get(c.event.id) is None]
        failed: dict[str, Exception] = {}  # what failed without savepoints: not run again with them
        try:
            outcomes = self._write_batch(batch, staged, heartbeat, failed)
        except _RetryWithSavepoints:
            outcomes = self._write_batch(batch, staged, heartbeat, failed, savepoints=True)
        release(self.db, self.name, given_back)
        return outcomes

    def _write_batch(self, batch: Sequence[Claim], staged: Mapping[str, _Staged | None], heartbeat: Heartbeat,
                     failed: dict[str, Exception], *, savepoints: bool = False) -> list[Outcome]:
        outcomes: list[Outcome] = []
        with self.db.transaction() as tx:
            runnable = [c.event.id for c in batch if (s := staged.get(c.event.id)) is not None and s.error is None]
            # Without savepoints the batch is acknowledged first: the statement that locks the events marks
            # them done, and a failure rolls that back with everything else.  With them, lock, then
            # acknowledge what succeeded.
            held = lock_held(tx, self.name, runnable) if savepoints else acknowledge(tx, self.name, runnable)
            heartbeat.stop(wait=False)  # the lock protects them from here on (see Heartbeat.stop)
            handled: list[str] = []
            for item in batch:
                prepared = staged.get(item.event.id)
                if prepared is None:
                    outcomes.append(Outcome(item, "released"))
                    continue
                failure = prepared.error or failed.get(item.event.id)
                if failure is None and item.event.id not in held:
                    outcomes.append(Outcome(item, "lost", "the lease ran out and another worker took the event"))
                    continue
                if failure is None:
                    failure = self._apply(tx, item.event, prepared, savepoint=savepoints)
                    if failure is None:
                        handled.append(item.event.id)
                        outcomes.append(Outcome(item, "done"))
                        continue
                    if not savepoints:
                        failed[item.event.id] = failure
                        raise _RetryWithSavepoints()  # rolls this transaction back: nothing of it is kept
                reason = f"{type(failure).__name__}: {failure}"
                status = reschedule(tx, item, reason, retry=not isinstance(failure, DETERMINISTIC_ERRORS),
                                    settings=self.settings)
                outcomes.append(Outcome(item, status, reason if status != "lost" else None))
            if savepoints and acknowledge(tx, self.name, handled) != set(handled):
                raise RuntimeError("an event locked by this worker could not be acknowledged")  # never expected
        return outcomes

    def _apply(self, tx: Tx, event: DomainEvent, prepared: _Staged, *, savepoint: bool) -> Exception | None:
        """Run one event's writes (under a savepoint of its own with ``savepoint``); the exception that failed
        them, or ``None``."""
        scope = prepared.scope
        assert scope is not None  # an event whose IDs were refused never gets here
        try:
            with use(RequestContext(tenant_id=scope.tenant_id)), tx.savepoint() if savepoint else nullcontext():
                staged = self._staged.get(event.type)
                if staged is not None:
                    staged.write(tx, scope, event, prepared.inputs, prepared.result)
                else:
                    self._run_plain(self._plain[event.type], tx, scope, event)
        except Exception as error:
            return error
        return None

    def _run_plain(self, handler: Handler, tx: Tx, scope: Scope, event: DomainEvent) -> None:
        started = time.monotonic()
        handler(tx, scope, event)
        if time.monotonic() - started > self.settings.handler_timeout_seconds:
            raise HandlerTimeoutError(self.settings.handler_timeout_seconds)  # its writes roll back

    # -- giving back, logging, pruning ---------------------------------------------------------------------------
    def _settle(self, batch: Sequence[Claim], settle: Callable[[], object]) -> None:
        try:
            settle()
        except Exception as error:  # the database is gone too: the leases will run out instead
            log(logger, logging.ERROR, "eventbus.settle_failed",
                {"worker": self.name, "events": len(batch), "reason": f"{type(error).__name__}: {error}"})

    def _log(self, outcomes: Sequence[Outcome]) -> None:
        notable = [o for o in outcomes if o.status != "done"]
        keys = agent_keys(self.db, [o.held.event for o in notable]) if notable else {}
        for outcome in outcomes:
            event = outcome.held.event
            level, name = _LOG[outcome.status]
            if not logger.isEnabledFor(level):
                continue
            log(logger, level, name, event_fields(
                event, agent_key=keys.get((event.tenant_id, event.agent_id or "")), attempt=outcome.held.attempt,
                reason=outcome.reason, worker=self.name))

    def _prune_when_due(self) -> None:
        if self.settings.retention_days <= 0 or time.monotonic() - self._last_prune < PRUNE_EVERY_SECONDS:
            return
        self._last_prune = time.monotonic()
        deleted = admin.prune(self.db, older_than_days=self.settings.retention_days)
        if deleted:
            log(logger, logging.INFO, "eventbus.pruned", {"worker": self.name, "events": deleted,
                                                          "older_than_days": self.settings.retention_days})


_LOG: Final = {
    "done": (logging.DEBUG, "eventbus.done"),
    "pending": (logging.WARNING, "eventbus.retry"),
    "dead": (logging.ERROR, "eventbus.dead_letter"),
    "lost": (logging.WARNING, "eventbus.lease_lost"),
    "released": (logging.INFO, "eventbus.released"),
}
