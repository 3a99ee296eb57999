"""The consolidation pipeline on both engines: a non-ID agent or tenant refused by every worker, each worker's
effect in the store, idempotency, tenant isolation and the pluggable summariser and extractor."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from agentfy.events.admin import dead_letters, status_of
from agentfy.events.consolidation import (
    DREAMING_DUE,
    Consolidation,
    ConsolidationSettings,
    DedupWorker,
    EpisodicWorker,
    ExtractedEntity,
    ExtractedRelation,
    Extraction,
    InvalidEventError,
    dream_path,
    handlers,
    normalise_name,
    publish_session_completed,
)
from agentfy.events.consolidation import episodic as episodic_module
from agentfy.events.event import ENTITY_UPSERTED, EPISODIC_CREATED, SESSION_COMPLETED, DomainEvent
from agentfy.events.handlers import AnyHandler as Handler
from agentfy.events.outbox import claim, publish
from agentfy.events.worker import Worker
from agentfy.identity import InvalidIdError, Scope
from agentfy.store.db import Database
from agentfy.store.repos import agents, knowledge, memory, sessions
from agentfy.store.repos.knowledge import EntityInput, EntityRef, RelationInput
from tests.helpers.tenants import make_tenant
from tests.store.helpers import new_agent

GROUP = "group:telegram:-100123"
NOW = ConsolidationSettings(debounce_seconds=0)

TALK = [("user", "I met Alice in Paris yesterday. It was lovely."),
        ("assistant", "Did Alice show you the Eiffel Tower? Tell me more."),
        ("system", "Ignored by the default summariser."),
        ("user", "Yes, Alice and Bob Smith took me there.")]


def tenant_with_agent(db: Database, slug: str = "acme", key: str = "goctech-leader") -> tuple[Scope, agents.Agent]:
    scope = make_tenant(db, slug).scope
    return scope, new_agent(db, scope, key)


def completed_session(db: Database, scope: Scope, agent: agents.Agent, session_key: str,
                      messages: Sequence[tuple[str, str]] = TALK, *, user: str = GROUP,
                      publish: bool = True) -> DomainEvent | None:
    """Open a session, append ``messages``, complete it and publish ``session.completed`` — one transaction."""
    with db.transaction() as tx:
        sessions.open_session(tx, scope, session_key, agent.id, user)
        for role, content in messages:
            sessions.append_message(tx, scope, session_key, role, content)
        sessions.complete_session(tx, scope, session_key)
        return publish_session_completed(tx, scope, session_key) if publish else None


def drain(worker: Worker, *, rounds: int = 50) -> int:
    """Run the worker until nothing is due; the number of events handled."""
    handled = 0
    for _ in range(rounds):
        batch = worker.run_once()
        if not batch:
            return handled
        handled += batch
    raise AssertionError(f"the worker was still busy after {rounds} rounds")


def pipeline(db: Database, handler_map: Mapping[str, Handler] | None = None) -> Worker:
    return Worker(db, handler_map if handler_map is not None else handlers(settings=NOW), name="test-worker")


def rows(db: Database, sql: str, params: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
    with db.transaction(write=False) as tx:
        return tx.all(sql, params or {})


def outbox(db: Database, type_: str) -> list[tuple[Any, ...]]:
    """``(tenant_id, source_id, agent_id, user_id, status, payload)`` of the outbox rows of one type."""
    return rows(db, "SELECT tenant_id, source_id, agent_id, user_id, status, payload FROM event_outbox "
                    "WHERE type = :type ORDER BY occurred_at", {"type": type_})


BAD_AGENT_IDS = ["goctech-leader", "00000000-0000-0000-0000-000000000000"]
BAD_TENANT_IDS = ["goctech", "00000000-0000-0000-0000-000000000000"]


def counts(db: Database) -> dict[str, int]:
    tables = ("episodic_summaries", "kg_entities", "kg_relations", "memory_documents", "event_outbox")
    return {t: int(rows(db, f"SELECT count(*) FROM {t}")[0][0]) for t in tables}


def only_event(db: Database, type_: str) -> DomainEvent:
    """The one claimable event of ``type_`` (claimed, so a direct handler call can use it)."""
    [held] = claim(db, "test-direct", [type_])
    return held.event


# -- an event whose agent or tenant is not an ID is dead-lettered at once, and nothing is written -----------
@pytest.mark.parametrize("bad", BAD_AGENT_IDS)
def test_episodic_worker_handle_non_id_agent_id(db: Database, bad: str) -> None:
    scope, agent = tenant_with_agent(db)
    completed_session(db, scope, agent, "s-1", publish=False)  # a real session the worker could summarise
    with db.transaction() as tx:  # the default (warn) mode stores the event; the consumer must refuse it
        event = publish(tx, type=SESSION_COMPLETED, tenant_id=scope.tenant_id, source_id="s-1:0", agent_id=bad,
                        user_id=GROUP, payload={"session_key": "s-1", "compaction_count": 0})
    assert event is not None
    worker = pipeline(db)
    assert worker.run_once() == 1
    status, attempts, error = status_of(db, event.id) or ("missing", 0, None)
    assert (status, attempts) == ("dead", 1)
    assert error is not None and f"invalid agent_id {bad!r}" in error
    assert counts(db)["episodic_summaries"] == 0 and outbox(db, EPISODIC_CREATED) == []
    assert drain(worker) == 0  # dead means never retried


@pytest.mark.parametrize("bad", BAD_TENANT_IDS)
def test_episodic_worker_handle_non_id_tenant_id(db: Database, bad: str) -> None:
    scope, agent = tenant_with_agent(db)
    completed_session(db, scope, agent, "s-1", publish=False)
    with db.transaction() as tx:
        event = publish(tx, type=SESSION_COMPLETED, tenant_id=bad, source_id="s-1:0", agent_id=agent.id,
                        user_id=GROUP, payload={"session_key": "s-1", "compaction_count": 0})
    assert event is not None
    worker = pipeline(db)
    assert worker.run_once() == 1
    status, attempts, error = status_of(db, event.id) or ("missing", 0, None)
    assert (status, attempts) == ("dead", 1)
    assert error is not None and f"invalid tenant_id {bad!r}" in error
    assert counts(db)["episodic_summaries"] == 0 and outbox(db, EPISODIC_CREATED) == []


# -- every handler, called directly, parses the IDs first ----------------------------------------------------
def _event(db: Database, type_: str, tenant_id: str, agent_id: str | None, payload: dict[str, Any]) -> DomainEvent:
    return DomainEvent(id=db.mint("domain-event"), type=type_, tenant_id=tenant_id, source_id="direct",
                       occurred_at="2026-01-01T00:00:00.000000Z", agent_id=agent_id, user_id=GROUP, payload=payload)


def _direct_cases(db: Database, scope: Scope, agent: agents.Agent) -> dict[str, tuple[Handler, str, dict[str, Any]]]:
    """handler name → (handler, event type, a payload that would be handled if the IDs were right)."""
    summary_id = db.mint("episodic-summary")
    workers = Consolidation.build(settings=NOW)
    episodic = {"session_key": "s-1", "compaction_count": 0}
    created = {"summary_id": summary_id, "summary": "Alice met Bob in Paris."}
    return {
        "episodic": (workers.episodic.handle, SESSION_COMPLETED, episodic),
        "semantic": (workers.semantic.handle, EPISODIC_CREATED, created),
        "dreaming": (workers.dreaming.handle, EPISODIC_CREATED, created),
        "dreaming_due": (workers.dreaming.handle_due, DREAMING_DUE, {"newest_summary_id": summary_id}),
        "dedup": (workers.dedup.handle, ENTITY_UPSERTED, {"summary_id": summary_id}),
        "pipeline_episodic_created": (workers.handlers()[EPISODIC_CREATED], EPISODIC_CREATED, created),
    }


CASES = ["episodic", "semantic", "dreaming", "dreaming_due", "dedup", "pipeline_episodic_created"]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("bad", [*BAD_AGENT_IDS, "", None])
def test_handler_called_directly_refuses_a_non_id_agent(db: Database, case: str, bad: str | None) -> None:
    scope, agent = tenant_with_agent(db)
    completed_session(db, scope, agent, "s-1", publish=False)
    handler, type_, payload = _direct_cases(db, scope, agent)[case]
    before = counts(db)
    with pytest.raises(InvalidIdError) as caught, db.transaction() as tx:
        handler(tx, scope, _event(db, type_, scope.tenant_id, bad, payload))
    assert caught.value.field == "agent_id"
    assert f"invalid agent_id {bad or ''!r}" in str(caught.value)
    assert counts(db) == before


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("bad", BAD_TENANT_IDS)
def test_handler_called_directly_refuses_a_non_id_tenant(db: Database, case: str, bad: str) -> None:
    scope, agent = tenant_with_agent(db)
    completed_session(db, scope, agent, "s-1", publish=False)
    handler, type_, payload = _direct_cases(db, scope, agent)[case]
    before = counts(db)
    with pytest.raises(InvalidIdError, match=f"invalid tenant_id {bad!r}"), db.transaction() as tx:
        handler(tx, scope, _event(db, type_, bad, agent.id, payload))
    assert counts(db) == before


@pytest.mark.parametrize("case", CASES)
def test_handler_refuses_an_event_of_another_tenant(db: Database, case: str) -> None:
    acme, agent = tenant_with_agent(db)
    globex = make_tenant(db, "globex").scope
    completed_session(db, acme, agent, "s-1", publish=False)
    handler, type_, payload = _direct_cases(db, acme, agent)[case]
    before = counts(db)
    with pytest.raises(InvalidEventError, match=acme.tenant_id), db.transaction() as tx:
        handler(tx, globex, _event(db, type_, acme.tenant_id, agent.id, payload))
    assert counts(db) == before


# -- the whole pipeline: every worker's effect is in the store -----------------------------------------------
def test_full_pipeline_writes_summary_entities_dream_and_merges_duplicates(db: Database) -> None:
    scope, agent = tenant_with_agent(db)
    first = completed_session(db, scope, agent, "s-1")
    second = completed_session(db, scope, agent, "s-2", [("user", "Alice says hello from Berlin.")])
    assert first is not None and second is not None
    assert first.agent_id == agent.id and first.source_id == "s-1:0" and first.user_id == GROUP

    handled = drain(pipeline(db))
    # 2 session.completed + 2 episodic.created + 2 entity.upserted
    assert handled == 6
    assert rows(db, "SELECT count(*) FROM event_outbox WHERE status != 'done'") == [(0,)]

    summaries = rows(db, "SELECT agent_id, user_id, session_key, compaction_count, summary, promoted_at "
                         "FROM episodic_summaries ORDER BY session_key")
    assert [s[:4] for s in summaries] == [(agent.id, GROUP, "s-1", 0), (agent.id, GROUP, "s-2", 0)]
    assert summaries[0][4] == ("user: I met Alice in Paris yesterday.\n"
                               "assistant: Did Alice show you the Eiffel Tower?\n"
                               "user: Yes, Alice and Bob Smith took me there.")
    assert all(s[5] is not None for s in summaries)  # promoted by the dreaming worker (debounce 0)

    with db.transaction(write=False) as tx:
        entities = knowledge.list_entities(tx, scope, agent.id)
        names = [e.name for e in entities]
        # "Alice" was extracted from both summaries and merged into one; the oldest was kept
        assert names == sorted(["Alice", "Bob Smith", "Berlin", "Eiffel Tower", "Paris"])
        assert {e.user_id for e in entities} == {GROUP} and {e.entity_type for e in entities} == {"concept"}
        relations = knowledge.list_relations(tx, scope, agent.id)
        by_id = {e.id: e.name for e in entities}
        pairs = {frozenset((by_id[r.source_entity_id], by_id[r.target_entity_id])) for r in relations}
        assert frozenset(("Alice", "Paris")) in pairs and frozenset(("Alice", "Berlin")) in pairs
        assert {r.relation for r in relations} == {"related_to"}

        [dream] = memory.list_memory_documents(tx, scope, agent.id, user_id=GROUP)
    assert dream.path == dream_path(GROUP) and dream.path.startswith("dreams/") and "telegram" not in dream.path
    assert "session s-1" in dream.content and "session s-2" in dream.content
    assert "Alice says hello from Berlin." in dream.content
    assert dream.metadata["summaries"] == 2

    created = outbox(db, EPISODIC_CREATED)
    assert len(created) == 2 and all(row[2] == agent.id and row[3] == GROUP for row in created)
    upserted = outbox(db, ENTITY_UPSERTED)
    assert sorted(row[1] for row in upserted) == sorted(f"{row[1]}:semantic" for row in created)


def test_empty_session_writes_no_summary(db: Database) -> None:
    scope, agent = tenant_with_agent(db)
    completed_session(db, scope, agent, "s-1", [("system", "boot"), ("user", "   ")])
    assert drain(pipeline(db)) == 1
    assert counts(db)["episodic_summaries"] == 0 and outbox(db, EPISODIC_CREATED) == []


def test_session_of_another_agent_is_dead_lettered(db: Database) -> None:
    scope, agent = tenant_with_agent(db)
    other = new_agent(db, scope, "other-bot")
    completed_session(db, scope, agent, "s-1", publish=False)
    with db.transaction() as tx:
        event = publish(tx, type=SESSION_COMPLETED, tenant_id=scope.tenant_id, source_id="s-1:0", agent_id=other.id,
                        payload={"session_key": "s-1", "compaction_count": 0})
    assert event is not None
    pipeline(db).run_once()
    status, attempts, error = status_of(db, event.id) or ("missing", 0, None)
    assert (status, attempts) == ("dead", 1) and error is not None and other.id in error
    assert counts(db)["episodic_summaries"] == 0


@pytest.mark.parametrize("payload", [{}, {"session_key": "s-1"}, {"session_key": "s-1", "compaction_count": -1},
                                     {"session_key": 7, "compaction_count": 0}])
def test_bad_payload_is_dead_lettered(db: Database, payload: dict[str, Any]) -> None:
    scope, agent = tenant_with_agent(db)
    completed_session(db, scope, agent, "s-1", publish=False)
    with db.transaction() as tx:
        event = publish(tx, type=SESSION_COMPLETED, tenant_id=scope.tenant_id, source_id="s-1:0", agent_id=agent.id,
                        payload=payload)
    assert event is not None
    pipeline(db).run_once()
    status, attempts, error = status_of(db, event.id) or ("missing", 0, None)
    assert (status, attempts) == ("dead", 1) and error is not None and "payload." in error
    assert counts(db)["episodic_summaries"] == 0


# -- idempotency ---------------------------------------------------------------------------------------------
def test_session_completed_twice_is_deduplicated(db: Database) -> None:
    scope, agent = tenant_with_agent(db)
    assert completed_session(db, scope, agent, "s-1") is not None
    with db.transaction() as tx:  # a second publisher (a new event ID) for the same compaction
        assert publish_session_completed(tx, scope, "s-1") is None
        assert publish(tx, type=SESSION_COMPLETED, tenant_id=scope.tenant_id, source_id="s-1:0",
                       agent_id=agent.id, payload={"session_key": "s-1", "compaction_count": 0}) is None
    drain(pipeline(db))
    assert counts(db)["episodic_summaries"] == 1 and len(outbox(db, EPISODIC_CREATED)) == 1


def test_episodic_handler_called_twice_creates_one_summary_and_one_event(db: Database) -> None:
    scope, agent = tenant_with_agent(db)
    completed_session(db, scope, agent, "s-1")
    event = only_event(db, SESSION_COMPLETED)
    worker = EpisodicWorker()
    with db.transaction() as tx:
        first = worker.consolidate(tx, scope, event)
    with db.transaction() as tx:
        second = worker.consolidate(tx, scope, event)
        worker.handle(tx, scope, event)
    assert first is not None and second is None
    assert counts(db)["episodic_summaries"] == 1
    [created] = outbox(db, EPISODIC_CREATED)
    assert created[1] == first.id and created[2] == agent.id and json.loads(created[5])["summary_id"] == first.id


def test_a_new_compaction_is_a_new_summary(db: Database) -> None:
    scope, agent = tenant_with_agent(db)
    completed_session(db, scope, agent, "s-1")
    with db.transaction() as tx:
        sessions.increment_compaction(tx, scope, "s-1")
        assert publish_session_completed(tx, scope, "s-1") is not None
    drain(pipeline(db))
    assert rows(db, "SELECT compaction_count FROM episodic_summaries ORDER BY compaction_count") == [(0,), (1,)]


def test_episodic_created_handled_twice_ingests_and_promotes_once(db: Database) -> None:
    scope, agent = tenant_with_agent(db)
    completed_session(db, scope, agent, "s-1")
    workers = Consolidation.build(settings=NOW)
    Worker(db, {SESSION_COMPLETED: workers.episodic.handle}).run_once()
    event = only_event(db, EPISODIC_CREATED)
    handle = workers.handlers()[EPISODIC_CREATED]
    with db.transaction() as tx:
        handle(tx, scope, event)
    after_first = counts(db)
    with db.transaction() as tx:
        handle(tx, scope, event)
        assert workers.semantic.ingest(tx, scope, event) is None
        assert workers.dreaming.dream(tx, scope, event).status == "idle"
    assert counts(db) == after_first
    assert after_first["kg_entities"] > 0 and after_first["memory_documents"] == 1


def test_dedup_handler_twice_merges_once(db: Database) -> None:
    scope, agent = tenant_with_agent(db)
    with db.transaction() as tx:
        knowledge.ingest_graph(tx, scope, entities=[
            EntityInput(agent_id=agent.id, user_id=GROUP, name="Alice", entity_type="concept"),
            EntityInput(agent_id=agent.id, user_id=GROUP, name="Bob", entity_type="concept")],
            relations=[RelationInput(agent_id=agent.id, source_entity_id=EntityRef(0), target_entity_id=EntityRef(1),
                                     relation="related_to")])
    with db.transaction() as tx:
        knowledge.ingest_graph(tx, scope, entities=[
            EntityInput(agent_id=agent.id, user_id=GROUP, name="  ALICE ", entity_type="Concept"),
            EntityInput(agent_id=agent.id, user_id=GROUP, name="Carol", entity_type="concept"),
            EntityInput(agent_id=agent.id, user_id="someone-else", name="Alice", entity_type="concept"),
            EntityInput(agent_id=agent.id, user_id=GROUP, name="Alice", entity_type="person")],
            relations=[RelationInput(agent_id=agent.id, source_entity_id=EntityRef(0), target_entity_id=EntityRef(1),
                                     relation="related_to")])
    with db.transaction(write=False) as tx:
        oldest = next(e for e in knowledge.list_entities(tx, scope, agent.id) if e.name == "Alice"
                      and e.user_id == GROUP and e.entity_type == "concept")
    event = _event(db, ENTITY_UPSERTED, scope.tenant_id, agent.id, {})
    worker = DedupWorker()
    with db.transaction() as tx:
        [merged] = worker.dedup(tx, scope, event)
        assert merged.entities_deleted == 1 and merged.relations_repointed == 1
    with db.transaction() as tx:
        assert worker.dedup(tx, scope, event) == []
        entities = knowledge.list_entities(tx, scope, agent.id)
        relations = knowledge.list_relations(tx, scope, agent.id)
    # another memory scope and another type are different entities
    assert sorted((e.name, e.user_id, e.entity_type) for e in entities) == sorted([
        ("Alice", GROUP, "concept"), ("Bob", GROUP, "concept"), ("Carol", GROUP, "concept"),
        ("Alice", "someone-else", "concept"), ("Alice", GROUP, "person")])
    assert oldest.id in {e.id for e in entities}
    assert {r.source_entity_id for r in relations} == {oldest.id}


def test_concurrent_dreaming_and_dedup_runs_do_not_trip_over_each_other(db: Database) -> None:
    """PostgreSQL claims concurrently: runs for one agent are serialised, so none reads a stale state."""
    scope, agent = tenant_with_agent(db)
    with db.transaction() as tx:
        for n in range(6):
            memory.create_episodic_summary(tx, scope, agent_id=agent.id, user_id=GROUP, session_key=f"s-{n}",
                                           compaction_count=0, summary=f"Summary {n} about Alice.")
        knowledge.ingest_graph(tx, scope, entities=[
            EntityInput(agent_id=agent.id, user_id=GROUP, name=name, entity_type="concept")
            for name in ["Alice", "alice", "ALICE", "Bob", "bob"] * 3])
    workers = Consolidation.build(settings=NOW)
    dream = _event(db, EPISODIC_CREATED, scope.tenant_id, agent.id, {})
    dedup = _event(db, ENTITY_UPSERTED, scope.tenant_id, agent.id, {})
    runners = 8
    barrier = threading.Barrier(runners)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            barrier.wait()
            with db.transaction() as tx:
                (workers.dreaming.handle if i % 2 else workers.dedup.handle)(tx, scope, dream if i % 2 else dedup)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(runners)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with db.transaction(write=False) as tx:
        assert sorted(normalise_name(e.name) for e in knowledge.list_entities(tx, scope, agent.id)) == ["alice", "bob"]
        [document] = memory.list_memory_documents(tx, scope, agent.id)
    assert [document.content.count(f"session s-{n} ") for n in range(6)] == [1] * 6
    assert document.metadata["summaries"] == 6
    assert rows(db, "SELECT count(*) FROM episodic_summaries WHERE promoted_at IS NULL") == [(0,)]


# -- tenant isolation ----------------------------------------------------------------------------------------
def test_two_tenants_with_the_same_session_key_get_their_own_summaries(db: Database) -> None:
    acme, acme_bot = tenant_with_agent(db, "acme", "bot")
    globex, globex_bot = tenant_with_agent(db, "globex", "bot")
    completed_session(db, acme, acme_bot, "shared-key", [("user", "Acme talks about Alice.")])
    completed_session(db, globex, globex_bot, "shared-key", [("user", "Globex talks about Zed.")])
    drain(pipeline(db))
    summaries = rows(db, "SELECT tenant_id, agent_id, summary FROM episodic_summaries ORDER BY summary")
    assert summaries == [(acme.tenant_id, acme_bot.id, "user: Acme talks about Alice."),
                         (globex.tenant_id, globex_bot.id, "user: Globex talks about Zed.")]
    with db.transaction(write=False) as tx:
        assert {e.name for e in knowledge.list_entities(tx, acme, acme_bot.id)} == {"Acme", "Alice"}
        assert {e.name for e in knowledge.list_entities(tx, globex, globex_bot.id)} == {"Globex", "Zed"}
        assert len(memory.list_memory_documents(tx, acme, acme_bot.id)) == 1
        assert len(memory.list_memory_documents(tx, globex, globex_bot.id)) == 1
    assert rows(db, "SELECT DISTINCT tenant_id FROM kg_entities WHERE agent_id = :a", {"a": acme_bot.id}) \
        == [(acme.tenant_id,)]


def test_events_of_tenant_a_never_write_into_tenant_b(db: Database) -> None:
    acme, acme_bot = tenant_with_agent(db, "acme", "bot")
    globex, globex_bot = tenant_with_agent(db, "globex", "bot")
    completed_session(db, acme, acme_bot, "s-1")
    completed_session(db, globex, globex_bot, "s-1", publish=False)  # B has the same key, but no event
    drain(pipeline(db))
    for table in ("episodic_summaries", "kg_entities", "kg_relations", "memory_documents"):
        assert rows(db, f"SELECT DISTINCT tenant_id FROM {table}") == [(acme.tenant_id,)], table
    assert {row[0] for row in rows(db, "SELECT tenant_id FROM event_outbox")} == {acme.tenant_id}


def test_an_event_naming_another_tenants_agent_writes_nothing(db: Database) -> None:
    acme, acme_bot = tenant_with_agent(db, "acme", "bot")
    globex = make_tenant(db, "globex").scope
    completed_session(db, acme, acme_bot, "s-1", publish=False)
    with db.transaction() as tx:  # tenant B, agent and session of tenant A
        event = publish(tx, type=SESSION_COMPLETED, tenant_id=globex.tenant_id, source_id="s-1:0",
                        agent_id=acme_bot.id, payload={"session_key": "s-1", "compaction_count": 0})
    assert event is not None
    pipeline(db).run_once()
    status, attempts, error = status_of(db, event.id) or ("missing", 0, None)
    assert (status, attempts) == ("dead", 1) and error is not None and "not found" in error
    assert counts(db)["episodic_summaries"] == 0


# -- pluggable summariser and extractor ----------------------------------------------------------------------
class RecordingSummariser:
    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str]]] = []

    def summarise(self, session: sessions.Session, messages: Sequence[sessions.SessionMessage]) -> str:
        self.calls.append((session.session_key, [m.content for m in messages]))
        return f"LLM summary of {session.session_key} ({len(messages)} messages)"


class FixedExtractor:
    def __init__(self) -> None:
        self.texts: list[str] = []

    def extract(self, text: str) -> Extraction:
        self.texts.append(text)
        return Extraction((ExtractedEntity("Ada Lovelace", "person"), ExtractedEntity("Analytical Engine", "machine")),
                          (ExtractedRelation(0, 1, "designed_for"),))


def test_pluggable_summariser_and_extractor_are_used(db: Database) -> None:
    scope, agent = tenant_with_agent(db)
    completed_session(db, scope, agent, "s-1")
    summariser, extractor = RecordingSummariser(), FixedExtractor()
    drain(pipeline(db, handlers(summariser=summariser, extractor=extractor, settings=NOW)))
    assert summariser.calls == [("s-1", [content for _, content in TALK])]
    assert extractor.texts == ["LLM summary of s-1 (4 messages)"]
    assert rows(db, "SELECT summary FROM episodic_summaries") == [("LLM summary of s-1 (4 messages)",)]
    with db.transaction(write=False) as tx:
        entities = knowledge.list_entities(tx, scope, agent.id)
        [relation] = knowledge.list_relations(tx, scope, agent.id)
    assert sorted((e.name, e.entity_type) for e in entities) == [("Ada Lovelace", "person"),
                                                                 ("Analytical Engine", "machine")]
    assert relation.relation == "designed_for"
    assert all(e.properties["summary_id"] == relation.properties["summary_id"] for e in entities)


@pytest.mark.parametrize(("cap", "expected"), [(10, 5), (3, 3)])
def test_messages_are_paged_and_capped(db: Database, monkeypatch: pytest.MonkeyPatch, cap: int,
                                       expected: int) -> None:
    monkeypatch.setattr(episodic_module, "_PAGE", 2)
    scope, agent = tenant_with_agent(db)
    completed_session(db, scope, agent, "s-1", [("user", f"Message {n}.") for n in range(5)])
    summariser = RecordingSummariser()
    settings = ConsolidationSettings(debounce_seconds=0, max_session_messages=cap)
    drain(pipeline(db, handlers(summariser=summariser, settings=settings)))
    assert summariser.calls == [("s-1", [f"Message {n}." for n in range(expected)])]


def test_extractor_with_a_bad_relation_index_fails_fast(db: Database) -> None:
    class Broken:
        def extract(self, text: str) -> Extraction:
            return Extraction((ExtractedEntity("Alice"),), (ExtractedRelation(0, 5),))

    scope, agent = tenant_with_agent(db)
    completed_session(db, scope, agent, "s-1")
    worker = pipeline(db, handlers(extractor=Broken(), settings=NOW))
    drain(worker)
    [dead] = dead_letters(db).letters
    assert dead.event.type == EPISODIC_CREATED and dead.attempts == 1 and "relations[0].target_entity_id" in (
        dead.last_error or "")
    # all or nothing: no entity, no marker, and the dreaming half of the same event rolled back too
    assert counts(db)["kg_entities"] == 0 and outbox(db, ENTITY_UPSERTED) == []
    assert counts(db)["memory_documents"] == 0
