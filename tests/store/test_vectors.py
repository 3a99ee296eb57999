"""Memory vectors and the hybrid search on both engines: a note found by meaning only with a query vector, never
from another SCOPE or tenant, never by another model's vector or an outdated one; what waits for a vector; bad
vectors refused."""

from __future__ import annotations

import numpy as np
import pytest

from agentfy.store.db import Database
from agentfy.store.errors import InvalidInputError
from agentfy.store.repos import memory, search, vectors
from agentfy.store.repos.memory import MemoryDocumentInput as Doc
from agentfy.store.repos.vectors import QueryVector, Source
from tests.helpers.fake_openai import bag_of_words_vector
from tests.helpers.tenants import Tenant, make_tenant

GROUP = "group:telegram:-100123"
MODEL = "embed-small"
MEANINGS = {"automobile": "car", "vehicle": "car", "cars": "car"}


def _bot(org: Tenant) -> str:
    assert org.bot is not None
    return org.bot.id


def _write(db: Database, org: Tenant, *docs: Doc) -> list[str]:
    with db.transaction() as tx:
        return list(memory.upsert_memory_documents(tx, org.scope, _bot(org), list(docs)))


def _vector(text: str, model: str = MODEL) -> bytes:
    return vectors.pack(bag_of_words_vector(text, model=model, meanings=MEANINGS))


def _embed_pending(db: Database, org: Tenant, model: str = MODEL) -> int:
    """What the background embedder does, with the fake's vectors: the pending sources, embedded and stored."""
    with db.transaction(write=False) as tx:
        pending = vectors.pending_sources(tx, org.scope, _bot(org), model=model, limit=100)
    with db.transaction() as tx:
        return vectors.store_vectors(tx, org.scope, _bot(org), model=model,
                                     vectors=[(s, _vector(s.text, model)) for s in pending])


