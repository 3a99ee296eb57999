"""The semantic worker: ``episodic.created`` → entities and relations in the knowledge graph →
``entity.upserted``.

Contract of :meth:`SemanticWorker.handle`:

1. the tenant and agent IDs are parsed first (:func:`~.envelope.route`), then the payload's ``summary_id``
   (an episodic-summary ID) and ``summary`` (the text, carried in the event so the worker needs no read);
2. the :class:`Extractor` finds entities and relations; each entity is stored for the event's agent in the
   event's memory SCOPE (``user_id``) with ``properties={"summary_id": …}`` for provenance;
3. ``entity.upserted`` is published with ``source_id = f"{summary_id}:semantic"`` and the graph is written
   with :func:`knowledge.ingest_graph` — the batch path, all or nothing — in the same transaction.  The
   event doubles as the idempotency marker: if it was published already (a replay), nothing is ingested
   again.  An extraction with no entities still publishes it, so the marker is always there.
"""

from __future__ import annotations

from typing import Final

from agentfy.events.consolidation.envelope import payload_id, payload_text, route
from agentfy.events.consolidation.extractor import CapitalisedPhraseExtractor, Extractor
from agentfy.events.consolidation.settings import DEFAULT_CONSOLIDATION_SETTINGS, ConsolidationSettings
from agentfy.events.event import ENTITY_UPSERTED, DomainEvent
from agentfy.events.outbox import publish
from agentfy.identity import Scope
from agentfy.store.db import Tx
from agentfy.store.repos import knowledge
from agentfy.store.repos.knowledge import EntityInput, EntityRef, IngestResult, RelationInput

SOURCE_SUFFIX: Final = ":semantic"


def semantic_source(summary_id: str) -> str:
    """The ``source_id`` of the ``entity.upserted`` event of one summary's ingest."""
    return f"{summary_id}{SOURCE_SUFFIX}"


class SemanticWorker:
    """Handles ``episodic.created``; see the module docstring for the contract."""

    def __init__(self, *, extractor: Extractor | None = None,
                 settings: ConsolidationSettings = DEFAULT_CONSOLIDATION_SETTINGS) -> None:
        self.extractor: Extractor = extractor if extractor is not None else CapitalisedPhraseExtractor()
        self.settings = settings

    def handle(self, tx: Tx, scope: Scope, event: DomainEvent) -> None:
        self.ingest(tx, scope, event)

    def ingest(self, tx: Tx, scope: Scope, event: DomainEvent) -> IngestResult | None:
        """:meth:`handle`, returning what was ingested (``None``: this summary was ingested before)."""
        target = route(scope, event)
        summary_id = payload_id(event, "summary_id", "episodic-summary")
        text = payload_text(event, "summary")
        extraction = self.extractor.extract(text)
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
                         settings=self.settings.bus)
        if marker is None:
            return None
        return knowledge.ingest_graph(tx, target.scope, entities=entities, relations=relations)
