"""Reading a consolidation event: its tenant and agent IDs first, then its payload.

Defence in depth against an event whose agent ID is an ``agent_key`` (its string fields cannot say which
identity they hold): the :class:`~agentfy.events.worker.Worker` already parses the tenant
and the agent ID before it calls a handler, but a handler can also be called directly (a test, a replay
tool, another bus), so every consolidation handler starts with :func:`route`.  It parses both IDs before
anything else — before the first read, let alone a write — and raises
:class:`~agentfy.identity.InvalidIdError` naming the bad value (``invalid agent_id 'goctech-leader'``),
which the worker dead-letters at once.

Every consolidation event is about one agent, so an empty agent ID is refused here too (the bus allows it for
team and tenant events, which never reach these handlers).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentfy.events.event import DomainEvent
from agentfy.events.handlers import DeterministicEventError
from agentfy.identity import AgentId, OrgId, Scope, parse_id


class InvalidEventError(DeterministicEventError):
    """An event that can never be handled (a missing or mistyped payload field, a tenant that is not the
    scope's, a session of another agent): the worker dead-letters it at once instead of retrying."""


@dataclass(frozen=True, slots=True)
class Route:
    """Where an event's effects go: the tenant ``scope``, the agent's ID and the memory SCOPE ``user_id``
    (``group:telegram:<chat>``, a sender ID, or ``""`` for the agent's own memory)."""

    scope: Scope
    agent_id: AgentId
    user_id: str


def route(scope: Scope, event: DomainEvent) -> Route:
    """Parse the event's tenant and agent IDs and check the tenant is ``scope``'s; nothing else is touched.

    Raises :class:`InvalidIdError` for a tenant or agent ID that is not an ID (a slug, an ``agent_key``, the
    nil UUID, an empty value) and :class:`InvalidEventError` for a valid tenant that is not the scope's.
    """
    tenant = parse_id(event.tenant_id, OrgId, field="tenant_id")
    agent = parse_id(event.agent_id if event.agent_id is not None else "", AgentId, field="agent_id")
    if tenant != scope.tenant_id:
        raise InvalidEventError(f"event {event.id!r} belongs to tenant_id {tenant!r} but was handled in the scope "
                                f"of tenant {scope.tenant_id!r}; refusing to write across tenants")
    return Route(scope, agent, event.user_id or "")


def payload_text(event: DomainEvent, name: str, *, allow_empty: bool = False) -> str:
    """``event.payload[name]`` as a string, or :class:`InvalidEventError` naming the field and the value."""
    value: Any = event.payload.get(name)
    if not isinstance(value, str) or (not value and not allow_empty):
        raise InvalidEventError(f"invalid payload.{name} {value!r} in {event.type} event {event.id!r}: "
                                "expected a non-empty string")
    return value


def payload_count(event: DomainEvent, name: str) -> int:
    """``event.payload[name]`` as an integer >= 0, or :class:`InvalidEventError`."""
    value: Any = event.payload.get(name)
    if type(value) is not int or value < 0:
        raise InvalidEventError(f"invalid payload.{name} {value!r} in {event.type} event {event.id!r}: "
                                "expected an integer >= 0")
    return value


def payload_id(event: DomainEvent, name: str, prefix: str) -> str:
    """``event.payload[name]`` parsed as an ID of ``prefix``; :class:`InvalidIdError` names ``payload.<name>``."""
    return parse_id(event.payload.get(name), prefix, field=f"payload.{name}")
