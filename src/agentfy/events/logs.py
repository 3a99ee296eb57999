"""Log records of the bus: a stable name plus the event's fields, in the message and as attributes.

Why both: a plain ``logging`` setup prints the message only, and a bare ``eventbus.dead_letter`` tells an
operator nothing; structured handlers read the attributes.  The message is ``name key=value …`` (logfmt:
a value with spaces or quotes is JSON-quoted), so it can be grepped and parsed.

The fields of an event: ``event_id``, ``event_type``, ``tenant_id``, ``agent_id``, and where known
``agent_key`` (looked up for the log only: keys are what people read, IDs what systems use), ``attempt``,
``reason`` and ``worker``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from typing import Final

from agentfy.events.event import DomainEvent
from agentfy.identity import Scope
from agentfy.ids import is_id
from agentfy.store.db import Database
from agentfy.store.errors import StoreError
from agentfy.store.repos import agents

_MAX_VALUE: Final = 500
_PLAIN: Final = frozenset(" \"'=\n\t\\")


def _value(value: object) -> str:
    text = str(value)
    if len(text) > _MAX_VALUE:
        text = text[:_MAX_VALUE] + "…"
    return json.dumps(text, ensure_ascii=False) if not text or _PLAIN.intersection(text) else text


def event_fields(event: DomainEvent, **more: object) -> dict[str, object]:
    """The fields every record about ``event`` carries, plus ``more``."""
    return {"event_id": event.id, "event_type": event.type, "tenant_id": event.tenant_id,
            "agent_id": event.agent_id, **more}


def log(logger: logging.Logger, level: int, name: str, fields: Mapping[str, object]) -> None:
    """Log ``name key=value …`` with ``fields`` (``None`` values left out) also set as record attributes."""
    if not logger.isEnabledFor(level):
        return
    present = {key: value for key, value in fields.items() if value is not None}
    text = " ".join(f"{key}={_value(value)}" for key, value in present.items())
    logger.log(level, "%s %s", name, text, extra={"bus_event": name, **present})


def agent_keys(db: Database, events: Iterable[DomainEvent]) -> dict[tuple[str, str], str]:
    """``{(tenant_id, agent_id): agent_key}`` of the events' agents that exist, for log records only.

    Best effort: an event whose IDs are not IDs, or whose agent is gone, has no key, and a database error
    gives no keys at all rather than losing the record.
    """
    wanted = {(e.tenant_id, e.agent_id) for e in events
              if e.agent_id and is_id(e.tenant_id, "org") and is_id(e.agent_id, "agent")}
    keys: dict[tuple[str, str], str] = {}
    if not wanted:
        return keys
    try:
        with db.transaction(write=False) as tx:
            for tenant_id, agent_id in wanted:
                try:
                    keys[(tenant_id, agent_id)] = agents.get_agent(tx, Scope.of(tenant_id), agent_id).agent_key
                except StoreError:
                    continue  # deleted or archived: the record goes out without a key
    except StoreError:
        return {}
    return keys
