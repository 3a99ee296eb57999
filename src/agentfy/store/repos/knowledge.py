"""The knowledge graph: entities and relations of an agent, written in batches by the semantic worker.

Batch ingest is all or nothing: every row of ``entities`` and ``relations``
is validated before the first write — IDs (``agent``, ``kg-entity``), required fields, every agent living
in the scope's tenant (one query for the batch's distinct agents) and every existing endpoint living in the
tenant under the relation's agent (one query).  One bad row fails the whole batch with an error naming
``entities[i].<field>`` or ``relations[j].<field>`` and the value, and nothing is written.  No per-row
queries: a 100k-entity ingest is two validation queries plus one batched insert per table.

A relation's endpoint is either an existing entity's ID or an :class:`EntityRef`: the index of an entity in
the same call's ``entities``, so a graph and its edges arrive together without knowing the IDs the store is
about to mint.  A relation connects entities of its own agent only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import sqlalchemy as sa

from agentfy.identity import AgentId, KgEntityId, KgRelationId, OrgId, Scope, parse_id
from agentfy.store.db import Sql, Tx, now
from agentfy.store.errors import InvalidInputError, NotFoundError
from agentfy.store.inputs import check_text, is_clean_text
from agentfy.store.paging import Keyset
from agentfy.store.repos._batch import (
    USER_ID_MAX_LENGTH,
    RowNotFoundError,
    check_json,
    json_list,
    json_values,
    parse_row_ids,
    require_agent,
    require_agents,
    row_field,
)
from agentfy.store.repos._common import load_json
from agentfy.store.schema import kg_entities, kg_relations
from agentfy.store.sql import insert

NAME_MAX_LENGTH: Final = 1000
TYPE_MAX_LENGTH: Final = 100
RELATION_MAX_LENGTH: Final = 200

ENTITY_COLUMNS: Final = (kg_entities.c.id, kg_entities.c.tenant_id, kg_entities.c.agent_id, kg_entities.c.user_id,
                          kg_entities.c.name, kg_entities.c.entity_type, kg_entities.c.properties,
                          kg_entities.c.created_at)
_RELATION_COLUMNS: Final = (kg_relations.c.id, kg_relations.c.tenant_id, kg_relations.c.agent_id,
                            kg_relations.c.source_entity_id, kg_relations.c.target_entity_id, kg_relations.c.relation,
                            kg_relations.c.properties, kg_relations.c.created_at)
_ENTITY_IN_TENANT: Final = kg_entities.c.tenant_id == sa.bindparam("tenant_id")
_RELATION_IN_TENANT: Final = kg_relations.c.tenant_id == sa.bindparam("tenant_id")

_INSERT_ENTITY: Final = insert(kg_entities, ["id", "tenant_id", "agent_id", "user_id", "name", "entity_type",
                                             "properties", "created_at"])
_INSERT_RELATION: Final = insert(kg_relations, ["id", "tenant_id", "agent_id", "source_entity_id",
                                                "target_entity_id", "relation", "properties", "created_at"])
_ENTITY_AGENTS: Final = Sql(lambda d: sa.select(kg_entities.c.id, kg_entities.c.agent_id).where(
    _ENTITY_IN_TENANT, kg_entities.c.id.in_(json_values("ids", d))))
_ENTITY_ORDER: Final = (kg_entities.c.name, kg_entities.c.id)
_ENTITY_OF_AGENT: Final = kg_entities.c.agent_id == sa.bindparam("agent_id")
ENTITY_PAGES: Final[Keyset[KgEntity]] = Keyset(sa.select(*ENTITY_COLUMNS).where(_ENTITY_IN_TENANT, _ENTITY_OF_AGENT),
                                                 _ENTITY_ORDER, lambda e: (e.name, e.id))
SCOPE_ENTITY_PAGES: Final[Keyset[KgEntity]] = Keyset(
    sa.select(*ENTITY_COLUMNS).where(_ENTITY_IN_TENANT, _ENTITY_OF_AGENT,
                                      kg_entities.c.user_id == sa.bindparam("user_id")),
    _ENTITY_ORDER, lambda e: (e.name, e.id))
_ENTITY_BY_ID: Final = sa.select(*ENTITY_COLUMNS).where(_ENTITY_IN_TENANT, kg_entities.c.id == sa.bindparam("id"))
_RELATION_ORDER: Final = (kg_relations.c.created_at, kg_relations.c.id)
_RELATION_OF_AGENT: Final = kg_relations.c.agent_id == sa.bindparam("agent_id")
_IN_SCOPE: Final = sa.select(kg_entities.c.id).where(_ENTITY_IN_TENANT,
                                                     kg_entities.c.user_id == sa.bindparam("user_id"))
RELATION_PAGES: Final[Keyset[KgRelation]] = Keyset(
    sa.select(*_RELATION_COLUMNS).where(_RELATION_IN_TENANT, _RELATION_OF_AGENT), _RELATION_ORDER,
    lambda r: (r.created_at, r.id))
#: Relations whose two entities are both in one memory scope.
SCOPE_RELATION_PAGES: Final[Keyset[KgRelation]] = Keyset(
    sa.select(*_RELATION_COLUMNS).where(_RELATION_IN_TENANT, _RELATION_OF_AGENT,
                                        kg_relations.c.source_entity_id.in_(_IN_SCOPE),
                                        kg_relations.c.target_entity_id.in_(_IN_SCOPE)),
    _RELATION_ORDER, lambda r: (r.created_at, r.id))
_DELETE_ENTITY: Final = sa.delete(kg_entities).where(_ENTITY_IN_TENANT, kg_entities.c.id == sa.bindparam("id"))

# Merging: relations between members of the merged set would become self-loops and are dropped; the others
# are re-pointed from the duplicates to the kept entity; then the duplicates go.
_DROP_INTERNAL: Final = Sql(lambda d: sa.delete(kg_relations).where(
    _RELATION_IN_TENANT,
    kg_relations.c.source_entity_id.in_(json_values("members", d)),
    kg_relations.c.target_entity_id.in_(json_values("members", d)),
    sa.or_(kg_relations.c.source_entity_id.in_(json_values("duplicates", d)),
           kg_relations.c.target_entity_id.in_(json_values("duplicates", d)))))
_REPOINT_SOURCES: Final = Sql(lambda d: sa.update(kg_relations).where(
    _RELATION_IN_TENANT, kg_relations.c.source_entity_id.in_(json_values("duplicates", d)))
    .values(source_entity_id=sa.bindparam("keep")))
_REPOINT_TARGETS: Final = Sql(lambda d: sa.update(kg_relations).where(
    _RELATION_IN_TENANT, kg_relations.c.target_entity_id.in_(json_values("duplicates", d)))
    .values(target_entity_id=sa.bindparam("keep")))
_DELETE_ENTITIES: Final = Sql(lambda d: sa.delete(kg_entities).where(
    _ENTITY_IN_TENANT, kg_entities.c.id.in_(json_values("duplicates", d))))


@dataclass(frozen=True, slots=True)
class EntityRef:
    """A relation endpoint naming ``entities[index]`` of the same :func:`ingest_graph` call."""

    index: int


@dataclass(frozen=True, slots=True, kw_only=True)
class EntityInput:
    """One entity to ingest.  ``user_id`` is the memory SCOPE it was learnt in (empty: the agent's own).

    Keyword-only, like every batch input here: ``agent_id`` and ``user_id`` are adjacent strings that a
    positional call could swap without any error.
    """

    agent_id: str
    user_id: str = ""
    name: str
    entity_type: str
    properties: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RelationInput:
    """One relation to ingest; each endpoint is an existing entity's ID or an :class:`EntityRef` into the
    same call's ``entities``.  Both endpoints must belong to ``agent_id``."""

    agent_id: str
    source_entity_id: str | EntityRef
    target_entity_id: str | EntityRef
    relation: str
    properties: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class IngestResult:
    """The minted IDs: ``entity_ids[i]`` is ``entities[i]``'s, ``relation_ids[j]`` is ``relations[j]``'s."""

    entity_ids: tuple[KgEntityId, ...]
    relation_ids: tuple[KgRelationId, ...] = ()


@dataclass(frozen=True, slots=True)
class KgEntity:
    id: KgEntityId
    tenant_id: OrgId
    agent_id: AgentId
    user_id: str
    name: str
    entity_type: str
    properties: dict[str, Any]
    created_at: str


@dataclass(frozen=True, slots=True)
class KgRelation:
    id: KgRelationId
    tenant_id: OrgId
    agent_id: AgentId
    source_entity_id: KgEntityId
    target_entity_id: KgEntityId
    relation: str
    properties: dict[str, Any]
    created_at: str


@dataclass(frozen=True, slots=True)
class MergeResult:
    """What :func:`merge_entities` changed."""

    relations_repointed: int
    relations_dropped: int
    entities_deleted: int


def entity_of(row: tuple[Any, ...]) -> KgEntity:
    """The entity a row of :data:`ENTITY_COLUMNS` holds (for other modules' queries of the same columns)."""
    return KgEntity(KgEntityId(row[0]), OrgId(row[1]), AgentId(row[2]), row[3], row[4], row[5], load_json(row[6]),
                    row[7])


def _relation(row: tuple[Any, ...]) -> KgRelation:
    return KgRelation(KgRelationId(row[0]), OrgId(row[1]), AgentId(row[2]), KgEntityId(row[3]), KgEntityId(row[4]),
                      row[5], load_json(row[6]), row[7])


class _Agents:
    """Parses each distinct agent ID of a batch once and remembers the first row naming it."""

    __slots__ = ("first_field", "parsed")

    def __init__(self) -> None:
        self.parsed: dict[str, str] = {}
        self.first_field: dict[str, str] = {}

    def parse(self, value: object, batch: str, index: int) -> str:
        if type(value) is str:
            known = self.parsed.get(value)
            if known is not None:
                return known
        field = row_field(batch, index, "agent_id")
        agent = parse_id(value, "agent", field=field)
        self.parsed[agent] = agent
        self.first_field.setdefault(agent, field)
        return agent


def _check_entity_fields(e: EntityInput, i: int) -> None:
    """Raise the error naming the first bad text field of ``entities[i]``."""
    check_text(e.user_id, row_field("entities", i, "user_id"), max_length=USER_ID_MAX_LENGTH, allow_empty=True)
    check_text(e.name, row_field("entities", i, "name"), max_length=NAME_MAX_LENGTH)
    check_text(e.entity_type, row_field("entities", i, "entity_type"), max_length=TYPE_MAX_LENGTH)


def ingest_graph(tx: Tx, scope: Scope, *, entities: Sequence[EntityInput],
                 relations: Sequence[RelationInput] = ()) -> IngestResult:
    """Insert entities and relations in one go, all or nothing; returns the minted IDs in input order.

    Validation happens entirely before the first write (see the module docstring); errors are
    :class:`~agentfy.identity.InvalidIdError` (a malformed ID), :class:`InvalidInputError` (a field, an
    :class:`EntityRef` out of range, an endpoint of another agent) and :class:`NotFoundError` (an agent or
    entity that is not the tenant's), each naming the row's field and the value.
    """
    agents = _Agents()
    tenant, stamp = scope.tenant_id, now()
    entity_rows: list[dict[str, Any]] = []
    # The tight loop: plain checks inline, the detailed checkers (which name the field) only on failure.
    known, append = agents.parsed, entity_rows.append
    user_max, name_max, type_max, clean = USER_ID_MAX_LENGTH, NAME_MAX_LENGTH, TYPE_MAX_LENGTH, is_clean_text
    for i, e in enumerate(entities):
        value = e.agent_id
        agent = known.get(value) if type(value) is str else None
        if agent is None:
            agent = agents.parse(value, "entities", i)
        user, name, kind, properties = e.user_id, e.name, e.entity_type, e.properties
        if not (type(user) is str and len(user) <= user_max and type(name) is str and 0 < len(name) <= name_max
                and type(kind) is str and 0 < len(kind) <= type_max and clean(user + name + kind)):
            _check_entity_fields(e, i)
        append({"tenant_id": tenant, "agent_id": agent, "user_id": user, "name": name, "entity_type": kind,
                "properties": "{}" if properties is None else check_json(properties,
                                                                          row_field("entities", i, "properties")),
                "created_at": stamp})

    relation_rows: list[dict[str, Any]] = []
    new_endpoints: list[tuple[dict[str, Any], str, int]] = []  # (row, column, index into entities)
    existing_endpoints: list[tuple[str, str, str]] = []  # (entity ID, field, the relation's agent)
    for j, r in enumerate(relations):
        agent = agents.parse(r.agent_id, "relations", j)
        row = {
            "tenant_id": tenant, "agent_id": agent,
            "relation": check_text(r.relation, row_field("relations", j, "relation"), max_length=RELATION_MAX_LENGTH),
            "properties": "{}" if r.properties is None else check_json(r.properties,
                                                                        row_field("relations", j, "properties")),
            "created_at": stamp,
        }
        for column in ("source_entity_id", "target_entity_id"):
            endpoint = getattr(r, column)
            field = row_field("relations", j, column)
            if isinstance(endpoint, EntityRef):
                index = endpoint.index
                if type(index) is not int or not 0 <= index < len(entity_rows):
                    raise InvalidInputError(f"invalid {field} {endpoint!r}: the call has {len(entity_rows)} "
                                            "entities", field=field, value=endpoint)
                if entity_rows[index]["agent_id"] != agent:
                    raise InvalidInputError(f"invalid {field} {endpoint!r}: entities[{index}] belongs to agent "
                                            f"{entity_rows[index]['agent_id']}, the relation to agent {agent}",
                                            field=field, value=endpoint)
                new_endpoints.append((row, column, index))
            else:
                row[column] = entity_id = parse_id(endpoint, "kg-entity", field=field)
                existing_endpoints.append((entity_id, field, agent))
        relation_rows.append(row)

    if not entity_rows and not relation_rows:
        return IngestResult(())
    require_agents(tx, scope, agents.first_field)
    if existing_endpoints:
        ids = json_list({entity_id for entity_id, _, _ in existing_endpoints})
        owner: dict[str, str] = dict(tx.all(_ENTITY_AGENTS, {"tenant_id": tenant, "ids": ids}))
        for entity_id, field, agent in existing_endpoints:
            if entity_id not in owner:
                raise RowNotFoundError(field, "kg entity", entity_id)
            if owner[entity_id] != agent:
                raise InvalidInputError(f"invalid {field} {entity_id!r}: the entity belongs to agent "
                                        f"{owner[entity_id]}, the relation to agent {agent}",
                                        field=field, value=entity_id)

    entity_ids = tx.insert_minted_batch("kg-entity", _INSERT_ENTITY, entity_rows) if entity_rows else []
    for row, column, index in new_endpoints:
        row[column] = entity_ids[index]
    relation_ids = tx.insert_minted_batch("kg-relation", _INSERT_RELATION, relation_rows) if relation_rows else []
    return IngestResult(tuple(KgEntityId(e) for e in entity_ids), tuple(KgRelationId(r) for r in relation_ids))


def ingest_entities(tx: Tx, scope: Scope, agent_id: str, names: Sequence[str], *, entity_type: str = "concept",
                    user_id: str = "") -> list[KgEntityId]:
    """Ingest one entity per name for one agent in a single call (bulk loads, the benchmark).

    The same path as :func:`ingest_graph` (so the same validation and the same batched insert).
    """
    entities = [EntityInput(agent_id=agent_id, user_id=user_id, name=name, entity_type=entity_type)
                for name in names]
    return list(ingest_graph(tx, scope, entities=entities).entity_ids)


def get_entity(tx: Tx, scope: Scope, entity_id: str) -> KgEntity:
    """The entity with this ID in the scope's tenant, or :class:`NotFoundError`."""
    entity_id = parse_id(entity_id, "kg-entity", field="entity_id")
    row = tx.one(_ENTITY_BY_ID, {"tenant_id": scope.tenant_id, "id": entity_id})
    if row is None:
        raise NotFoundError("kg entity", entity_id)
    return entity_of(row)


def list_entities(tx: Tx, scope: Scope, agent_id: str, *, user_id: str | None = None,
                  after: Sequence[Any] | None = None, limit: int | None = None) -> list[KgEntity]:
    """The agent's entities by name — only the memory scope ``user_id``'s if given — all, or a page; an agent
    that is not the tenant's is :class:`NotFoundError`."""
    agent = require_agent(tx, scope, agent_id)
    params = {"tenant_id": scope.tenant_id, "agent_id": agent}
    if user_id is None:
        return ENTITY_PAGES.fetch(tx, params, entity_of, after=after, limit=limit)
    return SCOPE_ENTITY_PAGES.fetch(tx, {**params, "user_id": user_id}, entity_of, after=after, limit=limit)


def list_relations(tx: Tx, scope: Scope, agent_id: str, *, user_id: str | None = None,
                   after: Sequence[Any] | None = None, limit: int | None = None) -> list[KgRelation]:
    """The agent's relations, oldest first — only those between two entities of the memory scope ``user_id`` if
    given — all, or a page; an agent that is not the tenant's is :class:`NotFoundError`."""
    agent = require_agent(tx, scope, agent_id)
    params = {"tenant_id": scope.tenant_id, "agent_id": agent}
    if user_id is None:
        return RELATION_PAGES.fetch(tx, params, _relation, after=after, limit=limit)
    return SCOPE_RELATION_PAGES.fetch(tx, {**params, "user_id": user_id}, _relation, after=after, limit=limit)


def merge_entities(tx: Tx, scope: Scope, agent_id: str, keep_id: str, duplicate_ids: Sequence[str]) -> MergeResult:
    """Fold duplicates into ``keep_id`` (the dedup worker): relations are re-pointed, duplicates deleted.

    Every ID is parsed and every entity must be the agent's, in the tenant, before anything changes.  A
    relation between two members of the merged set would become a self-loop and is dropped (a self-loop
    that ``keep_id`` already had stays).  ``keep_id`` among the duplicates is refused.  The kept entity's
    name and properties are unchanged.
    """
    agent = parse_id(agent_id, "agent", field="agent_id")
    keep = parse_id(keep_id, "kg-entity", field="keep_id")
    fields = {keep: "keep_id"}
    for i, duplicate in enumerate(parse_row_ids(duplicate_ids, "kg-entity", "duplicate_ids")):
        if duplicate == keep:
            field = f"duplicate_ids[{i}]"
            raise InvalidInputError(f"invalid {field} {keep!r}: it is the entity to keep", field=field, value=keep)
        fields.setdefault(duplicate, f"duplicate_ids[{i}]")
    duplicates = list(fields)[1:]
    owner: dict[str, str] = dict(tx.all(_ENTITY_AGENTS, {"tenant_id": scope.tenant_id, "ids": json_list(fields)}))
    for entity_id, field in fields.items():
        if owner.get(entity_id) != agent:
            raise RowNotFoundError(field, f"kg entity of agent {agent}", entity_id)
    if not duplicates:
        return MergeResult(0, 0, 0)
    params = {"tenant_id": scope.tenant_id, "keep": keep, "duplicates": json_list(duplicates),
              "members": json_list([keep, *duplicates])}
    dropped = tx.execute(_DROP_INTERNAL, params).rowcount
    repointed = tx.execute(_REPOINT_SOURCES, params).rowcount + tx.execute(_REPOINT_TARGETS, params).rowcount
    deleted = tx.execute(_DELETE_ENTITIES, params).rowcount
    return MergeResult(int(repointed), int(dropped), int(deleted))


def delete_entity(tx: Tx, scope: Scope, entity_id: str) -> None:
    """Delete an entity; its relations go with it (the FKs cascade)."""
    entity_id = parse_id(entity_id, "kg-entity", field="entity_id")
    if tx.execute(_DELETE_ENTITY, {"tenant_id": scope.tenant_id, "id": entity_id}).rowcount == 0:
        raise NotFoundError("kg entity", entity_id)