def _query(text: str, model: str = MODEL) -> QueryVector:
    data = _vector(text, model)
    return QueryVector(model, len(data) // 4, data, 0.15)


def _search(db: Database, org: Tenant, query: str, user_id: str = GROUP, vector: QueryVector | None = None,
            **options: object) -> list[search.SearchHit]:
    with db.transaction(write=False) as tx:
        return search.search(tx, org.scope, agent_id=_bot(org), user_id=user_id, query=query, vector=vector,
                             **options)  # type: ignore[arg-type]


def test_a_note_is_found_by_meaning_only_with_a_vector_and_only_in_its_scope_and_tenant(db: Database) -> None:
    acme, globex = make_tenant(db, "acme", agent_key="bot"), make_tenant(db, "globex", agent_key="bot")
    [note] = _write(db, acme, Doc(user_id=GROUP, path="garage.md", content="my car is parked on level three"))
    _write(db, acme, Doc(user_id="1001", path="private.md", content="my car is the red one"),
           Doc(user_id=GROUP, path="lunch.md", content="lunch is at noon on fridays"))
    _write(db, globex, Doc(user_id=GROUP, path="garage.md", content="the car of globex"))
    assert _embed_pending(db, acme) == 3 and _embed_pending(db, globex) == 1
    question = "where is the automobile"  # no word in common with the note
    assert _search(db, acme, question) == []  # text alone: nothing
    hits = _search(db, acme, question, vector=_query(question))
    assert [(hit.kind, hit.id, hit.title) for hit in hits] == [("memory", note, "garage.md")]
    assert "level three" in hits[0].snippet
    # The person's DM scope and the other tenant have car notes too: never seen from the group.
    assert [hit.title for hit in _search(db, acme, question, user_id="1001", vector=_query(question))] == ["private.md"]
    assert [hit.id for hit in _search(db, globex, question, vector=_query(question))] != [note]


def test_a_note_found_both_ways_ranks_first_and_text_hits_stay(db: Database) -> None:
    acme = make_tenant(db, "acme", agent_key="bot")
    [both, words_only, meaning_only] = _write(
        db, acme, Doc(user_id=GROUP, path="a.md", content="vehicle parking rules for the automobile"),
        Doc(user_id=GROUP, path="b.md", content="parking tickets cost money and are a nuisance to everyone here"),
        Doc(user_id=GROUP, path="c.md", content="the car"))
    _embed_pending(db, acme)
    hits = _search(db, acme, "automobile parking", vector=_query("automobile parking"), any_word=True)
    assert hits[0].id == both
    assert {both, words_only, meaning_only} == {hit.id for hit in hits}


def test_vectors_of_another_model_or_dimension_are_never_compared(db: Database) -> None:
    acme = make_tenant(db, "acme", agent_key="bot")
    _write(db, acme, Doc(user_id=GROUP, path="garage.md", content="my car is parked on level three"))
    _embed_pending(db, acme, model="other-model")
    question = "automobile"
    # The other model's vectors would match exactly if they were compared with the same model's query.
    assert [hit.title for hit in _search(db, acme, question, vector=_query(question, "other-model"))] == ["garage.md"]
    assert _search(db, acme, question, vector=_query(question, MODEL)) == []
    short = vectors.pack([1.0, 0.0])  # the right model's name, another dimension
    assert _search(db, acme, question, vector=QueryVector("other-model", 2, short, 0.0)) == []


def test_an_outdated_vector_is_ignored_and_the_document_waits_for_a_new_one(db: Database) -> None:
    acme = make_tenant(db, "acme", agent_key="bot")
    [note] = _write(db, acme, Doc(user_id=GROUP, path="garage.md", content="my car is on level three"))
    _embed_pending(db, acme)
    with db.transaction(write=False) as tx:
        [old] = vectors.pending_of(tx, acme.scope, _bot(acme), model="unembedded", ids=[note])
    _write(db, acme, Doc(user_id=GROUP, path="garage.md", content="we sold it; lunch is at noon"))
    assert _search(db, acme, "automobile", vector=_query("automobile")) == []  # the car vector is outdated
    with db.transaction() as tx:  # a vector of the old text, computed before the update, is not stored
        assert vectors.store_vectors(tx, acme.scope, _bot(acme), model="unembedded",
                                     vectors=[(old, _vector(old.text))]) == 0
        [waiting] = vectors.pending_of(tx, acme.scope, _bot(acme), model=MODEL, ids=[note, "memory-document-x"])
    assert waiting.id == note and "lunch is at noon" in waiting.text
    assert _embed_pending(db, acme) == 1
    assert [hit.id for hit in _search(db, acme, "meal", vector=_query("lunch"))] == [note]


def test_summaries_are_embedded_and_deleting_the_source_deletes_its_vector(db: Database) -> None:
    acme = make_tenant(db, "acme", agent_key="bot")
    with db.transaction() as tx:
        summary, _ = memory.create_episodic_summary(tx, acme.scope, agent_id=_bot(acme), user_id=GROUP,
                                                    session_key="s-1", compaction_count=0,
                                                    summary="they talked about their automobile")
    [note] = _write(db, acme, Doc(user_id=GROUP, path="n.md", content="cars"))
    assert _embed_pending(db, acme) == 2 and _embed_pending(db, acme) == 0
    hits = _search(db, acme, "vehicle", vector=_query("vehicle"), kinds=["episodic"])
    assert [(hit.kind, hit.id) for hit in hits] == [("episodic", summary.id)]
    with db.transaction() as tx:
        memory.delete_memory_document(tx, acme.scope, note)
        assert tx.one("SELECT count(*) FROM memory_embeddings WHERE source_id = :id", {"id": note}) == (0,)


def test_without_a_vector_the_search_is_the_text_search_exactly(db: Database) -> None:
    acme = make_tenant(db, "acme", agent_key="bot")
    _write(db, acme, Doc(user_id=GROUP, path="a.md", content="launch plans"), Doc(user_id=GROUP, path="b.md",
                                                                                  content="launch party"))
    _embed_pending(db, acme)
    plain = _search(db, acme, "launch")
    assert [(h.id, h.score, h.snippet) for h in plain] == [(h.id, h.score, h.snippet) for h in _search(
        db, acme, "launch", vector=None)]
    assert _search(db, acme, "launch", kinds=["vault"], vector=_query("launch")) == []  # no vectors for files


@pytest.mark.parametrize("values", [[], [0.0, 0.0], [1.0, float("nan")], [float("inf")], [1.0] * 9000])
def test_a_vector_that_is_not_one_is_refused(values: list[float]) -> None:
    with pytest.raises(InvalidInputError, match="invalid vector"):
        vectors.pack(values)


def test_a_packed_vector_has_unit_length() -> None:
    packed = np.frombuffer(vectors.pack([3.0, 4.0]), dtype="<f4")
    assert packed.tolist() == pytest.approx([0.6, 0.8])


def test_pending_lists_only_the_agent_s_own_sources(db: Database) -> None:
    acme, globex = make_tenant(db, "acme", agent_key="bot"), make_tenant(db, "globex", agent_key="bot")
    [theirs] = _write(db, globex, Doc(user_id=GROUP, path="x.md", content="secret"))
    with db.transaction(write=False) as tx:
        assert vectors.pending_sources(tx, acme.scope, _bot(acme), model=MODEL, limit=10) == []
        assert vectors.pending_of(tx, acme.scope, _bot(acme), model=MODEL, ids=[theirs]) == []
    with db.transaction() as tx:  # another tenant's source is never written under this tenant
        fake = Source("memory", theirs, GROUP, "2026-01-01T00:00:00.000000Z", "secret")
        assert vectors.store_vectors(tx, acme.scope, _bot(acme), model=MODEL, vectors=[(fake, _vector("x"))]) == 0
