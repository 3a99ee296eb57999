"""The request's identity, in a ``contextvars.ContextVar``: :func:`bind` sets fields, :func:`current` reads them.

One immutable :class:`RequestContext` per task or thread: binding a field returns a *new* context and sets it
for the enclosed block only, so nothing leaks between concurrent asyncio tasks (each task runs in a copy of
the context it was created in) or threads (each thread starts from the empty context).

The two identities of the group-chat pattern live side by side:

* ``user_id`` — the SCOPE: memory, knowledge graph, sessions and files (``group:telegram:<chatID>``,
  ``guild:<guildID>:user:<senderID>``, or the sender in a DM, or the HTTP user);
* ``sender_id`` — the ACTOR: permission checks (always the individual, never the group);
* :attr:`RequestContext.actor_id` — the sender if set, else the user ID: audit trails, ownership, roles.

Typed: the tenant and agent ID are parsed on the way in (an ``agent_key`` can never be bound as the agent
ID); the key fields are ``agent_key`` values.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Final

from agentfy.identity.ids import AgentId, OrgId, parse_id
from agentfy.identity.keys import AgentKey, parse_agent_key
from agentfy.identity.roles import parse_role
from agentfy.identity.scope import Scope


class MissingTenantError(LookupError):
    """An operation that needs a tenant ran without one in its context: never a look-up by bare key."""

    def __init__(self, operation: str) -> None:
        super().__init__(f"{operation} needs a tenant in the request context (bind one with bind(tenant_id=...)); "
                         "an agent_key is only unique within a tenant")
        self.operation = operation


@dataclass(frozen=True, slots=True)
class RequestContext:
    """Who is asking, on whose behalf, in which tenant.  Empty fields are ``None``."""

    tenant_id: OrgId | None = None
    agent_id: AgentId | None = None
    agent_key: AgentKey | None = None
    tool_agent_key: AgentKey | None = None
    user_id: str | None = None
    sender_id: str | None = None
    role: str | None = None

    @property
    def actor_id(self) -> str | None:
        """The acting principal: the sender if set, else the user ID (audit, ownership, roles)."""
        return self.sender_id or self.user_id

    def scope(self) -> Scope:
        """The tenant scope, or :class:`MissingTenantError`."""
        if self.tenant_id is None:
            raise MissingTenantError("this operation")
        return Scope(self.tenant_id)


EMPTY: Final = RequestContext()
_current: contextvars.ContextVar[RequestContext] = contextvars.ContextVar("agentfy_request_context", default=EMPTY)


def current() -> RequestContext:
    """The context of the running task or thread (``EMPTY`` outside any binding)."""
    return _current.get()


def _validated(**fields: object) -> dict[str, object]:
    checked: dict[str, object] = {}
    for name, value in fields.items():
        if value is None:
            checked[name] = None
        elif name == "tenant_id":
            checked[name] = parse_id(value, OrgId, field="tenant_id")
        elif name == "agent_id":
            checked[name] = parse_id(value, AgentId, field="agent_id")
        elif name in ("agent_key", "tool_agent_key"):
            checked[name] = parse_agent_key(value, field=name)
        elif name == "role":
            checked[name] = parse_role(value)
        elif name in ("user_id", "sender_id"):
            if not isinstance(value, str):
                raise TypeError(f"{name} must be a string, got {type(value).__name__}")
            checked[name] = value or None
        else:
            raise TypeError(f"RequestContext has no field {name!r}")
    return checked


@contextmanager
def bind(**fields: object) -> Iterator[RequestContext]:
    """Set fields of the current context for the enclosed block (validated; ``None`` clears a field)."""
    context = replace(current(), **_validated(**fields))  # type: ignore[arg-type]
    token = _current.set(context)
    try:
        yield context
    finally:
        _current.reset(token)


@contextmanager
def use(context: RequestContext) -> Iterator[RequestContext]:
    """Make ``context`` (e.g. one rebuilt from an event or a queued message) current for the block."""
    token = _current.set(context)
    try:
        yield context
    finally:
        _current.reset(token)


def set_for_task(context: RequestContext) -> None:
    """Make ``context`` current for the rest of the running task, without a block to restore it.

    Only for a boundary that owns a fresh copy of the context, such as the gateway's per-request task:
    the value dies with the task.  Everywhere else use :func:`bind` or :func:`use`.
    """
    _current.set(context)
