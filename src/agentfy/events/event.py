"""``DomainEvent`` and its versioned JSON wire format.

The wire format is a JSON object with ``"v": 1`` and the event's fields by name; readers refuse versions
they do not know instead of guessing.  The tenant and agent IDs are plain strings on the wire, so nothing
stops a publisher from putting an ``agent_key`` there, and every consumer would then fail on its first
store query — so the bus validates them when an event is
published (:mod:`agentfy.events.validation`) and every consumer parses them again before touching the store.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Final

WIRE_VERSION: Final = 1

SESSION_COMPLETED: Final = "session.completed"
EPISODIC_CREATED: Final = "episodic.created"
ENTITY_UPSERTED: Final = "entity.upserted"


class WireFormatError(ValueError):
    """A serialised event that this version cannot read (unknown version, missing or mistyped field)."""


@dataclass(frozen=True, slots=True)
class DomainEvent:
    """Something that happened in one tenant.  ``agent_id`` is the agent's ID (never its key) or empty
    for team, tenant or anonymous events; ``user_id`` is the memory scope; ``source_id`` names what the
    event is about and, with the tenant and the type, deduplicates it."""

    id: str
    type: str
    tenant_id: str
    source_id: str
    occurred_at: str
    agent_id: str | None = None
    user_id: str | None = None
    payload: dict[str, Any] = field(default_factory=dict)

    def to_wire(self) -> str:
        return json.dumps({"v": WIRE_VERSION, "id": self.id, "type": self.type, "tenant_id": self.tenant_id,
                           "source_id": self.source_id, "agent_id": self.agent_id, "user_id": self.user_id,
                           "occurred_at": self.occurred_at, "payload": self.payload},
                          separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_wire(cls, text: str | bytes) -> DomainEvent:
        try:
            data = json.loads(text)
        except ValueError as error:
            raise WireFormatError(f"not JSON: {error}") from None
        if not isinstance(data, dict):
            raise WireFormatError("an event is a JSON object")
        if data.get("v") != WIRE_VERSION:
            raise WireFormatError(f"wire version {data.get('v')!r} is not supported (this reader: {WIRE_VERSION})")
        strings = ("id", "type", "tenant_id", "source_id", "occurred_at")
        for name in strings:
            if not isinstance(data.get(name), str):
                raise WireFormatError(f"field {name!r} must be a string")
        for name in ("agent_id", "user_id"):
            if data.get(name) is not None and not isinstance(data[name], str):
                raise WireFormatError(f"field {name!r} must be a string or null")
        payload = data.get("payload", {})
        if not isinstance(payload, dict):
            raise WireFormatError("field 'payload' must be an object")
        return cls(id=data["id"], type=data["type"], tenant_id=data["tenant_id"], source_id=data["source_id"],
                   occurred_at=data["occurred_at"], agent_id=data.get("agent_id"), user_id=data.get("user_id"),
                   payload=payload)
