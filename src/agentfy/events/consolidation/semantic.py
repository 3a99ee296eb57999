"""The semantic worker: ``episodic.created`` → entities and relations in the knowledge graph →
``entity.upserted``.

Contract (a staged handler, :mod:`agentfy.events.handlers`; :meth:`SemanticWorker.handle` runs the three
stages in one transaction for direct calls):

1. ``read`` — the tenant and agent IDs are parsed first (:func:`~.envelope.route`), then the payload's
   ``summary_id`` (an episodic-summary ID) and ``summary`` (the text, carried in the event so the worker
   needs no read of it); whether this summary was ingested already is looked up, so a replay costs no
   extraction;
2. ``compute`` — the :class:`Extractor` finds entities and relations with no transaction open (a model call
   may take seconds);
3. ``write`` — each entity is stored for the event's agent in the event's memory SCOPE (``user_id``) with
   ``properties={"summary_id": …}`` for provenance: ``entity.upserted`` is published with
   ``source_id = f"{summary_id}:semantic"`` and the graph is written with :func:`knowledge.ingest_graph` —
   the batch path, all or nothing — in the same transaction.  The event doubles as the idempotency marker:
   if it was published already (a replay, or another worker that got there first while this one
   extracted), nothing is ingested again.  An extraction with no entities still publishes it, so the marker
   is always there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from agentfy.events.consolidation.envelope import Route, payload_id, payload_text, route
from agentfy.events.consolidation.extractor import (
    AgentExtractor,
    CapitalisedPhraseExtractor,
    Extraction,
    Extractor,
)
from agentfy.events.consolidation.settings import DEFAULT_CONSOLIDATION_SETTINGS, ConsolidationSettings
from agentfy.events.event import ENTITY_UPSERTED, DomainEvent
from agentfy.events.handlers import run_staged
from agentfy.events.outbox import is_published, publish
from agentfy.events.settings import DEFAULT_BUS_SETTINGS, BusSettings
from agentfy.identity import Scope
from agentfy.store.db import Tx
from agentfy.store.repos import knowledge
from agentfy.store.repos.knowledge import EntityInput, EntityRef, IngestResult, RelationInput

SOURCE_SUFFIX: Final = ":semantic"


def semantic_source(summary_id: str) -> str:
    """The ``source_id`` of the ``entity.upserted`` event of one summary's ingest."""
    return f"{summary_id}{SOURCE_SUFFIX}"


@dataclass(frozen=True, slots=True)
class SummaryInputs:
    """What the extractor needs, read in the ``read`` stage; ``ingested``: the marker exists already."""

    target: Route
    summary_id: str
    text: str
    ingested: bool


class SemanticWorker:
    """Handles ``episodic.created`` as a staged handler; see the module docstring for the contract."""

    def __init__(self, *, extractor: Extractor | None = None,
                 settings: ConsolidationSettings = DEFAULT_CONSOLIDATION_SETTINGS,
                 bus: BusSettings = DEFAULT_BUS_SETTINGS) -> None:
        self.extractor: Extractor = extractor if extractor is not None else CapitalisedPhraseExtractor()
        self.settings = settings
        self.bus = bus

    def handle(self, tx: Tx, scope: Scope, event: DomainEvent) -> None:
        self.ingest(tx, scope, event)

    def ingest(self, tx: Tx, scope: Scope, event: DomainEvent) -> IngestResult | None:
        """All three stages in ``tx``, returning what was ingested (``None``: this summary was ingested
        before)."""
        ingested = run_staged(self, tx, scope, event)
        return ingested if isinstance(ingested, IngestResult) else None

    def read(self, tx: Tx, scope: Scope, event: DomainEvent) -> SummaryInputs:
        target = route(scope, event)
        summary_id = payload_id(event, "summary_id", "episodic-summary")
        text = payload_text(event, "summary")
        done = is_published(tx, target.scope.tenant_id, ENTITY_UPSERTED, semantic_source(summary_id))
        return SummaryInputs(target, summary_id, text, done)

    def compute(self, inputs: SummaryInputs) -> Extraction | None:
        if inputs.ingested:
            return None
        if isinstance(self.extractor, AgentExtractor):
            return self.extractor.extract_for(inputs.target.scope.tenant_id, inputs.target.agent_id, inputs.text)
        return self.extractor.extract(inputs.text)

    def write(self, tx: Tx, scope: Scope, event: DomainEvent, inputs: SummaryInputs,
              extraction: Extraction | None) -> IngestResult | None:
        if extraction is None:
            return None
        target, summary_id = inputs.target, inputs.summary_id
        provenance = {"summary_id": summary_id}
        entities = [EntityInput(agent_id=target.agent_id, user_id=target.user_id, name=e.name,
                                entity_type=e.entity_type, properties=provenance) for e in extraction.entities]
        relations = [RelationInput(agent_id=target.agent_id, source_entity_id=EntityRef(r.source),
                                   target_entity_id=EntityRef(r.target), relation=r.relation, properties=provenance)
                     for r in extraction.relations]
        marker = publish(tx, type=ENTITY_UPSERTED, tenant_id=target.scope.tenant_id,
                         source_id=semantic_source(summary_id), agent_id=target.agent_id,
                         user_id=target.user_id or None,
                         payload={"summary_id": summary_id, "entities": len(entities), "relations": len(relations)},
                         settings=self.bus)
        if marker is None:
            return None
        return knowledge.ingest_graph(tx, target.scope, entities=entities, relations=relations)
