"""The episodic worker: ``session.completed`` → one episodic summary → ``episodic.created``.

Contract (a staged handler, :mod:`agentfy.events.handlers`; :meth:`EpisodicWorker.handle` runs the three
stages in one transaction for direct calls):

1. ``read`` — the event's tenant and agent IDs are parsed first (:func:`~.envelope.route`); a bad one raises
   :class:`~agentfy.identity.InvalidIdError` naming the value and nothing is read or written.  The payload
   names the session (``session_key``) and the compaction (``compaction_count``); the session is loaded in
   the event's tenant and must belong to the event's agent; its messages (oldest first, at most
   ``max_session_messages``) are loaded;
2. ``compute`` — the :class:`Summariser` runs with no transaction open (a model call may take seconds);
3. ``write`` — the session is checked again (still there, still the agent's: it may have been deleted or
   reassigned while the summariser ran); an empty summary means "nothing to remember": nothing is written.
   Otherwise the summary is created idempotently per (tenant, session key, compaction count) and, only if
   this call created it, ``episodic.created`` is published in the same transaction — so a redelivered or
   replayed ``session.completed`` neither duplicates the summary nor re-triggers the downstream workers.
   Messages appended after ``read`` (a compaction of a session that stays open) are not a change to
   re-check: the summary covers the session as it was read, exactly as if the worker had run a moment
   earlier.

:func:`publish_session_completed` is the publisher's half: it takes the agent's ID and the scope from the
stored session, so a caller cannot put an ``agent_key`` where the consumers expect the agent's ID.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Final

from agentfy.events.consolidation.envelope import InvalidEventError, Route, payload_count, payload_text, route
from agentfy.events.consolidation.settings import DEFAULT_CONSOLIDATION_SETTINGS, ConsolidationSettings
from agentfy.events.consolidation.summariser import ExtractiveSummariser, Summariser
from agentfy.events.embedding import publish_embedding_due
from agentfy.events.event import EPISODIC_CREATED, SESSION_COMPLETED, DomainEvent
from agentfy.events.handlers import run_staged
from agentfy.events.outbox import publish
from agentfy.events.settings import DEFAULT_BUS_SETTINGS, BusSettings
from agentfy.identity import Scope
from agentfy.store.db import Tx
from agentfy.store.repos import memory, sessions
from agentfy.store.repos.memory import EpisodicSummary
from agentfy.store.repos.sessions import Session, SessionMessage

logger: Final = logging.getLogger("agentfy.consolidation.episodic")

_PAGE: Final = 1000


def session_completed_source(session_key: str, compaction_count: int) -> str:
    """The ``source_id`` of a ``session.completed`` event: one event per (session, compaction)."""
    return f"{session_key}:{compaction_count}"


def publish_session_completed(tx: Tx, scope: Scope, session_key: str, *,
                              settings: BusSettings = DEFAULT_BUS_SETTINGS) -> DomainEvent | None:
    """Publish ``session.completed`` for a stored session in the caller's transaction (``None``: already
    published for this compaction).  Call it in the transaction that completes (or compacts) the session."""
    return publish_completed(tx, scope, sessions.get_session(tx, scope, session_key), settings=settings)


def publish_completed(tx: Tx, scope: Scope, session: Session, *,
                      settings: BusSettings = DEFAULT_BUS_SETTINGS) -> DomainEvent | None:
    """:func:`publish_session_completed` for a session the caller read (or completed) in ``tx``: not read again."""
    return publish(tx, type=SESSION_COMPLETED, tenant_id=scope.tenant_id,
                   source_id=session_completed_source(session.session_key, session.compaction_count),
                   agent_id=session.agent_id, user_id=session.user_id or None,
                   payload={"session_key": session.session_key, "compaction_count": session.compaction_count},
                   settings=settings)


@dataclass(frozen=True, slots=True)
class SessionInputs:
    """What the summariser needs, read in the ``read`` stage."""

    target: Route
    session: Session
    messages: list[SessionMessage]
    compaction_count: int


class EpisodicWorker:
    """Handles ``session.completed`` as a staged handler; see the module docstring for the contract."""

    def __init__(self, *, summariser: Summariser | None = None,
                 settings: ConsolidationSettings = DEFAULT_CONSOLIDATION_SETTINGS,
                 bus: BusSettings = DEFAULT_BUS_SETTINGS) -> None:
        self.summariser: Summariser = summariser if summariser is not None else ExtractiveSummariser()
        self.settings = settings
        self.bus = bus

    def handle(self, tx: Tx, scope: Scope, event: DomainEvent) -> None:
        self.consolidate(tx, scope, event)

    def consolidate(self, tx: Tx, scope: Scope, event: DomainEvent) -> EpisodicSummary | None:
        """All three stages in ``tx``, returning the summary this call created (``None``: it existed
        already, or there was nothing to remember)."""
        created = run_staged(self, tx, scope, event)
        return created if isinstance(created, EpisodicSummary) else None

    def read(self, tx: Tx, scope: Scope, event: DomainEvent) -> SessionInputs:
        target = route(scope, event)
        session_key = payload_text(event, "session_key")
        compaction_count = payload_count(event, "compaction_count")
        session = self._session_of_agent(tx, target, session_key)
        return SessionInputs(target, session, self._messages(tx, target.scope, session_key), compaction_count)

    def compute(self, inputs: SessionInputs) -> str:
        return self.summariser.summarise(inputs.session, inputs.messages).strip()

    def write(self, tx: Tx, scope: Scope, event: DomainEvent, inputs: SessionInputs,
              text: str) -> EpisodicSummary | None:
        target = inputs.target
        session = self._session_of_agent(tx, target, inputs.session.session_key)  # still there, still the agent's
        if not text:
            logger.info("consolidation.episodic.empty", extra={"event_id": event.id, "tenant_id": scope.tenant_id,
                                                              "agent_id": target.agent_id})
            return None
        summary, created = memory.create_episodic_summary(
            tx, target.scope, agent_id=target.agent_id, user_id=session.user_id, session_key=session.session_key,
            compaction_count=inputs.compaction_count, summary=text)
        if not created:
            return None
        publish(tx, type=EPISODIC_CREATED, tenant_id=target.scope.tenant_id, source_id=summary.id,
                agent_id=summary.agent_id, user_id=summary.user_id or None,
                payload={"summary_id": summary.id, "session_key": summary.session_key,
                         "compaction_count": summary.compaction_count, "summary": summary.summary},
                settings=self.bus)
        publish_embedding_due(tx, target.scope, target.agent_id, [summary.id], settings=self.bus)
        return summary

    @staticmethod
    def _session_of_agent(tx: Tx, target: Route, session_key: str) -> Session:
        session = sessions.get_session(tx, target.scope, session_key)
        if session.agent_id != target.agent_id:
            raise InvalidEventError(f"session {session_key!r} belongs to agent {session.agent_id!r}, not to the "
                                    f"event's agent_id {target.agent_id!r}")
        return session

    def _messages(self, tx: Tx, scope: Scope, session_key: str) -> list[SessionMessage]:
        """The session's messages, oldest first, at most ``max_session_messages`` (paged)."""
        cap = self.settings.max_session_messages
        loaded: list[SessionMessage] = []
        after = 0
        while len(loaded) < cap:
            want = min(_PAGE, cap - len(loaded))
            page = sessions.list_messages(tx, scope, session_key, after_seq=after, limit=want)
            loaded.extend(page)
            if len(page) < want:
                break
            after = page[-1].seq
        return loaded
