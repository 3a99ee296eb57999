"""Knowledge graph: fail-fast batch ingest, EntityRef endpoints, no per-row queries, merge (both engines)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from agentfy.identity import InvalidIdError, Scope
from agentfy.ids import format_id, is_canonical_id
from agentfy.store.db import Database, Tx
from agentfy.store.errors import InvalidInputError, NotFoundError, StoreError
from agentfy.store.repos import knowledge
from agentfy.store.repos.knowledge import EntityInput, EntityRef, RelationInput
from tests.helpers.tenants import make_tenant
from tests.store.helpers import count, new_agent


def _entity(agent_id: str, name: str, **kwargs: Any) -> EntityInput:
    return EntityInput(agent_id=agent_id, name=name, entity_type=kwargs.pop("entity_type", "person"), **kwargs)


def _counts(db: Database) -> tuple[int, int]:
    return count(db, "kg_entities"), count(db, "kg_relations")


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every statement a Tx sends to the driver (``executemany`` counts once)."""
    sent: list[str] = []
    execute, executemany = Tx.execute, Tx.executemany

    def counting_execute(self: Tx, statement: Any, params: Any = None) -> Any:
        sent.append("execute")
        return execute(self, statement, params)

    def counting_executemany(self: Tx, statement: Any, rows: Any) -> None:
        sent.append("executemany")
        executemany(self, statement, rows)

    monkeypatch.setattr(Tx, "execute", counting_execute)
    monkeypatch.setattr(Tx, "executemany", counting_executemany)
    yield sent


