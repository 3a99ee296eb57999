"""The dreaming worker: promotes an (agent, user scope)'s unpromoted episodic summaries into one memory
document, debounced.

Triggers: ``episodic.created`` (a new summary) and the pipeline's own ``dreaming.due`` (the debounce timer).
Contract of :meth:`DreamingWorker.dream`, after :func:`~.envelope.route` parsed the tenant and agent IDs:

* no unpromoted summary → nothing to do (ack);
* **debounce** — the newest unpromoted summary is younger than ``debounce_seconds`` *and* fewer than
  ``max_batch`` summaries wait *and* this is not the timer set for that very summary → defer: publish
  ``dreaming.due`` (``source_id = f"{newest_id}:dreaming"``) due when the newest summary turns
  ``debounce_seconds`` old, and ack.  The outbox dedups that source, so a burst of N summaries leaves at
  most one timer per newest summary, and only the last one promotes anything.  When a timer fires and a newer
  summary arrived meanwhile, the newer summary's own timer (already scheduled by its ``episodic.created``)
  takes over; when no newer one arrived, the timer promotes unconditionally — so the tail of a burst is
  always promoted, never left waiting for a later session;
* otherwise **promote**: append one section per summary (oldest first) to the document
  ``dreams/<sha256(user scope)[:16]>.md`` of the agent in that scope (created on first use; the path is
  hashed because the scope — ``group:telegram:-100…`` — is not a safe path segment), upsert it with
  :func:`memory.upsert_memory_documents`, then :func:`memory.mark_promoted` — same transaction, so a
  summary is in the document exactly when it is marked promoted.

Deterministic: the document is a function of the summaries (each section starts with a
``<!-- summary:<id> -->`` marker, and a summary whose marker is already there is not appended twice); only
the debounce reads the clock, which is injectable.  Documents larger than ``dream_max_chars`` drop their
oldest sections.  Runs for one (agent, user scope) are serialised (:func:`~.locks.serialise`), so two
workers never rewrite the same document from the same stale read.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final, Literal

from agentfy.events.consolidation.delayed import parse_stamp, publish_at
from agentfy.events.consolidation.envelope import Route, payload_id, route
from agentfy.events.consolidation.locks import serialise
from agentfy.events.consolidation.settings import (
    DEFAULT_CONSOLIDATION_SETTINGS,
    DREAMING_DUE,
    Clock,
    ConsolidationSettings,
    utc_now,
)
from agentfy.events.consolidation.summariser import clip
from agentfy.events.embedding import publish_embedding_due
from agentfy.events.event import DomainEvent
from agentfy.events.settings import DEFAULT_BUS_SETTINGS, BusSettings
from agentfy.identity import EpisodicSummaryId, MemoryDocumentId, Scope
from agentfy.store.db import Tx
from agentfy.store.repos import memory
from agentfy.store.repos.memory import EpisodicSummary, MemoryDocumentInput

DREAM_DIRECTORY: Final = "dreams"
DREAM_HEADER: Final = "# Dreams\n\nConsolidated episodic memory, oldest first (written by the dreaming worker).\n"
_MARKER: Final = "\n<!-- summary:"


def dream_path(user_id: str) -> str:
    """The path of the dream document of one memory scope (``""``: the agent's own memory)."""
    return f"{DREAM_DIRECTORY}/{hashlib.sha256(user_id.encode()).hexdigest()[:16]}.md"


def dreaming_due_source(newest_summary_id: str) -> str:
    """The ``source_id`` of the timer set for the newest summary of a burst."""
    return f"{newest_summary_id}:dreaming"


def render_section(summary: EpisodicSummary) -> str:
    """One summary's section of the dream document."""
    return (f"{_MARKER}{summary.id} -->\n## {summary.created_at} · session {summary.session_key} "
            f"(compaction {summary.compaction_count})\n\n{summary.summary.strip()}\n")


def append_sections(content: str, summaries: Sequence[EpisodicSummary], max_chars: int) -> str:
    """``content`` (or a new document) with the sections of ``summaries`` not already in it appended, then
    its oldest sections dropped until it fits in ``max_chars``."""
    text = content or DREAM_HEADER
    for summary in summaries:
        if f"{_MARKER}{summary.id} -->" not in text:
            text += render_section(summary)
    if len(text) <= max_chars:
        return text
    header, *sections = text.split(_MARKER)
    while sections and len(header) + sum(len(_MARKER) + len(s) for s in sections) > max_chars:
        sections.pop(0)
    return clip(header + "".join(_MARKER + s for s in sections), max_chars)


@dataclass(frozen=True, slots=True)
class DreamOutcome:
    """What one dreaming run did: ``promoted`` (``document_id`` and ``summary_ids`` set), ``deferred``
    (``due_at`` set) or ``idle`` (nothing waited)."""

    status: Literal["idle", "deferred", "promoted"]
    summary_ids: tuple[EpisodicSummaryId, ...] = ()
    document_id: MemoryDocumentId | None = None
    due_at: datetime | None = None


class DreamingWorker:
    """Handles ``episodic.created`` (:meth:`handle`) and ``dreaming.due`` (:meth:`handle_due`)."""

    def __init__(self, *, settings: ConsolidationSettings = DEFAULT_CONSOLIDATION_SETTINGS,
                 clock: Clock = utc_now, bus: BusSettings = DEFAULT_BUS_SETTINGS) -> None:
        self.settings = settings
        self.clock = clock
        self.bus = bus

    def handle(self, tx: Tx, scope: Scope, event: DomainEvent) -> None:
        self.dream(tx, scope, event)

    def handle_due(self, tx: Tx, scope: Scope, event: DomainEvent) -> None:
        self.dream(tx, scope, event, timer=True)

    def dream(self, tx: Tx, scope: Scope, event: DomainEvent, *, timer: bool = False) -> DreamOutcome:
        """Promote or defer (see the module docstring); ``timer``: ``event`` is a ``dreaming.due``."""
        target = route(scope, event)
        due_for = payload_id(event, "newest_summary_id", "episodic-summary") if timer else None
        serialise(tx, "dreaming", target.scope.tenant_id, target.agent_id, target.user_id)
        pending = memory.list_unpromoted_summaries(tx, target.scope, target.agent_id, target.user_id)
        if not pending:
            return DreamOutcome("idle")
        newest = pending[-1]  # the store lists them oldest first
        due_at = parse_stamp(newest.created_at) + timedelta(seconds=self.settings.debounce_seconds)
        if (self.settings.debounce_seconds > 0 and len(pending) < self.settings.max_batch
                and newest.id != due_for and self.clock() < due_at):
            publish_at(tx, due_at, type=DREAMING_DUE, tenant_id=target.scope.tenant_id,
                       source_id=dreaming_due_source(newest.id), agent_id=target.agent_id,
                       user_id=target.user_id or None, payload={"newest_summary_id": newest.id},
                       settings=self.bus)
            return DreamOutcome("deferred", due_at=due_at)
        return self._promote(tx, target, pending)

    def _promote(self, tx: Tx, target: Route, pending: list[EpisodicSummary]) -> DreamOutcome:
        path = dream_path(target.user_id)
        existing = next((d for d in memory.list_memory_documents(tx, target.scope, target.agent_id,
                                                                 user_id=target.user_id) if d.path == path), None)
        content = append_sections(existing.content if existing else "", pending, self.settings.dream_max_chars)
        previous = existing.metadata.get("summaries") if existing else 0
        count = previous if type(previous) is int else 0
        metadata = {"kind": "dream", "summaries": count + len(pending), "last_summary_id": pending[-1].id}
        [document_id] = memory.upsert_memory_documents(
            tx, target.scope, target.agent_id,
            [MemoryDocumentInput(user_id=target.user_id, path=path, content=content, metadata=metadata)])
        ids = tuple(s.id for s in pending)
        memory.mark_promoted(tx, target.scope, ids)
        publish_embedding_due(tx, target.scope, target.agent_id, [document_id], settings=self.bus)
        return DreamOutcome("promoted", summary_ids=ids, document_id=document_id)
