"""The consolidation pipeline: completed sessions become episodic summaries, knowledge-graph entities and
long-term memory documents, through the event bus.

::

    session.completed ──episodic──▶ episodic summary ──▶ episodic.created
    episodic.created  ──semantic──▶ KG entities/relations ──▶ entity.upserted ──dedup──▶ duplicates merged
                      └─dreaming──▶ (debounced: dreaming.due) ──▶ dreams/<scope>.md memory document

Every handler parses the event's tenant and agent IDs before anything else (a publisher may have put an
``agent_key`` where the ID belongs), works only
in the event's tenant, and is idempotent.  ``Worker(db, handlers())`` runs the whole pipeline; see
``docs/consolidation.md`` for each worker's contract and how to plug in an LLM-backed summariser or extractor.
"""

from agentfy.events.consolidation.dedup import DedupWorker, duplicate_groups
from agentfy.events.consolidation.delayed import publish_at
from agentfy.events.consolidation.dreaming import DreamingWorker, DreamOutcome, dream_path, dreaming_due_source
from agentfy.events.consolidation.envelope import InvalidEventError, Route, route
from agentfy.events.consolidation.episodic import (
    EpisodicWorker,
    publish_session_completed,
    session_completed_source,
)
from agentfy.events.consolidation.extractor import (
    CapitalisedPhraseExtractor,
    ExtractedEntity,
    ExtractedRelation,
    Extraction,
    Extractor,
    normalise_name,
)
from agentfy.events.consolidation.pipeline import Consolidation, handlers
from agentfy.events.consolidation.semantic import SemanticWorker, semantic_source
from agentfy.events.consolidation.settings import (
    DEFAULT_CONSOLIDATION_SETTINGS,
    DREAMING_DUE,
    Clock,
    ConsolidationSettings,
    utc_now,
)
from agentfy.events.consolidation.summariser import ExtractiveSummariser, Summariser
from agentfy.events.handlers import fan_out

__all__ = [
    "DEFAULT_CONSOLIDATION_SETTINGS",
    "DREAMING_DUE",
    "CapitalisedPhraseExtractor",
    "Clock",
    "Consolidation",
    "ConsolidationSettings",
    "DedupWorker",
    "DreamOutcome",
    "DreamingWorker",
    "EpisodicWorker",
    "ExtractedEntity",
    "ExtractedRelation",
    "Extraction",
    "ExtractiveSummariser",
    "Extractor",
    "InvalidEventError",
    "Route",
    "SemanticWorker",
    "Summariser",
    "dream_path",
    "dreaming_due_source",
    "duplicate_groups",
    "fan_out",
    "handlers",
    "normalise_name",
    "publish_at",
    "publish_session_completed",
    "route",
    "semantic_source",
    "session_completed_source",
    "utc_now",
]