def test_ingest_returns_ids_in_input_order_and_links_new_and_existing_entities(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    bot = new_agent(db, acme, "bot")
    with db.transaction() as tx:
        (alice,) = knowledge.ingest_graph(tx, acme, entities=[_entity(bot.id, "Alice")]).entity_ids
        result = knowledge.ingest_graph(tx, acme, entities=[
            _entity(bot.id, "Bob", properties={"age": 41}),
            _entity(bot.id, "Acme Corp", entity_type="organization", user_id="group:telegram:-100"),
        ], relations=[
            RelationInput(agent_id=bot.id, source_entity_id=EntityRef(0), target_entity_id=EntityRef(1),
                          relation="works_at"),
            RelationInput(agent_id=bot.id, source_entity_id=alice, target_entity_id=EntityRef(0),
                          relation="knows", properties={"since": 2020}),
        ])
    bob, corp = result.entity_ids
    assert all(is_canonical_id(e, "kg-entity") for e in result.entity_ids)
    assert all(is_canonical_id(r, "kg-relation") for r in result.relation_ids) and len(result.relation_ids) == 2
    with db.transaction() as tx:
        assert knowledge.get_entity(tx, acme, bob).properties == {"age": 41}
        assert knowledge.get_entity(tx, acme, corp).user_id == "group:telegram:-100"
        assert [e.name for e in knowledge.list_entities(tx, acme, bot.id)] == ["Acme Corp", "Alice", "Bob"]
        relations = {r.id: r for r in knowledge.list_relations(tx, acme, bot.id)}
    works_at, knows = (relations[r] for r in result.relation_ids)
    assert (works_at.source_entity_id, works_at.target_entity_id, works_at.relation) == (bob, corp, "works_at")
    assert (knows.source_entity_id, knows.target_entity_id, knows.properties) == (alice, bob, {"since": 2020})


@dataclass
class World:
    """acme with agents bot and helper (one existing entity each); globex with one agent and entity."""

    acme: Scope
    bot: str
    existing: str
    helper: str
    helpers: str
    theirs: str
    foreign: str


def _setup(db: Database) -> World:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    bot, helper, theirs = new_agent(db, acme, "bot"), new_agent(db, acme, "helper"), new_agent(db, globex, "bot")
    with db.transaction() as tx:
        (existing,) = knowledge.ingest_graph(tx, acme, entities=[_entity(bot.id, "Existing")]).entity_ids
        (helpers,) = knowledge.ingest_graph(tx, acme, entities=[_entity(helper.id, "Helper's")]).entity_ids
        (foreign,) = knowledge.ingest_graph(tx, globex, entities=[_entity(theirs.id, "Theirs")]).entity_ids
    return World(acme, bot.id, existing, helper.id, helpers, theirs.id, foreign)


# Each case: (a bad entity row, error type, field, a fragment of the message).  ``{agent}``: acme's bot.
BAD_ENTITIES: dict[str, tuple[dict[str, Any], type[StoreError] | type[ValueError], str, str]] = {
    "agent_key": ({"agent_id": "goctech-leader"}, InvalidIdError, "agent_id", "'goctech-leader'"),
    "nil uuid": ({"agent_id": "00000000-0000-0000-0000-000000000000"}, InvalidIdError, "agent_id",
                 "'00000000-0000-0000-0000-000000000000'"),
    "team id": ({"agent_id": "team-calm-rivers-k8m4p2d7n9x3"}, InvalidIdError, "agent_id", "team-calm-rivers"),
    "empty agent": ({"agent_id": ""}, InvalidIdError, "agent_id", "''"),
    "other tenant's agent": ({"agent_id": "{theirs}"}, NotFoundError, "agent_id", "not found"),
    "missing agent": ({"agent_id": "agent-calm-rivers-k8m4p2d7n9x3"}, NotFoundError, "agent_id",
                      "'agent-calm-rivers-k8m4p2d7n9x3' not found"),
    "empty name": ({"name": ""}, InvalidInputError, "name", "''"),
    "name not a string": ({"name": 42}, InvalidInputError, "name", "42"),
    "type too long": ({"entity_type": "t" * 101}, InvalidInputError, "entity_type", "101 characters"),
    "NUL in user_id": ({"user_id": "u\x00"}, InvalidInputError, "user_id", "NUL"),
    "lone surrogate in name": ({"name": "a\udc00b"}, InvalidInputError, "name", "lone surrogate"),
    "lone surrogate in type": ({"entity_type": "\ud800"}, InvalidInputError, "entity_type", "lone surrogate"),
    "properties not an object": ({"properties": "{}"}, InvalidInputError, "properties", "expected an object"),
}


@pytest.mark.parametrize("position", ["first", "middle", "last"])
@pytest.mark.parametrize("case", list(BAD_ENTITIES))
def test_one_bad_entity_fails_the_whole_ingest_and_writes_nothing(db: Database, case: str, position: str) -> None:
    w = _setup(db)
    acme, bot, existing, theirs = w.acme, w.bot, w.existing, w.theirs
    before = _counts(db)
    overrides, error, field, fragment = BAD_ENTITIES[case]
    values = {"agent_id": bot, "name": "Bad", "entity_type": "person"}
    values.update({k: v.replace("{theirs}", theirs) if isinstance(v, str) else v for k, v in overrides.items()})
    bad = EntityInput(**values)
    good = [_entity(bot, f"Good {i}") for i in range(5)]
    index = {"first": 0, "middle": 2, "last": len(good)}[position]
    relations = [RelationInput(agent_id=bot, source_entity_id=existing, target_entity_id=EntityRef(1),
                               relation="knows")]
    with pytest.raises(error) as caught, db.transaction() as tx:
        knowledge.ingest_graph(tx, acme, entities=[*good[:index], bad, *good[index:]], relations=relations)
    where = f"entities[{index}].{field}"
    assert getattr(caught.value, "field", None) == where
    assert where in str(caught.value) and fragment in str(caught.value)
    assert _counts(db) == before


def _relation(bot: str, **kwargs: Any) -> RelationInput:
    values: dict[str, Any] = {"agent_id": bot, "source_entity_id": EntityRef(0), "target_entity_id": EntityRef(1),
                              "relation": "knows", **kwargs}
    return RelationInput(**values)


BAD_RELATIONS: dict[str, tuple[dict[str, Any], type[StoreError] | type[ValueError], str, str]] = {
    "agent_key": ({"agent_id": "goctech-leader"}, InvalidIdError, "agent_id", "'goctech-leader'"),
    "ref out of range": ({"target_entity_id": EntityRef(9)}, InvalidInputError, "target_entity_id",
                         "EntityRef(index=9)"),
    "negative ref": ({"source_entity_id": EntityRef(-1)}, InvalidInputError, "source_entity_id", "index=-1"),
    "malformed entity id": ({"source_entity_id": "goctech-leader"}, InvalidIdError, "source_entity_id",
                            "'goctech-leader'"),
    "agent id as entity": ({"target_entity_id": "{bot}"}, InvalidIdError, "target_entity_id", "agent-"),
    "other tenant's entity": ({"target_entity_id": "{foreign}"}, NotFoundError, "target_entity_id", "not found"),
    "missing entity": ({"source_entity_id": "kg-entity-calm-rivers-k8m4p2d7n9x3"}, NotFoundError,
                       "source_entity_id", "'kg-entity-calm-rivers-k8m4p2d7n9x3' not found"),
    "other agent's entity": ({"source_entity_id": "{helpers}"}, InvalidInputError, "source_entity_id",
                             "belongs to agent"),
    "ref to other agent's new entity": ({"target_entity_id": EntityRef(2)}, InvalidInputError, "target_entity_id",
                                        "entities[2] belongs to agent"),
    "empty relation": ({"relation": ""}, InvalidInputError, "relation", "''"),
}


@pytest.mark.parametrize("position", ["first", "middle", "last"])
@pytest.mark.parametrize("case", list(BAD_RELATIONS))
def test_one_bad_relation_fails_the_whole_ingest_and_writes_nothing(db: Database, case: str, position: str) -> None:
    w = _setup(db)
    acme, bot, existing = w.acme, w.bot, w.existing
    before = _counts(db)
    overrides, error, field, fragment = BAD_RELATIONS[case]
    names = {"{bot}": bot, "{foreign}": w.foreign, "{helpers}": w.helpers}
    bad = _relation(bot, **{k: names.get(v, v) if isinstance(v, str) else v for k, v in overrides.items()})
    entities = [_entity(bot, "A"), _entity(bot, "B"), _entity(w.helper, "C")]
    good = [_relation(bot, source_entity_id=existing), _relation(bot), _relation(bot, target_entity_id=existing)]
    index = {"first": 0, "middle": 1, "last": len(good)}[position]
    with pytest.raises(error) as caught, db.transaction() as tx:
        knowledge.ingest_graph(tx, acme, entities=entities, relations=[*good[:index], bad, *good[index:]])
    where = f"relations[{index}].{field}"
    assert getattr(caught.value, "field", None) == where
    assert where in str(caught.value) and fragment in str(caught.value)
    assert _counts(db) == before


def test_ingest_sends_a_constant_number_of_statements(db: Database, statements: list[str]) -> None:
    acme = make_tenant(db, "acme").scope
    bot, helper = new_agent(db, acme, "bot"), new_agent(db, acme, "helper")
    with db.transaction() as tx:
        (existing,) = knowledge.ingest_graph(tx, acme, entities=[_entity(bot.id, "Existing")]).entity_ids

    def ingest(n: int) -> int:
        entities = [_entity(bot.id if i % 2 else helper.id, f"E{i}") for i in range(n)]
        relations = [RelationInput(agent_id=bot.id, source_entity_id=EntityRef(i) if i % 3 else existing,
                                   target_entity_id=EntityRef(i + 2), relation="r")
                     for i in range(1, n - 2, 2)]
        statements.clear()
        with db.transaction() as tx:
            result = knowledge.ingest_graph(tx, acme, entities=entities, relations=relations)
        assert len(result.entity_ids) == n and len(result.relation_ids) == len(relations)
        return len(statements)

    small, large = ingest(10), ingest(3000)
    # two validation queries (agents, existing endpoints), and per table: savepoint + executemany + release
    assert small == large <= 10, statements


def test_merge_repoints_relations_drops_internal_ones_and_deletes_duplicates(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    bot = new_agent(db, acme, "bot")
    with db.transaction() as tx:
        a, b, b2, c = knowledge.ingest_graph(tx, acme, entities=[
            _entity(bot.id, n) for n in ("Alice", "alice", "A.", "Carol")]).entity_ids
        relation_ids = knowledge.ingest_graph(tx, acme, entities=[], relations=[
            RelationInput(agent_id=bot.id, source_entity_id=s, target_entity_id=t, relation=r)
            for s, t, r in [(b, c, "knows"), (c, b2, "likes"), (a, b, "same_as"), (b, b2, "alias"),
                            (a, a, "self")]]).relation_ids
        result = knowledge.merge_entities(tx, acme, bot.id, a, [b, b2, b])
        entities = [e.id for e in knowledge.list_entities(tx, acme, bot.id)]
        relations = {r.id: (r.source_entity_id, r.target_entity_id) for r in knowledge.list_relations(tx, acme, bot.id)}
    assert result == knowledge.MergeResult(relations_repointed=2, relations_dropped=2, entities_deleted=2)
    assert sorted(entities) == sorted([a, c])
    assert relations == {relation_ids[0]: (a, c), relation_ids[1]: (c, a), relation_ids[4]: (a, a)}


def test_merge_checks_every_id_first_and_changes_nothing_on_error(db: Database) -> None:
    w = _setup(db)
    acme, bot, existing, foreign, helpers = w.acme, w.bot, w.existing, w.foreign, w.helpers
    with db.transaction() as tx:
        dup, other = knowledge.ingest_graph(tx, acme, entities=[_entity(bot, "Dup"), _entity(bot, "Other")]).entity_ids
    before = _counts(db)
    cases: list[tuple[str, list[str], type[Exception], str]] = [
        (existing, [dup, existing], InvalidInputError, r"duplicate_ids\[1\] .*the entity to keep"),
        (existing, [dup, foreign], NotFoundError, rf"duplicate_ids\[1\]: kg entity of agent {bot} '{foreign}'"),
        (existing, [dup, helpers], NotFoundError, r"duplicate_ids\[1\]"),
        (foreign, [dup], NotFoundError, "keep_id"),
        (existing, [dup, "goctech-leader"], InvalidIdError, r"invalid duplicate_ids\[1\] 'goctech-leader'"),
    ]
    for keep, duplicates, error, message in cases:
        with pytest.raises(error, match=message), db.transaction() as tx:
            knowledge.merge_entities(tx, acme, bot, keep, duplicates)
    with pytest.raises(InvalidIdError), db.transaction() as tx:
        knowledge.merge_entities(tx, acme, "goctech-leader", existing, [dup])
    assert _counts(db) == before
    with db.transaction() as tx:
        assert knowledge.merge_entities(tx, acme, bot, existing, []) == knowledge.MergeResult(0, 0, 0)
        assert knowledge.merge_entities(tx, acme, bot, existing, [dup, other]).entities_deleted == 2


def test_entities_of_another_tenant_are_not_found(db: Database) -> None:
    w = _setup(db)
    acme, theirs, foreign = w.acme, w.theirs, w.foreign
    missing = format_id("kg-entity")
    with db.transaction() as tx:
        for ref in (foreign, missing):
            with pytest.raises(NotFoundError, match=f"kg entity '{ref}' not found"):
                knowledge.get_entity(tx, acme, ref)
            with pytest.raises(NotFoundError, match=f"kg entity '{ref}' not found"):
                knowledge.delete_entity(tx, acme, ref)
        for call in (knowledge.list_entities, knowledge.list_relations):
            with pytest.raises(NotFoundError, match=f"agent '{theirs}' not found"):
                call(tx, acme, theirs)
        with pytest.raises(InvalidIdError):
            knowledge.delete_entity(tx, acme, "goctech-leader")
    assert count(db, "kg_entities") == 3


def test_delete_entity_takes_its_relations(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    bot = new_agent(db, acme, "bot")
    with db.transaction() as tx:
        a, _b = knowledge.ingest_graph(tx, acme, entities=[_entity(bot.id, "A"), _entity(bot.id, "B")], relations=[
            RelationInput(agent_id=bot.id, source_entity_id=EntityRef(0), target_entity_id=EntityRef(1),
                          relation="r")]).entity_ids
        knowledge.delete_entity(tx, acme, a)
    assert _counts(db) == (1, 0)


def test_empty_ingest_does_nothing(db: Database, statements: list[str]) -> None:
    acme = make_tenant(db, "acme").scope
    statements.clear()
    with db.transaction() as tx:
        assert knowledge.ingest_graph(tx, acme, entities=[]) == knowledge.IngestResult((), ())
    assert statements == []


@pytest.mark.slow
def test_a_100k_entity_ingest_for_one_agent_is_one_call(db: Database, statements: list[str]) -> None:
    acme = make_tenant(db, "acme").scope
    bot = new_agent(db, acme, "bot")
    statements.clear()
    with db.transaction() as tx:
        ids = knowledge.ingest_entities(tx, acme, bot.id, [f"entity {i}" for i in range(100_000)])
    assert len(ids) == len(set(ids)) == 100_000 and len(statements) <= 5
    assert count(db, "kg_entities") == 100_000
