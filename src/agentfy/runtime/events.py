"""The agent events WebSocket clients hear — their names and their one shape, :class:`AgentEvent` — and how
a run publishes its own: started, each tool call, the reply, finished.

An event names the agent by its **display identity** — ``agent_key`` and the tenant slug, always together
(a key is unique only within its tenant) — plus its ID for clients that store it (the UI's agent events
carry the key; never only the ID).  :class:`AgentEvent` refuses to exist without both, and refuses an ID in
place of either.

The events live here, beside the runtime that publishes the run events, and below the gateway: the gateway's
broadcaster (:mod:`agentfy.gateway.rpc.broadcast`) delivers them to the tenant's WebSocket subscribers of
every gateway process (the other processes hear them as broadcasts of the change feed) and makes the
``agent.*`` change events from the change feed; the runtime only needs somewhere to publish
(:class:`RunEvents`).  Run events carry the run's ID and a tool's name, never the scope of the conversation,
and its text only in ``agent.run.delta``, which reaches only the subscribers who may read the conversation:
every member of the tenant may subscribe, and a conversation belongs to its scope.  Publishing
never fails a run (a bad event is logged and dropped).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Final, Protocol

from agentfy.identity import AgentId, AgentKey, parse_agent_key, parse_id
from agentfy.identity.keys import TenantSlug, parse_tenant_slug
from agentfy.store.repos.agents import Agent

logger: Final = logging.getLogger("agentfy.runtime")

#: An agent's changes, made by the gateway's broadcaster from the change feed (whoever made the change).
AGENT_CREATED: Final = "agent.created"
AGENT_UPDATED: Final = "agent.updated"
AGENT_RENAMED: Final = "agent.renamed"
AGENT_DELETED: Final = "agent.deleted"
AGENT_EVENTS: Final = (AGENT_CREATED, AGENT_UPDATED, AGENT_RENAMED, AGENT_DELETED)
#: A run's progress, published by the runtime (:func:`emit`).  They carry ``run``: the run's
#: ID and, for a tool call, the tool's name — never the conversation's text or scope, because every member
#: of the tenant may subscribe and a conversation belongs to its scope.
RUN_STARTED: Final = "agent.run.started"
TOOL_CALLED: Final = "agent.tool.called"
REPLIED: Final = "agent.replied"
RUN_FINISHED: Final = "agent.run.finished"
#: A piece of the reply as the model streams it (``run.text``).  It carries conversation text, so it reaches
#: only subscribers who may read the run's conversation: the event's ``scope_user_id`` says whose it is.
RUN_DELTA: Final = "agent.run.delta"
#: Work started without a person's message to the agent, or refused (:mod:`agentfy.runtime.activity`): a cron
#: job's fire (``run``: ``job_id``, ``due_at``, ``outcome`` ``ok``/``failed``) or its refusal (``job_id``,
#: ``due_at``), a hand-off to another run (``tool``, ``task_id``, ``target``: the target's agent key) or its
#: refusal (``tool``).  Identifiers and outcomes only: the reasons are in the audit log.
CRON_FIRED: Final = "agent.cron.fired"
CRON_REFUSED: Final = "agent.cron.refused"
HANDOFF_STARTED: Final = "agent.handoff.started"
HANDOFF_REFUSED: Final = "agent.handoff.refused"
WORK_EVENTS: Final = (CRON_FIRED, CRON_REFUSED, HANDOFF_STARTED, HANDOFF_REFUSED)
RUN_EVENTS: Final = (RUN_STARTED, TOOL_CALLED, RUN_DELTA, REPLIED, RUN_FINISHED, *WORK_EVENTS)

#: One event as a WebSocket message (JSON).
Message = dict[str, Any]


@dataclass(frozen=True, slots=True)
class AgentEvent:
    """One agent event as clients see it: the display identity (key + tenant slug) and the ID."""

    name: str
    agent_id: AgentId
    agent_key: AgentKey
    tenant_slug: TenantSlug
    previous_key: AgentKey | None = None
    run: dict[str, str] | None = None
    #: The SCOPE of the run's conversation, on events that carry its text (``agent.run.delta``): the
    #: deliverer gives them only to subscribers who may read that scope's conversations.  Never sent.
    scope_user_id: str | None = None

    def __post_init__(self) -> None:
        if self.name not in AGENT_EVENTS and self.name not in RUN_EVENTS:
            raise ValueError(f"unknown agent event {self.name!r}; expected one of "
                             f"{', '.join(AGENT_EVENTS + RUN_EVENTS)}")
        parse_id(self.agent_id, "agent", field="agent.id")
        parse_agent_key(self.agent_key, field="agent.agent_key")  # an ID is refused as a key
        parse_tenant_slug(self.tenant_slug, field="agent.tenant_slug")  # and as a slug
        if self.previous_key is not None:
            parse_agent_key(self.previous_key, field="agent.previous_key")

    def message(self) -> Message:
        """``{"event": name, "agent": {"id", "agent_key", "tenant_slug"[, "previous_key"]}[, "run": {…}]}``."""
        agent: Message = {"id": self.agent_id, "agent_key": self.agent_key, "tenant_slug": self.tenant_slug}
        if self.previous_key is not None:
            agent["previous_key"] = self.previous_key
        message: Message = {"event": self.name, "agent": agent}
        if self.run is not None:
            message["run"] = dict(self.run)
        return message


class RunEvents(Protocol):
    """Where a run's events go (the gateway's broadcaster; tests collect them)."""

    def publish(self, tenant_id: str, event: AgentEvent) -> int: ...


class NoEvents:
    """Nobody listens (the terminal chat)."""

    def publish(self, tenant_id: str, event: AgentEvent) -> int:
        return 0


def emit(sink: RunEvents, name: str, agent: Agent, tenant_slug: str, run: dict[str, str], *,
         scope_user_id: str | None = None) -> None:
    """Publish one run event of ``agent`` to its tenant's subscribers (``scope_user_id``: see
    :attr:`AgentEvent.scope_user_id`)."""
    try:
        event = AgentEvent(name, agent.id, agent.agent_key, TenantSlug(tenant_slug), run=run,
                           scope_user_id=scope_user_id)
        sink.publish(agent.tenant_id, event)
    except Exception:  # an event is a courtesy; the run goes on
        logger.exception("runtime.event_failed", extra={"event_name": name})
