"""Dead letters the way the bus makes them: :func:`dead_letter` publishes an event and has a worker fail it
for good (a deterministic error dead-letters at once), through the outbox and worker themselves."""

from __future__ import annotations

from typing import Final

from agentfy.events.event import DomainEvent
from agentfy.events.handlers import DeterministicEventError
from agentfy.events.outbox import publish
from agentfy.events.settings import BusSettings
from agentfy.events.worker import Worker
from agentfy.identity import Scope
from agentfy.store.db import Database, Tx

#: The event type these dead letters have (only its handler fails; no other event is claimed).
DOOMED_TYPE: Final = "test.doomed"
_FAST: Final = BusSettings(backoff_base_seconds=0, backoff_max_seconds=0, max_attempts=1, batch_size=50)


def _refuse(tx: Tx, scope: Scope, event: DomainEvent) -> None:
    raise DeterministicEventError(f"cannot handle {event.source_id}: the handler refuses it")


def dead_letter(db: Database, scope: Scope, source_id: str, *, payload: dict[str, object] | None = None) -> str:
    """The ID of a new event of ``scope``'s organization about ``source_id``, dead-lettered by a worker."""
    with db.transaction() as tx:
        event = publish(tx, type=DOOMED_TYPE, tenant_id=scope.tenant_id, source_id=source_id,
                        payload=payload or {})
    assert event is not None
    Worker(db, {DOOMED_TYPE: _refuse}, settings=_FAST).run_once()
    return event.id
