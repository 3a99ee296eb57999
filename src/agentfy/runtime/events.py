"""A run's progress for WebSocket clients: started, each tool call, the reply, finished.

Published by agent key within the tenant (:class:`~agentfy.gateway.rpc.broadcast.AgentEvent`: the key and the
tenant slug, with the agent's ID), to the tenant's subscribers only.  The events carry the run's ID and a
tool's name, never the text or the scope of the conversation: every member of the tenant may subscribe, and a
conversation belongs to its scope.  Publishing never fails a run (a bad event is logged and dropped).
"""

from __future__ import annotations

import logging
from typing import Final, Protocol

from agentfy.gateway.rpc.broadcast import AgentEvent, Broadcaster
from agentfy.identity.keys import TenantSlug
from agentfy.store.repos.agents import Agent

logger: Final = logging.getLogger("agentfy.runtime")


class RunEvents(Protocol):
    """Where a run's events go (the gateway's broadcaster; tests collect them)."""

    def publish(self, tenant_id: str, event: AgentEvent) -> int: ...


class NoEvents:
    """Nobody listens (the terminal chat)."""

    def publish(self, tenant_id: str, event: AgentEvent) -> int:
        return 0


def emit(sink: RunEvents | Broadcaster, name: str, agent: Agent, tenant_slug: str, run: dict[str, str]) -> None:
    """Publish one run event of ``agent`` to its tenant's subscribers."""
    try:
        event = AgentEvent(name, agent.id, agent.agent_key, TenantSlug(tenant_slug), run=run)
        sink.publish(agent.tenant_id, event)
    except Exception:  # an event is a courtesy; the run goes on
        logger.exception("runtime.event_failed", extra={"event_name": name})
