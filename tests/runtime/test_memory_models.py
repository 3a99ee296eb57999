"""The consolidation workers on the agent's own model, through the real pipeline and a local OpenAI-compatible
server, on both engines: a completed conversation's summary is the model's answer and its graph the model's
JSON, each call's tokens recorded under the agent; an offline agent keeps the heuristics and calls nothing; an
answer that is not the JSON asked for falls back to the heuristic; a failing model fails the event (retried)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from agentfy.events.consolidation import handlers
from agentfy.events.consolidation.episodic import publish_session_completed
from agentfy.events.consolidation.summariser import ExtractiveSummariser
from agentfy.events.worker import Worker
from agentfy.runtime.memory_models import AgentModels, ModelCalls, ModelExtractor, ModelSummariser, parse_extraction
from agentfy.runtime.model import Usage
from agentfy.runtime.providers import Providers
from agentfy.store import schema
from agentfy.store.db import Database
from agentfy.store.repos import credentials, knowledge, memory, sessions
from agentfy.store.repos.credentials import CredentialCipher
from tests.helpers.fake_openai import Completion, Failure, FakeOpenAI
from tests.helpers.tenants import Tenant, make_tenant

GRAPH = ('{"entities": [{"name": "Ada Lovelace", "type": "Person"}, {"name": "Analytical Engines", "type": '
         '"company"}, {"name": ""}], "relations": [{"source": 0, "target": 1, "relation": "works_at"}, '
         '{"source": 0, "target": 2, "relation": "dangling"}]}')


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def cipher() -> CredentialCipher:
    return CredentialCipher(os.urandom(32))


@pytest.fixture
def calls(cipher: CredentialCipher) -> Iterator[ModelCalls]:
    made = ModelCalls(Providers(cipher=cipher))
    try:
        yield made
    finally:
        made.close()


def _tenant(db: Database, cipher: CredentialCipher, fake: FakeOpenAI | None) -> Tenant:
    config = {} if fake is None else {"model": {"provider": "openai", "base_url": fake.url, "model": "gpt-memory",
                                                "credential": "llm"}}
    tenant = make_tenant(db, "acme", agent_key="bot", config=config)
    with db.transaction() as tx:
        credentials.put_credential(tx, tenant.scope, cipher, "llm", b"sk-secret")
    return tenant


def _complete_a_conversation(db: Database, tenant: Tenant) -> str:
    assert tenant.bot is not None
    with db.transaction() as tx:
        session = sessions.open_session(tx, tenant.scope, "chat-1", tenant.bot.id, "1001")
        sessions.append_message(tx, tenant.scope, session.session_key, "user", "Ada Lovelace joins Analytical "
                                "Engines on Monday.", sender_id="1001")
        sessions.append_message(tx, tenant.scope, session.session_key, "assistant", "Noted, welcome Ada.")
        sessions.complete_session(tx, tenant.scope, session.session_key)
        publish_session_completed(tx, tenant.scope, session.session_key)
    return session.session_key


def _consolidate(db: Database, calls: ModelCalls) -> Worker:
    models = AgentModels(db, calls)
    worker = Worker(db, handlers(summariser=ModelSummariser(models), extractor=ModelExtractor(models)))
    while worker.run_once():
        pass
    return worker


def test_the_agent_s_model_writes_the_summary_and_the_graph_and_its_tokens_are_recorded(
        db: Database, cipher: CredentialCipher, fake: FakeOpenAI, calls: ModelCalls) -> None:
    acme = _tenant(db, cipher, fake)
    assert acme.bot is not None
    fake.script(Completion(text="Ada Lovelace joins Analytical Engines on Monday.", usage=Usage(120, 12)),
                Completion(text=GRAPH, usage=Usage(90, 40)))
    session_key = _complete_a_conversation(db, acme)
    _consolidate(db, calls)

    summary_request, graph_request = (recorded.body for recorded in fake.requests)
    assert summary_request["model"] == "gpt-memory"
    assert "user: Ada Lovelace joins Analytical Engines on Monday." in summary_request["messages"][-1]["content"]
    assert fake.requests[0].headers["authorization"] == "Bearer sk-secret"  # the organization's credential
    assert "JSON only" in graph_request["messages"][0]["content"]
    with db.transaction(write=False) as tx:
        (summary,) = memory.list_unpromoted_summaries(tx, acme.scope, acme.bot.id, "1001")
        entities = knowledge.list_entities(tx, acme.scope, acme.bot.id, user_id="1001")
        relations = knowledge.list_relations(tx, acme.scope, acme.bot.id, user_id="1001")
        table = schema.usage_snapshots
        used = tx.all(sa.select(table.c.provider, table.c.input_tokens, table.c.agent_id, table.c.run_id,
                                table.c.session_key).where(table.c.tenant_id == acme.scope.tenant_id))
    assert summary.summary == "Ada Lovelace joins Analytical Engines on Monday."
    assert sorted((e.name, e.entity_type) for e in entities) == [("Ada Lovelace", "person"),
                                                                  ("Analytical Engines", "company")]
    assert [r.relation for r in relations] == ["works_at"]  # the dangling one is dropped
    assert sorted((provider, tokens, agent, run_id.split("-")[0], key)
                  for provider, tokens, agent, run_id, key in used) == [("openai", 90, acme.bot.id, "semantic", None),
                                     ("openai", 120, acme.bot.id, "episodic", session_key)]


def test_an_offline_agent_keeps_the_heuristics_and_calls_no_model(
        db: Database, cipher: CredentialCipher, fake: FakeOpenAI, calls: ModelCalls) -> None:
    acme = _tenant(db, cipher, None)
    assert acme.bot is not None
    _complete_a_conversation(db, acme)
    _consolidate(db, calls)
    assert fake.requests == []
    with db.transaction(write=False) as tx:
        (summary,) = memory.list_unpromoted_summaries(tx, acme.scope, acme.bot.id, "1001")
        messages = sessions.list_messages(tx, acme.scope, summary.session_key)
        session = sessions.get_session(tx, acme.scope, summary.session_key)
        names = {e.name for e in knowledge.list_entities(tx, acme.scope, acme.bot.id)}
    assert summary.summary == ExtractiveSummariser().summarise(session, messages)
    assert "Ada Lovelace" in names


def test_an_answer_that_is_not_the_json_asked_for_falls_back_to_the_heuristic(
        db: Database, cipher: CredentialCipher, fake: FakeOpenAI, calls: ModelCalls) -> None:
    acme = _tenant(db, cipher, fake)
    assert acme.bot is not None
    fake.script(Completion(text="Ada joins Analytical Engines."), Completion(text="Sure! Here are the entities: Ada"))
    _complete_a_conversation(db, acme)
    _consolidate(db, calls)
    with db.transaction(write=False) as tx:
        names = {e.name for e in knowledge.list_entities(tx, acme.scope, acme.bot.id)}
    assert names == {"Ada", "Analytical Engines"}  # the capitalised phrases of the summary


def test_a_failing_model_fails_the_event_so_it_is_retried_and_nothing_is_written(
        db: Database, cipher: CredentialCipher, fake: FakeOpenAI, calls: ModelCalls) -> None:
    acme = _tenant(db, cipher, fake)
    assert acme.bot is not None
    fake.default = Failure(503, "overloaded")
    calls.providers.policy = calls.providers.policy.__class__(attempts=1)
    _complete_a_conversation(db, acme)
    _consolidate(db, calls)
    assert len(fake.requests) >= 1
    with db.transaction(write=False) as tx:
        assert memory.list_unpromoted_summaries(tx, acme.scope, acme.bot.id, "1001") == []


def test_the_extraction_parser_keeps_only_what_the_graph_can_hold() -> None:
    parsed = parse_extraction("```json\n" + GRAPH + "\n```", max_entities=50, max_relations=10)
    assert parsed is not None and [e.name for e in parsed.entities] == ["Ada Lovelace", "Analytical Engines"]
    assert parse_extraction("not json", max_entities=5, max_relations=5) is None
    assert parse_extraction('{"entities": "Ada"}', max_entities=5, max_relations=5) is None
    assert parse_extraction('[1, 2]', max_entities=5, max_relations=5) is None
    capped = parse_extraction('{"entities": [{"name": "A"}, {"name": "B"}, {"name": "C"}]}', max_entities=2,
                              max_relations=5)
    assert capped is not None and [e.name for e in capped.entities] == ["A", "B"]
    hostile = parse_extraction('{"entities": [{"name": "bad\\u0000name"}, {"name": 7}, {"name": "ok"}], '
                               '"relations": [{"source": true, "target": 0, "relation": "x"}]}', max_entities=5,
                               max_relations=5)
    assert hostile is not None and [e.name for e in hostile.entities] == ["ok"] and hostile.relations == ()
