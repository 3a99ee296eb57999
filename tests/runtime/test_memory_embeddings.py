"""Memory by meaning through the real runtime, event workers and a local OpenAI-compatible ``/embeddings``, on
both engines: a remembered fact is embedded after its write and found by a query sharing no word with it —
by ``search_memory`` and by the run's recall — only for an agent with embeddings, only in its SCOPE; the
embeddings' tokens are recorded; with the endpoint down the fact is kept, text search still answers and the
embedding is retried; a catch-up embeds memory written before the configuration; the configuration is
validated like the model's."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from agentfy.agents.prompt import split_system_prompt
from agentfy.agents.router import Router
from agentfy.events import outbox
from agentfy.events.consolidation import handlers
from agentfy.events.consolidation.episodic import publish_session_completed
from agentfy.events.embedding import MEMORY_EMBED, publish_embedding_due
from agentfy.events.settings import BusSettings
from agentfy.events.worker import Worker
from agentfy.identity.context import RequestContext
from agentfy.permissions.channels import telegram_context
from agentfy.runtime import recall
from agentfy.runtime.embeddings import EmbeddingsSettings
from agentfy.runtime.memory_embedder import MemoryEmbedder
from agentfy.runtime.memory_models import ModelCalls
from agentfy.runtime.offline import OfflineProvider
from agentfy.runtime.providers import ModelConfigError, Providers
from agentfy.runtime.runner import Runtime
from agentfy.store import schema
from agentfy.store.db import Database
from agentfy.store.repos import agents, credentials, memory, sessions
from agentfy.store.repos.credentials import CredentialCipher
from agentfy.store.repos.memory import MemoryDocumentInput
from tests.helpers.fake_openai import FakeOpenAI
from tests.helpers.tenants import Tenant, make_tenant
from tests.runtime.helpers import inbound, run

MODEL = "embed-small"
FAST = BusSettings(backoff_base_seconds=0.0, backoff_max_seconds=0.0, backoff_jitter=0.0, max_attempts=3)


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        server.meanings = {"automobile": "car", "vehicle": "car"}
        yield server


@pytest.fixture
def cipher() -> CredentialCipher:
    return CredentialCipher(os.urandom(32))


@pytest.fixture
def calls(cipher: CredentialCipher) -> Iterator[ModelCalls]:
    made = ModelCalls(Providers(cipher=cipher))
    made.providers.policy = made.providers.policy.__class__(attempts=1)
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def model() -> OfflineProvider:
    offline = OfflineProvider()
    offline.keep_requests = True
    return offline


@pytest.fixture
def runtime(db: Database, tmp_path: Path, cipher: CredentialCipher, model: OfflineProvider) -> Runtime:
    return Runtime(db, Router(db), workspace_root=tmp_path, providers=Providers(offline=model, cipher=cipher))


def _config(fake: FakeOpenAI) -> dict[str, Any]:
    # A hashed bag of words is less sure of itself than a real model: a lower bar for a hit by meaning.
    return {"embeddings": {"base_url": fake.url, "model": MODEL, "credential": "emb", "min_similarity": 0.15}}


def _tenant(db: Database, cipher: CredentialCipher, slug: str, config: dict[str, Any] | None) -> Tenant:
    tenant = make_tenant(db, slug, agent_key="bot", config=config)
    with db.transaction() as tx:
        credentials.put_credential(tx, tenant.scope, cipher, "emb", b"sk-embed")
    return tenant


def _dm(org: Tenant, sender: int) -> RequestContext:
    return telegram_context(sender, sender, is_group=False, tenant_id=org.id)


def _say(runtime: Runtime, org: Tenant, sender: int, text: str) -> str:
    return run(runtime(inbound(org, _dm(org, sender), text))).text or ""


def _embed(db: Database, calls: ModelCalls, *, batch: int = 32) -> Worker:
    worker = Worker(db, {MEMORY_EMBED: MemoryEmbedder(calls, bus=FAST, batch=batch)}, settings=FAST)
    while worker.run_once():
        pass
    return worker


def _events(db: Database) -> list[tuple[str, int, str | None]]:
    table = schema.event_outbox
    with db.transaction(write=False) as tx:
        rows = tx.all(sa.select(table.c.status, table.c.attempts, table.c.last_error)
                      .where(table.c.type == MEMORY_EMBED).order_by(table.c.occurred_at))
    return [(row[0], int(row[1]), row[2]) for row in rows]


def test_a_fact_is_found_by_meaning_only_with_embeddings_and_only_in_its_scope(
        db: Database, runtime: Runtime, model: OfflineProvider, fake: FakeOpenAI, calls: ModelCalls,
        cipher: CredentialCipher) -> None:
    acme = _tenant(db, cipher, "acme", _config(fake))
    globex = _tenant(db, cipher, "globex", None)  # no embeddings: today's text search exactly
    for org in (acme, globex):
        assert "remembered" in _say(runtime, org, 1001, "/tool remember fact='my car is parked on level three'")
    # The run embedded its message for recall (before its transaction); the fact is not embedded in the write.
    assert [body["input"] for body in fake.embedding_requests] == [
        ["/tool remember fact='my car is parked on level three'"]]
    _embed(db, calls)
    assert [body["input"] for body in fake.embedding_requests[1:]] == [[
        next(iter(_documents(db, acme, "1001"))).path + "\nmy car is parked on level three"]]
    assert _events(db) == [("done", 1, None)]  # only the agent with embeddings queued one

    found = _say(runtime, acme, 1001, "/tool search_memory query=automobile")
    assert "level three" in found
    assert "level three" not in _say(runtime, acme, 2002, "/tool search_memory query=automobile")  # another DM
    assert "no memory matches" in _say(runtime, globex, 1001, "/tool search_memory query=automobile")
    assert "level three" in _say(runtime, globex, 1001, "/tool search_memory query=car")

    _say(runtime, acme, 1001, "Where did I leave the automobile yesterday?")  # recall: words and meaning
    shown = split_system_prompt(model.requests[-1].system_prompt)[1]
    assert recall.HEADING in shown and "level three" in shown
    _say(runtime, globex, 1001, "Where did I leave the automobile yesterday?")
    assert "level three" not in model.requests[-1].system_prompt

    table = schema.usage_snapshots
    with db.transaction(write=False) as tx:
        used = tx.all(sa.select(table.c.model, table.c.input_tokens, table.c.agent_id, table.c.tenant_id)
                      .where(table.c.run_id.like("embedding-%")))
    # Every embeddings call — the fact's, and each query's — is recorded under the agent that made it.
    assert len(used) == len(fake.embedding_requests) > 1
    assert {(m, tokens > 0, agent, tenant) for m, tokens, agent, tenant in used} == {
        (MODEL, True, acme.bot.id, acme.scope.tenant_id)}  # type: ignore[union-attr]
    assert fake.requests == []  # no chat call: the agent's chat model is the offline one


def _documents(db: Database, org: Tenant, user_id: str) -> list[memory.MemoryDocument]:
    assert org.bot is not None
    with db.transaction(write=False) as tx:
        return memory.list_memory_documents(tx, org.scope, org.bot.id, user_id=user_id)


def test_with_the_endpoint_down_the_fact_is_kept_text_search_answers_and_the_embedding_is_retried(
        db: Database, runtime: Runtime, fake: FakeOpenAI, calls: ModelCalls, cipher: CredentialCipher) -> None:
    acme = _tenant(db, cipher, "acme", _config(fake))
    fake.embeddings_down = True
    assert "remembered" in _say(runtime, acme, 1001, "/tool remember fact='my car is parked on level three'")
    assert [d.content for d in _documents(db, acme, "1001")] == ["my car is parked on level three"]
    worker = Worker(db, {MEMORY_EMBED: MemoryEmbedder(calls, bus=FAST)}, settings=FAST)
    worker.run_once()
    [(status, attempts, error)] = _events(db)
    assert (status, attempts) == ("pending", 1) and error is not None and "HTTP 503" in error
    assert "sk-embed" not in error  # never the key
    assert "level three" in _say(runtime, acme, 1001, "/tool search_memory query=car")  # text still answers
    assert "no memory matches" in _say(runtime, acme, 1001, "/tool search_memory query=automobile")

    fake.embeddings_down = False
    _embed(db, calls)
    assert _events(db) == [("done", 2, error)]
    assert "level three" in _say(runtime, acme, 1001, "/tool search_memory query=automobile")


def test_a_catch_up_embeds_memory_written_before_the_configuration_a_batch_at_a_time(
        db: Database, runtime: Runtime, fake: FakeOpenAI, calls: ModelCalls, cipher: CredentialCipher) -> None:
    acme = _tenant(db, cipher, "acme", None)
    assert acme.bot is not None
    with db.transaction() as tx:
        memory.upsert_memory_documents(tx, acme.scope, acme.bot.id, [
            MemoryDocumentInput(user_id="1001", path=f"n{i}.md", content=f"note {i} about the vehicle")
            for i in range(3)])
        assert publish_embedding_due(tx, acme.scope, acme.bot.id, catch_up=True) is False  # not configured
        updated = agents.update_agent(tx, acme.scope, acme.bot.id, config=_config(fake))
        assert publish_embedding_due(tx, acme.scope, updated, catch_up=True) is True
    _embed(db, calls, batch=2)
    assert [len(body["input"]) for body in fake.embedding_requests] == [2, 1]
    assert [status for status, _, _ in _events(db)] == ["done", "done"]  # the full batch queued the next
    answer = _say(runtime, acme, 1001, "/tool search_memory query=automobile")
    assert all(f"n{i}.md" in answer for i in range(3))


def test_after_a_change_of_model_only_the_new_model_s_vectors_are_compared(
        db: Database, runtime: Runtime, fake: FakeOpenAI, calls: ModelCalls, cipher: CredentialCipher) -> None:
    acme = _tenant(db, cipher, "acme", _config(fake))
    assert acme.bot is not None
    _say(runtime, acme, 1001, "/tool remember fact='my car is parked on level three'")
    _embed(db, calls)
    config = _config(fake)
    config["embeddings"]["model"] = "embed-large"  # the fake's vectors of another model are unrelated
    with db.transaction() as tx:
        agents.update_agent(tx, acme.scope, acme.bot.id, config=config)
    answer = _say(runtime, acme, 1001, "/tool search_memory query=automobile")
    assert fake.embedding_requests[-1]["model"] == "embed-large"  # the query is embedded by the new model
    assert "no memory matches" in answer  # and the old model's vector is not compared with it
    with db.transaction() as tx:
        updated = agents.get_agent(tx, acme.scope, acme.bot.id)
        publish_embedding_due(tx, acme.scope, updated, catch_up=True)  # what PUT …/embeddings queues
    _embed(db, calls)
    assert "level three" in _say(runtime, acme, 1001, "/tool search_memory query=automobile")


def test_a_new_episodic_summary_is_embedded_after_the_consolidation_writes_it(
        db: Database, fake: FakeOpenAI, calls: ModelCalls, cipher: CredentialCipher) -> None:
    acme = _tenant(db, cipher, "acme", _config(fake))
    assert acme.bot is not None
    with db.transaction() as tx:
        session = sessions.open_session(tx, acme.scope, "chat-1", acme.bot.id, "1001")
        sessions.append_message(tx, acme.scope, session.session_key, "user", "I parked the automobile downstairs.",
                                sender_id="1001")
        sessions.complete_session(tx, acme.scope, session.session_key)
        publish_session_completed(tx, acme.scope, session.session_key)
    worker = Worker(db, {**handlers(), MEMORY_EMBED: MemoryEmbedder(calls, bus=FAST)}, settings=FAST)
    while worker.run_once():
        pass
    with db.transaction(write=False) as tx:
        (summary,) = memory.list_unpromoted_summaries(tx, acme.scope, acme.bot.id, "1001")
        kinds = tx.all("SELECT kind, source_id FROM memory_embeddings WHERE tenant_id = :t",
                       {"t": acme.scope.tenant_id})
    assert kinds == [("episodic", summary.id)]


def test_a_credential_that_is_not_stored_dead_letters_the_embedding_and_keeps_the_text(
        db: Database, runtime: Runtime, fake: FakeOpenAI, calls: ModelCalls, cipher: CredentialCipher) -> None:
    config = _config(fake)
    config["embeddings"]["credential"] = "missing"
    acme = _tenant(db, cipher, "acme", config)
    assert "remembered" in _say(runtime, acme, 1001, "/tool remember fact='my car is on level three'")
    _embed(db, calls)
    [(status, _, error)] = _events(db)
    assert status == "dead" and error is not None and "'missing' is not stored" in error
    assert fake.embedding_requests == []
    assert "level three" in _say(runtime, acme, 1001, "/tool search_memory query=car")


@pytest.mark.parametrize(("raw", "field", "message"), [
    ("not an object", "config.embeddings", "must be an object"),
    ({"model": "m"}, "config.embeddings.base_url", "is required"),
    ({"base_url": "ftp://x", "model": "m"}, "config.embeddings.base_url", "is not an http(s) URL"),
    ({"base_url": "http://x/v1"}, "config.embeddings.model", "is required"),
    ({"base_url": "http://x/v1", "model": ""}, "config.embeddings.model", "must be a non-empty string"),
    ({"base_url": "http://x/v1", "model": "m", "credential": "Not A Slug"}, "config.embeddings.credential",
     "Not A Slug"),
    ({"base_url": "http://x/v1", "model": "m", "dimensions": 0}, "config.embeddings.dimensions", "from 1 to"),
    ({"base_url": "http://x/v1", "model": "m", "dimensions": True}, "config.embeddings.dimensions", "from 1 to"),
    ({"base_url": "http://x/v1", "model": "m", "min_similarity": 2}, "config.embeddings.min_similarity", "0 to 1"),
    ({"base_url": "http://x/v1", "model": "m", "provider": "openai"}, "config.embeddings.provider",
     "is not an embeddings setting"),
])
def test_a_configuration_that_cannot_be_used_is_refused_naming_the_field(raw: object, field: str,
                                                                         message: str) -> None:
    with pytest.raises(ModelConfigError, match=message.replace("(", r"\(").replace(")", r"\)")) as caught:
        EmbeddingsSettings.parse(raw)
    assert caught.value.field == field and caught.value.expected


def test_a_configuration_reads_back_as_it_was_written() -> None:
    settings = EmbeddingsSettings.parse({"base_url": "https://api.example.com/v1/", "model": "m", "dimensions": 64})
    assert settings.base_url == "https://api.example.com/v1" and settings.dimensions == 64
    assert EmbeddingsSettings.parse(settings.as_config()) == settings


def test_the_outbox_is_untouched_for_writes_of_an_agent_without_embeddings(db: Database) -> None:
    acme = make_tenant(db, "acme", agent_key="bot")
    assert acme.bot is not None
    with db.transaction() as tx:
        assert publish_embedding_due(tx, acme.scope, acme.bot, ["memory-document-x"]) is False
        assert outbox.claim is not None  # the module is importable; nothing was published
    assert _events(db) == []
