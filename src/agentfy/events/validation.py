"""Publish-time validation of an event's IDs: an ``agent_key`` where an ID belongs is caught at the publisher.

The tenant ID and the agent ID of an event must be IDs (an empty agent ID is allowed for team, tenant and
anonymous events).  Consumers parse them and query the store with them, so a publisher that writes an
``agent_key`` such as ``goctech-leader`` — or the nil UUID — breaks every consumer downstream.

* Default (``strict=False``): the publish goes through, and a structured warning
  ``eventbus.non_id_agent_id`` / ``eventbus.non_id_tenant_id`` is logged and counted — here, per process,
  and by :func:`~agentfy.events.outbox.publish` in the durable counters — so the drift is visible before it
  is enforced.  The consumer will dead-letter the event.
* ``strict=True``: the publish is refused with :class:`InvalidIdError` and nothing is written.
"""

from __future__ import annotations

import collections
import logging
import threading
from typing import Final

from agentfy.events.event import DomainEvent
from agentfy.events.logs import event_fields, log
from agentfy.identity import InvalidIdError
from agentfy.ids import is_id

logger: Final = logging.getLogger("agentfy.eventbus")

NON_ID_AGENT_ID: Final = "eventbus.non_id_agent_id"
NON_ID_TENANT_ID: Final = "eventbus.non_id_tenant_id"

_counts: collections.Counter[str] = collections.Counter()
_counts_lock = threading.Lock()


def drift_counts() -> dict[str, int]:
    """How many events were published with a non-ID tenant or agent since start (or the last reset)."""
    with _counts_lock:
        return dict(_counts)


def reset_drift_counts() -> None:
    with _counts_lock:
        _counts.clear()


def check_event_ids(event: DomainEvent, *, strict: bool) -> list[str]:
    """The warnings for ``event`` (empty when its IDs are fine); in strict mode the first one raises."""
    agent_id = event.agent_id
    if is_id(event.tenant_id, "org") and (not agent_id or is_id(agent_id, "agent")):
        return []  # the common case, kept to two calls: this runs on every publish
    problems: list[tuple[str, str, str, str]] = []
    if not is_id(event.tenant_id, "org"):
        problems.append((NON_ID_TENANT_ID, "tenant_id", "org", event.tenant_id))
    if event.agent_id and not is_id(event.agent_id, "agent"):
        problems.append((NON_ID_AGENT_ID, "agent_id", "agent", event.agent_id))
    for name, field, prefix, value in problems:
        if strict:
            raise InvalidIdError(value, prefix, field=f"event.{field}")
        with _counts_lock:
            _counts[name] += 1
        log(logger, logging.WARNING, name, event_fields(event, field=field, value=value, strict=False))
    return [name for name, *_ in problems]
