"""Publishing an event that becomes due later (the dreaming debounce's timer).

``publish_at`` is :func:`agentfy.events.outbox.publish` with ``available_at`` = T: the same transaction, the
same ID validation and dedup, and workers do not claim the event before T.  The outbox stores
``available_at`` as the store's timestamp text (ISO-8601 UTC, microseconds, ``Z``), which sorts and
compares as time; :func:`stamp` writes that form from a timezone-aware datetime.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from agentfy.events.event import DomainEvent
from agentfy.events.outbox import publish
from agentfy.events.settings import DEFAULT_BUS_SETTINGS, BusSettings
from agentfy.store.db import Tx


def stamp(moment: datetime) -> str:
    """``moment`` (timezone-aware) as the store's timestamp text."""
    if moment.tzinfo is None:
        raise ValueError(f"{moment!r} has no timezone; the outbox compares UTC times")
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def parse_stamp(text: str) -> datetime:
    """A store timestamp (``2026-01-02T03:04:05.000006Z``) as an aware UTC datetime."""
    moment = datetime.fromisoformat(text.removesuffix("Z"))
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def publish_at(tx: Tx, due: datetime, *, type: str, tenant_id: str, source_id: str,
               agent_id: str | None = None, user_id: str | None = None, payload: dict[str, Any] | None = None,
               settings: BusSettings = DEFAULT_BUS_SETTINGS) -> DomainEvent | None:
    """:func:`publish`, due at ``due`` instead of now; ``None`` if ``(tenant, type, source_id)`` exists."""
    return publish(tx, type=type, tenant_id=tenant_id, source_id=source_id, agent_id=agent_id, user_id=user_id,
                   payload=payload, settings=settings, available_at=stamp(due))
