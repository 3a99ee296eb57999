"""Looking things up in the knowledge graph: the entities of one memory SCOPE whose names hold the words of a
question, and the relations between them and the SCOPE's other entities.

Matching is by name (case-insensitive substring of any word of at least two characters; at most
:data:`TERMS_MAX` words), in SQL, always filtered by tenant, agent and SCOPE there — never in Python after
the fact.  ``LIKE`` wildcards in the words are literal (escaped).  Shorter names rank first (a word that is
the whole name beats one inside a longer name), then by name.  The graph is small per SCOPE (the semantic
worker writes a few entities a conversation), so no index beyond the scope's is needed; see
:mod:`agentfy.store.repos.knowledge` for how entities are written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import sqlalchemy as sa

from agentfy.identity import Scope
from agentfy.store.db import Sql, Tx
from agentfy.store.repos._batch import json_list, json_values, require_agent
from agentfy.store.repos.agents import Agent
from agentfy.store.repos.knowledge import ENTITY_COLUMNS, KgEntity, entity_of
from agentfy.store.schema import kg_entities, kg_relations

#: The words of a question that are matched; more are ignored (the first ones, as written).
TERMS_MAX: Final = 8
RELATIONS_MAX: Final = 50

_source = kg_entities.alias("source")
_target = kg_entities.alias("target")
#: One ``LIKE`` pattern per word (``NULL`` for the words a question does not have: it matches nothing).
_PATTERNS: Final = tuple(sa.bindparam(f"term{i}", type_=sa.Text) for i in range(TERMS_MAX))
_FIND_ENTITIES: Final = (
    sa.select(*ENTITY_COLUMNS)
    .where(kg_entities.c.tenant_id == sa.bindparam("tenant_id"), kg_entities.c.agent_id == sa.bindparam("agent_id"),
           kg_entities.c.user_id == sa.bindparam("user_id"),
           sa.or_(*(sa.func.lower(kg_entities.c.name).like(pattern, escape="\\") for pattern in _PATTERNS)))
    .order_by(sa.func.length(kg_entities.c.name), kg_entities.c.name, kg_entities.c.id)
    .limit(sa.bindparam("limit", type_=sa.Integer)))
_RELATIONS_OF: Final = Sql(lambda d: (
    sa.select(_source.c.name, kg_relations.c.relation, _target.c.name)
    .join(_source, _source.c.id == kg_relations.c.source_entity_id)
    .join(_target, _target.c.id == kg_relations.c.target_entity_id)
    .where(kg_relations.c.tenant_id == sa.bindparam("tenant_id"), kg_relations.c.agent_id == sa.bindparam("agent_id"),
           _source.c.tenant_id == sa.bindparam("tenant_id"), _target.c.tenant_id == sa.bindparam("tenant_id"),
           _source.c.user_id == sa.bindparam("user_id"), _target.c.user_id == sa.bindparam("user_id"),
           sa.or_(kg_relations.c.source_entity_id.in_(json_values("ids", d)),
                  kg_relations.c.target_entity_id.in_(json_values("ids", d))))
    .order_by(kg_relations.c.created_at, kg_relations.c.id)
    .limit(RELATIONS_MAX)))


def _pattern(term: str) -> str:
    """``%term%`` with the term's own ``\\``, ``%`` and ``_`` escaped: they match only themselves."""
    return "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


@dataclass(frozen=True, slots=True)
class Related:
    """One relation, as words: ``source —relation→ target``."""

    source: str
    relation: str
    target: str


@dataclass(frozen=True, slots=True)
class Knowledge:
    entities: tuple[KgEntity, ...]
    relations: tuple[Related, ...]


def terms_of(question: str) -> list[str]:
    """The distinct lower-case words of ``question`` that are matched (in order, at most :data:`TERMS_MAX`)."""
    found: list[str] = []
    for written in question.lower().split():
        word = written.strip(".,;:!?\"'()[]{}")
        if len(word) >= 2 and word not in found:
            found.append(word)
    return found[:TERMS_MAX]


def find(tx: Tx, scope: Scope, agent_id: str | Agent, *, user_id: str, question: str, limit: int = 10) -> Knowledge:
    """The SCOPE ``user_id``'s entities matching ``question`` (at most ``limit``) and their relations within
    the SCOPE; an agent that is not the tenant's is :class:`~agentfy.store.errors.NotFoundError` (its record, a
    run's, is taken as is: :func:`~agentfy.store.repos._batch.require_agent`)."""
    agent = require_agent(tx, scope, agent_id)
    terms = terms_of(question)
    if not terms:
        return Knowledge((), ())
    params: dict[str, object] = {"tenant_id": scope.tenant_id, "agent_id": agent, "user_id": user_id, "limit": limit}
    params.update({f"term{i}": _pattern(terms[i]) if i < len(terms) else None for i in range(TERMS_MAX)})
    entities = [entity_of(row) for row in tx.all(_FIND_ENTITIES, params)]
    if not entities:
        return Knowledge((), ())
    rows = tx.all(_RELATIONS_OF, {"tenant_id": scope.tenant_id, "agent_id": agent, "user_id": user_id,
                                  "ids": json_list(entity.id for entity in entities)})
    return Knowledge(tuple(entities), tuple(Related(str(row[0]), str(row[1]), str(row[2])) for row in rows))


def describe(knowledge: Knowledge) -> Sequence[str]:
    """One line per entity (``name (type)``) and per relation (``source —relation→ target``)."""
    return ([f"{entity.name} ({entity.entity_type})" for entity in knowledge.entities]
            + [f"{related.source} —{related.relation}→ {related.target}" for related in knowledge.relations])
