"""Wiring: the event type → handler map a :class:`~agentfy.events.worker.Worker` runs.

``episodic.created`` has two subscribers (semantic and dreaming) but a ``Worker`` takes one handler per type,
so :func:`~agentfy.events.handlers.fan_out` combines them: both run, in order, for the event, and their
writes share its savepoint and acknowledgement.  Why not two handlers with their own acknowledgements: the
outbox acknowledges an event once, so a second subscriber would need a second event.  Consequence: a
failure of either rolls back both and the event is retried as a whole — which is safe because each is
idempotent (the semantic worker's ``entity.upserted`` marker, the dreaming worker's promoted flags).

The episodic and semantic workers are staged handlers (their summariser and extractor run with no
transaction open); dreaming and dedup are plain handlers (quick reads and writes under an advisory lock).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from agentfy.events.consolidation.dedup import DedupWorker
from agentfy.events.consolidation.dreaming import DreamingWorker
from agentfy.events.consolidation.episodic import EpisodicWorker
from agentfy.events.consolidation.extractor import Extractor
from agentfy.events.consolidation.semantic import SemanticWorker
from agentfy.events.consolidation.settings import (
    DEFAULT_CONSOLIDATION_SETTINGS,
    DREAMING_DUE,
    Clock,
    ConsolidationSettings,
    utc_now,
)
from agentfy.events.consolidation.summariser import Summariser
from agentfy.events.event import ENTITY_UPSERTED, EPISODIC_CREATED, SESSION_COMPLETED
from agentfy.events.handlers import AnyHandler, fan_out
from agentfy.events.settings import DEFAULT_BUS_SETTINGS, BusSettings


@dataclass(frozen=True)
class Consolidation:
    """The four workers, built to share one settings value; :meth:`handlers` wires them for a ``Worker``."""

    episodic: EpisodicWorker = field(default_factory=EpisodicWorker)
    semantic: SemanticWorker = field(default_factory=SemanticWorker)
    dreaming: DreamingWorker = field(default_factory=DreamingWorker)
    dedup: DedupWorker = field(default_factory=DedupWorker)

    @classmethod
    def build(cls, *, summariser: Summariser | None = None, extractor: Extractor | None = None,
              settings: ConsolidationSettings = DEFAULT_CONSOLIDATION_SETTINGS,
              clock: Clock = utc_now, bus: BusSettings = DEFAULT_BUS_SETTINGS) -> Consolidation:
        return cls(EpisodicWorker(summariser=summariser, settings=settings, bus=bus),
                   SemanticWorker(extractor=extractor, settings=settings, bus=bus),
                   DreamingWorker(settings=settings, clock=clock, bus=bus),
                   DedupWorker())

    def handlers(self) -> dict[str, AnyHandler]:
        """``session.completed`` → episodic; ``episodic.created`` → semantic then dreaming;
        ``dreaming.due`` → dreaming; ``entity.upserted`` → dedup."""
        return {
            SESSION_COMPLETED: self.episodic,
            EPISODIC_CREATED: fan_out(self.semantic, self.dreaming.handle),
            DREAMING_DUE: self.dreaming.handle_due,
            ENTITY_UPSERTED: self.dedup.handle,
        }


def handlers(*, summariser: Summariser | None = None, extractor: Extractor | None = None,
             settings: ConsolidationSettings = DEFAULT_CONSOLIDATION_SETTINGS,
             clock: Clock = utc_now, bus: BusSettings = DEFAULT_BUS_SETTINGS) -> Mapping[str, AnyHandler]:
    """The consolidation pipeline's handlers for ``Worker(db, handlers(...))``.

    ``summariser`` / ``extractor`` default to the deterministic, network-free ones; ``clock`` only drives the
    dreaming debounce; ``bus``: the settings their events are published with (``strict_ids`` refuses a
    non-ID agent at publish).  The handlers need no database handle: the worker passes each one its transaction.
    """
    return Consolidation.build(summariser=summariser, extractor=extractor, settings=settings, clock=clock,
                               bus=bus).handlers()
