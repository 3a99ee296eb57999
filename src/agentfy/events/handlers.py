"""What a worker runs for an event: a plain handler, or a staged one that does its slow work outside any
transaction.

* A **plain handler** is ``handler(tx, scope, event)``.  It runs inside the batch's write transaction, under
  a savepoint of its own, so it must be quick: on SQLite that transaction holds the database's only write
  lock, and every other writer waits for it.
* A **staged handler** (:class:`StagedHandler`) splits the work in three:

  1. ``read(tx, scope, event)`` in a read-only transaction — load what the computation needs;
  2. ``compute(inputs)`` with **no transaction open** — the slow part (a model call); it runs in a thread of
     its own, bounded by the handler timeout, while the worker keeps the event's lease renewed;
  3. ``write(tx, scope, event, inputs, result)`` in the batch's write transaction, under the event's
     savepoint — re-check what may have changed since ``read`` (the worker has already re-checked the
     lease), then write.  The acknowledgement commits with these writes.

  So a summariser that takes ten seconds holds no lock for ten seconds, and publishers and API writes
  carry on.  ``compute`` must not touch the store: its result is only written in ``write``.

A deterministic failure (:data:`DETERMINISTIC_ERRORS`: an invalid ID or key, a row that does not exist, bad
input) dead-letters the event at once; anything else is retried with backoff.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, Protocol, TypeAlias, TypeVar, runtime_checkable

from agentfy.events.event import DomainEvent, WireFormatError
from agentfy.identity import InvalidAgentKeyError, InvalidIdError, Scope
from agentfy.store.db import Tx
from agentfy.store.errors import InvalidInputError, NotFoundError

Handler: TypeAlias = Callable[[Tx, Scope, DomainEvent], None]

Inputs = TypeVar("Inputs")
Result = TypeVar("Result")


class DeterministicEventError(Exception):
    """Raised by a handler for an event that can never succeed: dead-lettered at once, not retried."""


#: Errors that repeating cannot fix.
DETERMINISTIC_ERRORS: Final = (InvalidIdError, InvalidAgentKeyError, InvalidInputError, NotFoundError,
                               WireFormatError, DeterministicEventError)


@runtime_checkable
class StagedHandler(Protocol[Inputs, Result]):
    """A handler whose slow part runs outside any transaction (see the module docstring)."""

    def read(self, tx: Tx, scope: Scope, event: DomainEvent) -> Inputs: ...

    def compute(self, inputs: Inputs) -> Result: ...

    def write(self, tx: Tx, scope: Scope, event: DomainEvent, inputs: Inputs, result: Result) -> object: ...


AnyHandler: TypeAlias = "Handler | StagedHandler[Any, Any]"


def run_staged(handler: StagedHandler[Inputs, Result], tx: Tx, scope: Scope, event: DomainEvent) -> object:
    """All three stages in one transaction: the same effects as through a worker, for direct calls and
    replays (without the benefit of computing outside the transaction).  Returns what ``write`` returns."""
    inputs = handler.read(tx, scope, event)
    return handler.write(tx, scope, event, inputs, handler.compute(inputs))


class FanOut:
    """Several subscribers of one event type as one handler: each stage runs every subscriber's part, in
    order, so the writes of all of them share the event's savepoint and acknowledgement.  A failure of any
    rolls all of them back and the event is retried (or dead-lettered) as a whole, which is safe only when
    each subscriber is idempotent.  Staged, and callable as a plain handler (all stages in one transaction).
    """

    def __init__(self, subscribers: Sequence[AnyHandler]) -> None:
        self.subscribers = tuple(subscribers)

    def read(self, tx: Tx, scope: Scope, event: DomainEvent) -> list[object]:
        return [s.read(tx, scope, event) if isinstance(s, StagedHandler) else None for s in self.subscribers]

    def compute(self, inputs: list[object]) -> list[object]:
        return [s.compute(i) if isinstance(s, StagedHandler) else None for s, i in zip(self.subscribers, inputs,
                                                                                          strict=True)]

    def write(self, tx: Tx, scope: Scope, event: DomainEvent, inputs: list[object], result: list[object]) -> None:
        for subscriber, inputs_of, result_of in zip(self.subscribers, inputs, result, strict=True):
            if isinstance(subscriber, StagedHandler):
                subscriber.write(tx, scope, event, inputs_of, result_of)
            else:
                subscriber(tx, scope, event)

    def __call__(self, tx: Tx, scope: Scope, event: DomainEvent) -> None:
        run_staged(self, tx, scope, event)


def fan_out(*subscribers: AnyHandler) -> FanOut:
    """One handler that runs ``subscribers`` in order for the same event (see :class:`FanOut`)."""
    return FanOut(subscribers)
