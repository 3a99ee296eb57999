"""The dedup worker: ``entity.upserted`` → duplicate knowledge-graph entities of the agent merged.

Contract of :meth:`DedupWorker.handle`: after parsing the tenant and agent IDs (:func:`~.envelope.route`),
the agent's entities are grouped by (memory SCOPE ``user_id``, :func:`normalise_name` of the name, normalised
type); in each group of two or more the oldest (``created_at``, then ID) is kept and the others are folded
into it with :func:`knowledge.merge_entities` (relations re-pointed, duplicates deleted).

Why the memory scope is part of the key: memory is per scope by design (a Telegram group's knowledge is not
a DM's), and merging across scopes would move one group's relations onto another's entity.  Idempotent: a
second run finds no duplicates.  Runs for one agent are serialised (:func:`~.locks.serialise`): two
concurrent merges of the same group would otherwise find each other's duplicates gone.  Cost: one read of
the agent's entities per event, linear in their number.
"""

from __future__ import annotations

from collections import defaultdict

from agentfy.events.consolidation.envelope import route
from agentfy.events.consolidation.extractor import normalise_name
from agentfy.events.consolidation.locks import serialise
from agentfy.events.event import DomainEvent
from agentfy.identity import Scope
from agentfy.store.db import Tx
from agentfy.store.repos import knowledge
from agentfy.store.repos.knowledge import KgEntity, MergeResult


def duplicate_groups(entities: list[KgEntity]) -> list[list[KgEntity]]:
    """The groups of duplicates (two or more), each oldest first, in a deterministic order."""
    groups: dict[tuple[str, str, str], list[KgEntity]] = defaultdict(list)
    for entity in entities:
        groups[(entity.user_id, normalise_name(entity.name), normalise_name(entity.entity_type))].append(entity)
    found = [sorted(members, key=lambda e: (e.created_at, e.id)) for members in groups.values() if len(members) > 1]
    return sorted(found, key=lambda members: (members[0].created_at, members[0].id))


class DedupWorker:
    """Handles ``entity.upserted``; see the module docstring for the contract."""

    def handle(self, tx: Tx, scope: Scope, event: DomainEvent) -> None:
        self.dedup(tx, scope, event)

    def dedup(self, tx: Tx, scope: Scope, event: DomainEvent) -> list[MergeResult]:
        """:meth:`handle`, returning one :class:`MergeResult` per merged group."""
        target = route(scope, event)
        if event.payload.get("entities") == 0:  # the semantic worker ingested nothing: nothing new to merge
            return []
        serialise(tx, "dedup", target.scope.tenant_id, target.agent_id)
        entities = knowledge.list_entities(tx, target.scope, target.agent_id)
        return [knowledge.merge_entities(tx, target.scope, target.agent_id, group[0].id, [e.id for e in group[1:]])
                for group in duplicate_groups(entities)]
