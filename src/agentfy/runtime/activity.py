"""Work the platform starts on its own, and work it refuses: told to the tenant's WebSocket subscribers as a
run event of the agent (by its key) and kept in the organization's audit log with the ACTOR.

Four things happen without a person's message to the agent: a cron job fires, and a run hands work to
another (``spawn_subagent``, ``delegate``, ``session_send``, a team task's dispatch) — and either may be
refused (the creator's grant is gone, the target is out of reach, a limit is reached).  Each is one
:class:`Happened`, written by :func:`write` (an audit entry, in the caller's transaction so it lands with
the record of the work — a cron run's end, say) and told by :func:`announce` after the commit (a run event;
an event is a courtesy and never fails the work).  :func:`record` does both for callers with no
transaction of their own.

The split of what goes where is deliberate.  The **event** reaches every member of the tenant who
subscribed, so it carries only identifiers and outcomes (the job's or task's ID, the tool, the target's
agent key) — never a prompt, a reply or a refusal's reason, which may quote a conversation or its SCOPE.
The **audit entry** is read by admins and carries the reason, the task's ID and the target's ID, with the
ACTOR as its ``actor_id`` (the person the work acts for: a cron job's creator, the sender the hand-off was
asked by — never the synthetic ``ticker:``/``subagent:`` sender that carried them).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from agentfy.identity import Scope
from agentfy.runtime.events import (
    CRON_FIRED,
    CRON_REFUSED,
    HANDOFF_REFUSED,
    HANDOFF_STARTED,
    RunEvents,
    emit,
)
from agentfy.store.db import Database, Tx
from agentfy.store.repos import audit, orgs
from agentfy.store.repos.agents import Agent

logger: Final = logging.getLogger("agentfy.runtime")

#: The audit action of each event: what an admin filters the log by (``GET /v1/audit?action=…``).
AUDIT_ACTIONS: Final = {
    CRON_FIRED: "cron.fired",
    CRON_REFUSED: "cron.refused",
    HANDOFF_STARTED: "handoff.started",
    HANDOFF_REFUSED: "handoff.refused",
}


@dataclass(frozen=True, slots=True)
class Happened:
    """One fire, hand-off or refusal.  ``shown``: what the event carries (identifiers and outcomes only);
    ``kept``: what only the audit entry adds (reasons, IDs of targets); ``target_id``: the audit entry's
    target (the job, the target agent, the session)."""

    name: str
    agent: Agent
    actor_id: str | None
    target_id: str | None
    shown: Mapping[str, str] = field(default_factory=dict)
    kept: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.name not in AUDIT_ACTIONS:
            raise ValueError(f"unknown activity {self.name!r}; expected one of {', '.join(AUDIT_ACTIONS)}")


def write(tx: Tx, happened: Happened) -> str:
    """Append ``happened``'s audit entry in ``tx``; the tenant's slug, for :func:`announce`."""
    scope = Scope(happened.agent.tenant_id)
    audit.record_audit(tx, scope, action=AUDIT_ACTIONS[happened.name], actor_id=happened.actor_id,
                       target_id=happened.target_id,
                       details={"agent_key": happened.agent.agent_key, **happened.shown, **happened.kept})
    return orgs.get_organization(tx, scope).slug


def announce(events: RunEvents, happened: Happened, tenant_slug: str) -> None:
    """Publish ``happened`` as a run event of its agent (after the audit entry is committed)."""
    emit(events, happened.name, happened.agent, tenant_slug, dict(happened.shown))


def record(db: Database, events: RunEvents, happened: Happened) -> None:
    """:func:`write` in a transaction of its own, then :func:`announce` (worker thread).  A failure is logged,
    never raised: the work it records has already happened or been refused."""
    try:
        with db.transaction() as tx:
            slug = write(tx, happened)
    except Exception:
        logger.exception("runtime.activity_not_recorded", extra={"activity": happened.name,
                                                                 "agent_id": happened.agent.id})
        return
    announce(events, happened, slug)
