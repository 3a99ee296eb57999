"""``/v1/knowledge``: knowledge-graph batch ingest (fail-fast) and an agent's entities and relations.

Every entity and relation row names its agent (ID or key).  Each distinct agent reference is resolved once,
in the writing transaction, before the store is called; a bad one fails the request naming the first row that used it
(``entities[i].agent``, ``relations[j].agent``).  Relation endpoints (``source``, ``target``) are the index of
an entity of the same request or an existing entity's ID.  All or nothing (batches fail fast): one bad
row fails the request naming ``entities[i].<field>`` or ``relations[j].<field>``, and nothing is written.
"""

from __future__ import annotations

from fastapi import APIRouter

from agentfy.gateway.auth import Principal
from agentfy.gateway.deps import Authenticated
from agentfy.gateway.pages import Cursor, Limit, Page, empty, paged
from agentfy.gateway.resolve import agent_in, agent_loop
from agentfy.gateway.routes.agents import AgentRef
from agentfy.gateway.routes.schemas_data import (
    GraphIngestIn,
    GraphIngestOut,
    KgEntityOut,
    KgRelationOut,
    rename_suffixes,
    renamed,
)
from agentfy.gateway.routing import ApiRoute
from agentfy.identity import AgentId, InvalidAgentKeyError, InvalidIdError
from agentfy.permissions.access import require_scope, scope_filter
from agentfy.store.db import Tx
from agentfy.store.errors import InvalidInputError, StoreError
from agentfy.store.paging import DEFAULT_LIMIT
from agentfy.store.repos import knowledge
from agentfy.store.repos.knowledge import EntityInput, EntityRef, KgEntity, KgRelation, RelationInput

router = APIRouter(tags=["knowledge"], route_class=ApiRoute)
#: The store's row fields -> this API's.
_RENAME = rename_suffixes({"agent_id": "agent", "source_entity_id": "source", "target_entity_id": "target"})


def _inputs(tx: Tx, who: Principal, body: GraphIngestIn) -> tuple[list[EntityInput], list[RelationInput]]:
    """The request's rows as store inputs: each ``agent`` resolved (once per distinct value) in ``tx``, each
    relation endpoint an index into this request (of the relation's own agent) or an existing entity's ID."""
    resolved: dict[str, AgentId] = {}

    def agent_of(value: str, field: str) -> AgentId:
        if value not in resolved:
            resolved[value] = agent_in(tx, who, value, field).id
        return resolved[value]

    entities = [EntityInput(agent_id=agent_of(e.agent, f"entities[{i}].agent"), user_id=e.user_id, name=e.name,
                            entity_type=e.entity_type, properties=e.properties)
                for i, e in enumerate(body.entities)]

    def endpoint(value: int | str, field: str, agent: AgentId) -> str | EntityRef:
        if not isinstance(value, int):
            return value  # an existing entity's ID: the store checks it (format, tenant, agent)
        if not 0 <= value < len(entities):
            raise InvalidInputError(f"invalid {field} {value}: the request has {len(entities)} entities",
                                    field=field, value=value)
        if entities[value].agent_id != agent:
            raise InvalidInputError(f"invalid {field} {value}: entities[{value}] belongs to agent "
                                    f"{entities[value].agent_id}, the relation to agent {agent}", field=field,
                                    value=value)
        return EntityRef(value)

    relations: list[RelationInput] = []
    for j, r in enumerate(body.relations):
        agent = agent_of(r.agent, f"relations[{j}].agent")
        relations.append(RelationInput(agent_id=agent, source_entity_id=endpoint(r.source, f"relations[{j}].source",
                                                                                 agent),
                                       target_entity_id=endpoint(r.target, f"relations[{j}].target", agent),
                                       relation=r.relation, properties=r.properties))
    return entities, relations


@router.post("/knowledge/ingest", operation_id="knowledge.ingest", status_code=201, response_model=GraphIngestOut)
def ingest(body: GraphIngestIn, call: Authenticated) -> GraphIngestOut:
    """Ingest entities and relations in one go, all or nothing (operator or higher).

    Each row's ``agent`` is an agent ID or key; a relation's ``source``/``target`` is an entity index in
    this request or an existing entity's ID, of the relation's own agent. A malformed value is 422, an
    agent or entity that is missing or another organization's is 404 — each naming the row and field —
    and nothing is written. Returns the new IDs in input order.
    """
    for entity in body.entities:
        require_scope(call.who, "knowledge.ingest", entity.user_id)
    try:
        with call.gateway.db.transaction() as tx:  # agents are resolved in the writing transaction
            entities, relations = _inputs(tx, call.who, body)
            result = knowledge.ingest_graph(tx, call.who.scope, entities=entities, relations=relations)
    except (InvalidIdError, InvalidAgentKeyError, StoreError) as error:
        translated = renamed(error, _RENAME)
        if translated is error:
            raise
        raise translated from error
    return GraphIngestOut(entity_ids=list(result.entity_ids), relation_ids=list(result.relation_ids))


@router.get("/agents/{agent}/knowledge/entities", operation_id="knowledge.entities.list",
            response_model=Page[KgEntityOut])
def list_entities(agent: AgentRef, call: Authenticated,
                  limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None) -> Page[KgEntityOut]:
    """The agent's knowledge-graph entities, by name, a page at a time: those of memory scopes the caller may
    see."""
    agent_id = agent_loop(call.gateway, call.who, agent).agent.id
    nothing, user_id = scope_filter(call.who, "knowledge.entities.list", None)
    if nothing:
        return empty()
    return paged(call.gateway, call.who, "knowledge.entities.list", knowledge.ENTITY_PAGES, fetch=lambda tx, **page:
                 knowledge.list_entities(tx, call.who.scope, agent_id, user_id=user_id, **page), out=entity_out,
                 limit=limit, cursor=cursor)


@router.get("/agents/{agent}/knowledge/relations", operation_id="knowledge.relations.list",
            response_model=Page[KgRelationOut])
def list_relations(agent: AgentRef, call: Authenticated,
                   limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None) -> Page[KgRelationOut]:
    """The agent's knowledge-graph relations, oldest first, a page at a time: those whose two entities are both
    in a memory scope the caller may see."""
    agent_id = agent_loop(call.gateway, call.who, agent).agent.id
    nothing, user_id = scope_filter(call.who, "knowledge.relations.list", None)
    if nothing:
        return empty()
    return paged(call.gateway, call.who, "knowledge.relations.list", knowledge.RELATION_PAGES, fetch=lambda tx, **page:
                 knowledge.list_relations(tx, call.who.scope, agent_id, user_id=user_id, **page), out=relation_out,
                 limit=limit, cursor=cursor)


def entity_out(e: KgEntity) -> KgEntityOut:
    return KgEntityOut(id=e.id, agent_id=e.agent_id, user_id=e.user_id, name=e.name, entity_type=e.entity_type,
                       properties=e.properties, created_at=e.created_at)


def relation_out(r: KgRelation) -> KgRelationOut:
    return KgRelationOut(id=r.id, agent_id=r.agent_id, source_entity_id=r.source_entity_id,
                         target_entity_id=r.target_entity_id, relation=r.relation, properties=r.properties,
                         created_at=r.created_at)
