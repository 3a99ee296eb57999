"""Logs and traces, each with the identity it needs: the display identities for people, the IDs for joins.

**Logs** are read by people who grep: they carry the display identities, ``agent`` (the ``agent_key``)
and ``tenant`` (the tenant slug), and always *together* — a key is unique only within its tenant, so a key
alone names no agent.  The API makes the pair impossible to split: :func:`agent_log_fields` and
:class:`AgentLoggerAdapter` require both and validate both (an ID is refused as either, so an ``org-…`` ID
cannot pass for the slug nor an ``agent-…`` ID for the key).  :class:`AgentTenantPairFilter` catches code
that bypasses them with a bare ``extra={"agent": ...}``; install it on handlers in tests and development.

**Spans** correlate across sessions and end up in the ``spans`` table (no foreign key: the table is
append-only and written at a high rate, so nothing but the type of the value guards it): their
``agent_id`` attribute is the agent's ID, never its key.  :func:`agent_span` takes the whole
:class:`~agentfy.store.repos.agents.Agent`, so the caller never chooses which string goes where, and also
sets, as separately named display attributes for people reading traces:

=================  ====================================================
``agent_id``       the agent's ID (``agent-calm-rivers-k8m4p2d7n9x3``)
``tenant_id``      the tenant's ID (``org-…``), for the same reason
``agent.key``      the ``agent_key`` — display only, never for joins
``tenant.slug``    the tenant slug — display only, never for joins
=================  ====================================================
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from typing import Any, Final

from opentelemetry.trace import Span, Tracer
from opentelemetry.util.types import AttributeValue

from agentfy.identity import parse_agent_key, parse_id
from agentfy.identity.keys import parse_tenant_slug
from agentfy.store.repos.agents import Agent

#: The log record attributes (``extra`` keys) of the pair.
LOG_AGENT_FIELD: Final = "agent"
LOG_TENANT_FIELD: Final = "tenant"

SPAN_AGENT_ID: Final = "agent_id"
SPAN_TENANT_ID: Final = "tenant_id"
SPAN_AGENT_KEY: Final = "agent.key"
SPAN_TENANT_SLUG: Final = "tenant.slug"
_RESERVED_SPAN_ATTRIBUTES: Final = frozenset({SPAN_AGENT_ID, SPAN_TENANT_ID, SPAN_AGENT_KEY, SPAN_TENANT_SLUG})


def agent_log_fields(agent_key: str, tenant_slug: str) -> dict[str, str]:
    """``{"agent": key, "tenant": slug}`` for ``extra=``: both required, both validated."""
    return {LOG_AGENT_FIELD: parse_agent_key(agent_key), LOG_TENANT_FIELD: parse_tenant_slug(tenant_slug)}


class AgentLoggerAdapter(logging.LoggerAdapter[logging.Logger]):
    """A logger whose every record carries ``agent`` and ``tenant``; a caller's own ``extra`` is kept.

    A call that passes its own ``agent`` or ``tenant`` in ``extra`` raises ``ValueError``: it would pair a
    key with the wrong tenant.  Use another adapter for another agent.
    """

    def __init__(self, logger: logging.Logger, *, agent_key: str, tenant_slug: str) -> None:
        super().__init__(logger, agent_log_fields(agent_key, tenant_slug))

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, MutableMapping[str, Any]]:
        own: Mapping[str, object] = kwargs.get("extra") or {}
        clash = own.keys() & {LOG_AGENT_FIELD, LOG_TENANT_FIELD}
        if clash:
            raise ValueError(f"extra must not set {', '.join(sorted(clash))}: the adapter owns the agent/tenant "
                             "pair")
        kwargs["extra"] = {**own, **(self.extra or {})}
        return msg, kwargs


def agent_logger(logger: logging.Logger | str, agent: Agent, tenant_slug: str) -> AgentLoggerAdapter:
    """An :class:`AgentLoggerAdapter` for a stored agent (its key) in the tenant with this slug."""
    base = logging.getLogger(logger) if isinstance(logger, str) else logger
    return AgentLoggerAdapter(base, agent_key=agent.agent_key, tenant_slug=tenant_slug)


class AgentTenantPairFilter(logging.Filter):
    """Raises ``ValueError`` for a record that has an ``agent`` field but no ``tenant`` field.

    A tenant without an agent is fine (tenant-level events).  Raising, rather than dropping the record,
    makes the bug visible where the call is; install it on handlers in tests and development.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if hasattr(record, LOG_AGENT_FIELD) and not getattr(record, LOG_TENANT_FIELD, None):
            raise ValueError(f"log record {record.getMessage()!r} names an agent without its tenant; "
                             "use agent_log_fields(agent_key, tenant_slug) or an AgentLoggerAdapter")
        return True


def agent_span_attributes(agent: Agent, tenant_slug: str) -> dict[str, AttributeValue]:
    """The identity attributes of an agent's span: IDs under ``*_id``, display names under ``*.key/slug``."""
    return {
        SPAN_AGENT_ID: parse_id(agent.id, "agent", field="agent.id"),
        SPAN_TENANT_ID: parse_id(agent.tenant_id, "org", field="agent.tenant_id"),
        SPAN_AGENT_KEY: parse_agent_key(agent.agent_key, field="agent.agent_key"),
        SPAN_TENANT_SLUG: parse_tenant_slug(tenant_slug),
    }


@contextmanager
def agent_span(tracer: Tracer, name: str, agent: Agent, tenant_slug: str, *,
               attributes: Mapping[str, AttributeValue] | None = None) -> Iterator[Span]:
    """Start ``name`` as the current span with the agent's identity attributes (the module's table).

    ``attributes`` may add others but not replace the identity ones (``ValueError``).  Exceptions are
    recorded on the span and re-raised (OpenTelemetry's default).
    """
    extra = dict(attributes or {})
    clash = extra.keys() & _RESERVED_SPAN_ATTRIBUTES
    if clash:
        raise ValueError(f"attributes must not set {', '.join(sorted(clash))}: agent_span sets them from the agent")
    with tracer.start_as_current_span(name, attributes={**extra, **agent_span_attributes(agent, tenant_slug)}) as span:
        yield span
