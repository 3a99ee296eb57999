"""Workers: claim events, run their handler in the event's tenant scope, acknowledge or fail them.

A handler is ``handler(tx, scope, event)``.  It runs in one transaction with the acknowledgement, so its
writes and the "done" mark commit together; the scope is parsed from the event's tenant ID first, so an
event with a non-ID tenant never reaches a handler.  Failures are sorted the way the seed's regression
tests expect: a deterministic error (an invalid ID or key, a row that does not exist, bad input) is
dead-lettered at once and never retried; anything else (a database hiccup) is retried with backoff until
the last attempt, then dead-lettered.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable, Mapping
from typing import Final

from agentfy.events.event import DomainEvent, WireFormatError
from agentfy.events.outbox import DEFAULT_SETTINGS, BusSettings, Claim, LeaseLostError, claim, complete, fail
from agentfy.identity import InvalidAgentKeyError, InvalidIdError, Scope, parse_id
from agentfy.identity.context import RequestContext, use
from agentfy.store.db import Database, Tx
from agentfy.store.errors import InvalidInputError, NotFoundError

logger: Final = logging.getLogger("agentfy.events.worker")

Handler = Callable[[Tx, Scope, DomainEvent], None]


class DeterministicEventError(Exception):
    """Raised by a handler for an event that can never succeed: dead-lettered at once, not retried."""


#: Errors that repeating cannot fix.
DETERMINISTIC_ERRORS: Final = (InvalidIdError, InvalidAgentKeyError, InvalidInputError, NotFoundError,
                               WireFormatError, DeterministicEventError)


def default_worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"


class Worker:
    """Handles the event types in ``handlers``; ``run_once`` for tests and CLIs, ``run_forever`` to serve."""

    def __init__(self, db: Database, handlers: Mapping[str, Handler], *, name: str | None = None,
                 settings: BusSettings = DEFAULT_SETTINGS, batch_size: int = 10) -> None:
        self.db = db
        self.handlers = dict(handlers)
        self.name = name or default_worker_name()
        self.settings = settings
        self.batch_size = batch_size

    def run_once(self) -> int:
        """Claim one batch and handle it; the number of events handled (0: nothing was due)."""
        held = claim(self.db, self.name, self.handlers, limit=self.batch_size, settings=self.settings)
        for item in held:
            self.handle(item)
        return len(held)

    def run_forever(self, stop: threading.Event, *, poll_seconds: float = 0.5) -> None:
        """Poll until ``stop`` is set; a batch that found work is followed at once by the next."""
        while not stop.is_set():
            try:
                busy = self.run_once()
            except Exception:  # a claim that failed (database down): log, wait, try again
                logger.exception("eventbus.claim_failed", extra={"worker": self.name})
                busy = 0
            if not busy:
                stop.wait(poll_seconds)

    def handle(self, held: Claim) -> str:
        """Run the handler of one claimed event; returns ``done``, ``pending`` (retry), ``dead`` or ``lost``."""
        event = held.event
        fields = {"event_id": event.id, "event_type": event.type, "tenant_id": event.tenant_id,
                  "agent_id": event.agent_id, "attempt": held.attempt, "worker": self.name}
        try:
            scope = Scope.of(event.tenant_id)
            if event.agent_id:  # an empty agent ID is a team, tenant or anonymous event
                parse_id(event.agent_id, "agent", field="agent_id")
            with use(RequestContext(tenant_id=scope.tenant_id)), self.db.transaction() as tx:
                self.handlers[event.type](tx, scope, event)
                complete(tx, held)
        except LeaseLostError:
            logger.warning("eventbus.lease_lost", extra=fields)
            return "lost"
        except DETERMINISTIC_ERRORS as error:
            logger.warning("eventbus.dead_letter", extra={**fields, "error": str(error)})
            return fail(self.db, held, f"{type(error).__name__}: {error}", retry=False, settings=self.settings)
        except Exception as error:
            status = fail(self.db, held, f"{type(error).__name__}: {error}", retry=True, settings=self.settings)
            logger.warning("eventbus.retry" if status == "pending" else "eventbus.dead_letter",
                           extra={**fields, "error": str(error)})
            return status
        logger.debug("eventbus.done", extra=fields)
        return "done"
