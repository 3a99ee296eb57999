"""Workers: claim a batch of events, run their handlers in each event's tenant scope, acknowledge them.

One batch, step by step:

1. **claim** up to ``batch_size`` due events (every claim counts as an attempt; a suspect — an event whose
   worker stopped while holding it — is claimed alone);
2. the leases are renewed by a :class:`~agentfy.events.heartbeat.Heartbeat` until step 4 locks the events;
3. **stage**: for each staged handler, ``read`` in a read-only transaction, then ``compute`` with no
   transaction open, bounded by ``handler_timeout_seconds`` (:mod:`agentfy.events.handlers`);
4. **write**, one transaction for the whole batch: the events still held are locked (a lease lost meanwhile
   drops out: its writes are never made), then each event's handler writes under a savepoint of its own —
   a failure rolls back that event only, which is rescheduled (or dead-lettered) in the same transaction —
   and the handled events are acknowledged together.  The handlers' writes commit exactly when their events
   are marked ``done``: effects are exactly-once.

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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from agentfy.events import admin
from agentfy.events.deadline import HandlerTimeoutError, WorkerStoppingError, run_with_deadline
from agentfy.events.event import DomainEvent
from agentfy.events.handlers import DETERMINISTIC_ERRORS, AnyHandler, Handler, StagedHandler
from agentfy.events.heartbeat import Heartbeat
from agentfy.events.logs import agent_keys, event_fields, log
from agentfy.events.outbox import Claim, acknowledge, claim, lock_held, release, reschedule
from agentfy.events.settings import BusSettings, resolve
from agentfy.identity import Scope, parse_id
from agentfy.identity.context import RequestContext, use
from agentfy.store.db import Database, Tx

logger: Final = logging.getLogger("agentfy.eventbus")

_names = itertools.count(1)
#: How often a running worker deletes handled events older than the retention period.
PRUNE_EVERY_SECONDS: Final = 3600.0


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
    """What the stage step produced for one event: ``inputs`` and ``result``, or ``error``."""

    inputs: Any = None
    result: Any = None
    error: Exception | None = None


@dataclass(frozen=True)
class Outcome:
    """How one event of a batch ended: ``done``, ``pending`` (retried later), ``dead``, ``lost`` (another
    worker holds it now) or ``released`` (given back unhandled: the worker is stopping)."""

    held: Claim
    status: str
    reason: str | None = None


class Worker:
    """Handles the event types in ``handlers``; ``run_once`` for tests and CLIs, ``run_forever`` to serve.

    ``settings``: the process's settings from the environment when omitted (see
    :mod:`agentfy.events.settings`).  Each worker has a name of its own (``host:pid:n``); run several in
    threads for concurrency (:mod:`agentfy.events.runner`).
    """

    def __init__(self, db: Database, handlers: Mapping[str, AnyHandler], *, name: str | None = None,
                 settings: BusSettings | None = None) -> None:
        self.db = db
        self.handlers = dict(handlers)
        self.name = name or default_worker_name()
        self.settings = resolve(settings)
        self.stop = threading.Event()
        self._staged: dict[str, StagedHandler[Any, Any]] = {
            event_type: handler for event_type, handler in self.handlers.items() if isinstance(handler, StagedHandler)}
        self._last_prune = 0.0

    def run_once(self) -> int:
        """Claim one batch and handle it; the number of events claimed (0: nothing was due)."""
        batch = claim(self.db, self.name, self.handlers, settings=self.settings)
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
        """Stage and write ``batch`` (claimed by this worker); see the module docstring.  If anything
        escapes (the database failed, the process is interrupted), the events not yet written are given back
        before the exception propagates, so none stays claimed."""
        settled = False
        try:
            with Heartbeat(self.db, self.name, [c.event.id for c in batch], self.settings) as heartbeat:
                staged = self._stage(batch)
                outcomes = self._write(batch, staged, heartbeat)
            settled = True
        finally:
            if not settled:
                self._give_back(batch)
        self._log(outcomes)
        return outcomes

    # -- stage: read, then compute outside any transaction -------------------------------------------------
    def _stage(self, batch: Sequence[Claim]) -> dict[str, _Staged | None]:
        """``event ID → _Staged`` for staged handlers; ``None`` for an event to give back (stopping)."""
        staged: dict[str, _Staged | None] = {}
        for held in batch:
            if self.stop.is_set():
                staged[held.event.id] = None
                continue
            handler = self._staged.get(held.event.type)
            if handler is None:
                continue  # a plain handler: it runs in the write transaction
            try:
                staged[held.event.id] = self._prepare(handler, held.event)
            except WorkerStoppingError:
                staged[held.event.id] = None
        return staged

    def _prepare(self, handler: StagedHandler[Any, Any], event: DomainEvent) -> _Staged:
        try:
            scope = route(event)
            with use(RequestContext(tenant_id=scope.tenant_id)):
                with self.db.transaction(write=False) as tx:
                    inputs = handler.read(tx, scope, event)
                result = run_with_deadline(lambda: handler.compute(inputs), self.settings.handler_timeout_seconds,
                                           self.stop)
        except WorkerStoppingError:
            raise
        except Exception as error:
            return _Staged(error=error)
        return _Staged(inputs, result)

    # -- write: one transaction, a savepoint per event ---------------------------------------------------------
    def _write(self, batch: Sequence[Claim], staged: Mapping[str, _Staged | None],
               heartbeat: Heartbeat) -> list[Outcome]:
        outcomes: list[Outcome] = []
        handled: list[Claim] = []
        given_back = [c.event.id for c in batch if c.event.id in staged and staged[c.event.id] is None]
        with self.db.transaction() as tx:
            held = lock_held(tx, self.name, [c.event.id for c in batch if c.event.id not in given_back])
            heartbeat.stop()  # the lock protects them from here on
            for item in batch:
                event_id = item.event.id
                if event_id in given_back:
                    outcomes.append(Outcome(item, "released"))
                elif event_id not in held:
                    outcomes.append(Outcome(item, "lost", "the lease ran out and another worker took the event"))
                else:
                    failure = self._apply(tx, item, staged.get(event_id))
                    if failure is None:
                        handled.append(item)
                        outcomes.append(Outcome(item, "done"))
                    else:
                        reason = f"{type(failure).__name__}: {failure}"
                        status = reschedule(tx, item, reason, retry=not isinstance(failure, DETERMINISTIC_ERRORS),
                                            settings=self.settings)
                        outcomes.append(Outcome(item, status, reason))
            if acknowledge(tx, self.name, [c.event.id for c in handled]) != len(handled):
                raise RuntimeError("an event locked by this worker could not be acknowledged")  # never expected
        release(self.db, self.name, given_back)
        return outcomes

    def _apply(self, tx: Tx, held: Claim, staged: _Staged | None) -> Exception | None:
        """Run one event's writes under its savepoint; the exception that rolled them back, or ``None``."""
        if staged is not None and staged.error is not None:
            return staged.error
        event = held.event
        try:
            scope = route(event)
            with use(RequestContext(tenant_id=scope.tenant_id)), tx.savepoint():
                if staged is not None:
                    self._staged[event.type].write(tx, scope, event, staged.inputs, staged.result)
                else:
                    self._run_plain(self.handlers[event.type], tx, scope, event)  # type: ignore[arg-type]
        except Exception as error:
            return error
        return None

    def _run_plain(self, handler: Handler, tx: Tx, scope: Scope, event: DomainEvent) -> None:
        started = time.monotonic()
        handler(tx, scope, event)
        if time.monotonic() - started > self.settings.handler_timeout_seconds:
            raise HandlerTimeoutError(self.settings.handler_timeout_seconds)  # its writes roll back

    # -- giving back, logging, pruning ---------------------------------------------------------------------------
    def _give_back(self, batch: Sequence[Claim]) -> None:
        try:
            release(self.db, self.name, [c.event.id for c in batch])
        except Exception as error:  # the database is gone too: the leases will run out instead
            log(logger, logging.ERROR, "eventbus.release_failed",
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
