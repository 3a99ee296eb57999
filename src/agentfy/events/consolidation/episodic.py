"""The episodic worker: ``session.completed`` → one episodic summary → ``episodic.created``.

Contract of :meth:`EpisodicWorker.handle` (a :data:`~agentfy.events.worker.Handler`):

1. the event's tenant and agent IDs are parsed first (:func:`~.envelope.route`); a bad one raises
   :class:`~agentfy.identity.InvalidIdError` naming the value and nothing is read or written;
2. the payload names the session (``session_key``) and the compaction (``compaction_count``); the session is
   loaded in the event's tenant and must belong to the event's agent;
3. its messages (oldest first, at most ``max_session_messages``) go through the :class:`Summariser`; an
   empty summary means "nothing to remember": nothing is written;
4. the summary is created idempotently per (tenant, session key, compaction count) and, only if this call
   created it, ``episodic.created`` is published in the same transaction — so a redelivered or replayed
   ``session.completed`` neither duplicates the summary nor re-triggers the downstream workers.

:func:`publish_session_completed` is the publisher's half: it takes the agent's ID and the scope from the
stored session, so a caller cannot put an ``agent_key`` on the event (the seed's Trap 1).
"""

from __future__ import annotations

import logging
from typing import Final

from agentfy.events.consolidation.envelope import InvalidEventError, payload_count, payload_text, route
from agentfy.events.consolidation.settings import DEFAULT_CONSOLIDATION_SETTINGS, ConsolidationSettings
from agentfy.events.consolidation.summariser import ExtractiveSummariser, Summariser
from agentfy.events.event import EPISODIC_CREATED, SESSION_COMPLETED, DomainEvent
from agentfy.events.outbox import DEFAULT_SETTINGS, BusSettings, publish
from agentfy.identity import Scope
from agentfy.store.db import Tx
from agentfy.store.repos import memory, sessions
from agentfy.store.repos.memory import EpisodicSummary

logger: Final = logging.getLogger("agentfy.consolidation.episodic")

_PAGE: Final = 1000


def session_completed_source(session_key: str, compaction_count: int) -> str:
    """The ``source_id`` of a ``session.completed`` event: one event per (session, compaction)."""
    return f"{session_key}:{compaction_count}"


def publish_session_completed(tx: Tx, scope: Scope, session_key: str, *,
                              settings: BusSettings = DEFAULT_SETTINGS) -> DomainEvent | None:
    """Publish ``session.completed`` for a stored session in the caller's transaction (``None``: already
    published for this compaction).  Call it in the transaction that completes (or compacts) the session."""
    session = sessions.get_session(tx, scope, session_key)
    return publish(tx, type=SESSION_COMPLETED, tenant_id=scope.tenant_id,
                   source_id=session_completed_source(session.session_key, session.compaction_count),
                   agent_id=session.agent_id, user_id=session.user_id or None,
                   payload={"session_key": session.session_key, "compaction_count": session.compaction_count},
                   settings=settings)


class EpisodicWorker:
    """Handles ``session.completed``; see the module docstring for the contract."""

    def __init__(self, *, summariser: Summariser | None = None,
                 settings: ConsolidationSettings = DEFAULT_CONSOLIDATION_SETTINGS) -> None:
        self.summariser: Summariser = summariser if summariser is not None else ExtractiveSummariser()
        self.settings = settings

    def handle(self, tx: Tx, scope: Scope, event: DomainEvent) -> None:
        self.consolidate(tx, scope, event)

    def consolidate(self, tx: Tx, scope: Scope, event: DomainEvent) -> EpisodicSummary | None:
        """:meth:`handle`, returning the summary this call created (``None``: existed already, or nothing
        to remember)."""
        target = route(scope, event)
        session_key = payload_text(event, "session_key")
        compaction_count = payload_count(event, "compaction_count")
        session = sessions.get_session(tx, target.scope, session_key)
        if session.agent_id != target.agent_id:
            raise InvalidEventError(f"session {session_key!r} belongs to agent {session.agent_id!r}, not to the "
                                    f"event's agent_id {target.agent_id!r}")
        messages = self._messages(tx, target.scope, session_key)
        text = self.summariser.summarise(session, messages).strip()
        if not text:
            logger.info("consolidation.episodic.empty", extra={"event_id": event.id, "tenant_id": scope.tenant_id,
                                                              "agent_id": target.agent_id})
            return None
        summary, created = memory.create_episodic_summary(
            tx, target.scope, agent_id=target.agent_id, user_id=session.user_id, session_key=session.session_key,
            compaction_count=compaction_count, summary=text)
        if not created:
            return None
        publish(tx, type=EPISODIC_CREATED, tenant_id=target.scope.tenant_id, source_id=summary.id,
                agent_id=summary.agent_id, user_id=summary.user_id or None,
                payload={"summary_id": summary.id, "session_key": summary.session_key,
                         "compaction_count": summary.compaction_count, "summary": summary.summary},
                settings=self.settings.bus)
        return summary

    def _messages(self, tx: Tx, scope: Scope, session_key: str) -> list[sessions.SessionMessage]:
        """The session's messages, oldest first, at most ``max_session_messages`` (paged)."""
        cap = self.settings.max_session_messages
        loaded: list[sessions.SessionMessage] = []
        after = 0
        while len(loaded) < cap:
            want = min(_PAGE, cap - len(loaded))
            page = sessions.list_messages(tx, scope, session_key, after_seq=after, limit=want)
            loaded.extend(page)
            if len(page) < want:
                break
            after = page[-1].seq
        return loaded
