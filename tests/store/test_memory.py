"""Memory: idempotent episodic summaries, the fail-fast document batch upsert, chunks (both engines)."""

from __future__ import annotations

import pytest

from agentfy.identity import InvalidIdError
from agentfy.ids import format_id, is_canonical_id
from agentfy.store.db import Database
from agentfy.store.errors import ConflictError, InvalidInputError, NotFoundError, StoreError
from agentfy.store.repos import memory
from agentfy.store.repos.memory import MemoryDocumentInput as Doc
from tests.helpers.tenants import make_tenant
from tests.store.helpers import count, new_agent

BAD_AGENT_IDS = ["goctech-leader", "00000000-0000-0000-0000-000000000000", "team-calm-rivers-k8m4p2d7n9x3", ""]


def _summary(db: Database, scope, agent_id: str, session_key: str = "s-1", n: int = 0, text: str = "talked",
             user_id: str = "u1"):
    with db.transaction() as tx:
        return memory.create_episodic_summary(tx, scope, agent_id=agent_id, user_id=user_id,
                                              session_key=session_key, compaction_count=n, summary=text)


# -- episodic summaries -------------------------------------------------------------------------------------
def test_summary_is_idempotent_per_tenant_session_and_compaction(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    bot = new_agent(db, acme, "bot")
    first, created = _summary(db, acme, bot.id, text="first version")
    assert created and is_canonical_id(first.id, "episodic-summary") and first.agent_id == bot.id
    again, created_again = _summary(db, acme, bot.id, text="regenerated on redelivery")
    assert not created_again and again == first and again.summary == "first version"
    other, created_other = _summary(db, acme, bot.id, n=1)
    assert created_other and other.id != first.id
    assert count(db, "episodic_summaries") == 2


def test_same_session_key_in_two_tenants_is_two_summaries(db: Database) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    a, b = new_agent(db, acme, "bot"), new_agent(db, globex, "bot")
    assert _summary(db, acme, a.id)[1] and _summary(db, globex, b.id)[1]
    assert count(db, "episodic_summaries") == 2


def test_summary_key_reused_for_another_agent_is_a_conflict(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    a, b = new_agent(db, acme, "a"), new_agent(db, acme, "b")
    _summary(db, acme, a.id)
    with pytest.raises(ConflictError, match="session 's-1' compaction 0 already has a summary"):
        _summary(db, acme, b.id)
    assert count(db, "episodic_summaries") == 1


@pytest.mark.parametrize("bad", BAD_AGENT_IDS)
def test_summary_refuses_a_non_id_agent_before_sql(db: Database, bad: str) -> None:
    acme = make_tenant(db, "acme").scope
    with pytest.raises(InvalidIdError) as caught:
        _summary(db, acme, bad)
    assert caught.value.field == "agent_id" and caught.value.value == bad
    assert count(db, "episodic_summaries") == 0


def test_summary_for_another_tenants_agent_is_not_found(db: Database) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    theirs = new_agent(db, globex, "bot")
    for ref in (theirs.id, format_id("agent")):
        with pytest.raises(NotFoundError, match=f"agent '{ref}' not found"):
            _summary(db, acme, ref)
    with db.transaction() as tx, pytest.raises(NotFoundError):
        memory.list_unpromoted_summaries(tx, acme, theirs.id, "u1")
    assert count(db, "episodic_summaries") == 0


@pytest.mark.parametrize(("field", "kwargs"), [("compaction_count", {"compaction_count": -1}),
                                               ("compaction_count", {"compaction_count": True}),
                                               ("session_key", {"session_key": ""}),
                                               ("summary", {"summary": ""}),
                                               ("summary", {"summary": "a\x00b"})])
def test_summary_fields_are_checked(db: Database, field: str, kwargs: dict[str, object]) -> None:
    acme = make_tenant(db, "acme").scope
    bot = new_agent(db, acme, "bot")
    values: dict[str, object] = {"agent_id": bot.id, "user_id": "u", "session_key": "s", "compaction_count": 0,
                                 "summary": "x", **kwargs}
    with pytest.raises(InvalidInputError) as caught, db.transaction() as tx:
        memory.create_episodic_summary(tx, acme, **values)  # type: ignore[arg-type]
    assert caught.value.field == field


def test_unpromoted_summaries_and_mark_promoted(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    bot = new_agent(db, acme, "bot")
    s0, _ = _summary(db, acme, bot.id, n=0)
    s1, _ = _summary(db, acme, bot.id, n=1)
    s2, _ = _summary(db, acme, bot.id, n=2)
    _summary(db, acme, bot.id, session_key="other-user", user_id="u2")
    with db.transaction() as tx:
        assert [s.id for s in memory.list_unpromoted_summaries(tx, acme, bot.id, "u1")] == [s0.id, s1.id, s2.id]
        assert memory.mark_promoted(tx, acme, [s0.id, s2.id]) == 2
        assert memory.mark_promoted(tx, acme, [s0.id]) == 0  # already promoted: keeps its time
        assert memory.mark_promoted(tx, acme, []) == 0
        assert [s.id for s in memory.list_unpromoted_summaries(tx, acme, bot.id, "u1")] == [s1.id]


def test_summaries_are_listed_by_scope_session_and_compaction_of_the_tenants_agent_only(db: Database) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    bot, theirs = new_agent(db, acme, "bot"), new_agent(db, globex, "bot")
    later, _ = _summary(db, acme, bot.id, "s-b", 1, user_id="u1")
    earlier, _ = _summary(db, acme, bot.id, "s-b", 0, user_id="u1")
    own, _ = _summary(db, acme, bot.id, "cron", 0, user_id="")
    _summary(db, globex, theirs.id, "s-g", 0, user_id="u1")
    with db.transaction() as tx:
        memory.mark_promoted(tx, acme, [earlier.id])
        listed = memory.list_episodic_summaries(tx, acme, bot.id)
        assert [s.id for s in listed] == [own.id, earlier.id, later.id] and listed[1].promoted_at is not None
        assert [s.id for s in memory.list_episodic_summaries(tx, acme, bot.id, user_id="u1", limit=1)] == [earlier.id]
        assert [s.id for s in memory.list_episodic_summaries(tx, acme, bot.id, user_id="u1", limit=5,
                                                             after=("u1", "s-b", 0))] == [later.id]
        with pytest.raises(NotFoundError):
            memory.list_episodic_summaries(tx, acme, theirs.id)
        with pytest.raises(InvalidInputError) as refused:
            memory.list_episodic_summaries(tx, acme, bot.id, user_id="a\x00b")
        assert refused.value.field == "user_id"


def test_mark_promoted_is_all_or_nothing_and_tenant_scoped(db: Database) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    mine, _ = _summary(db, acme, new_agent(db, acme, "bot").id)
    theirs, _ = _summary(db, globex, new_agent(db, globex, "bot").id)
    with pytest.raises(NotFoundError, match=rf"ids\[1\]: episodic summary '{theirs.id}' not found"), \
            db.transaction() as tx:
        memory.mark_promoted(tx, acme, [mine.id, theirs.id])
    with pytest.raises(InvalidIdError, match=r"invalid ids\[1\] 'goctech-leader'"), db.transaction() as tx:
        memory.mark_promoted(tx, acme, [mine.id, "goctech-leader"])
    with db.transaction() as tx:
        assert memory.list_unpromoted_summaries(tx, acme, mine.agent_id, "u1") == [mine]
        assert len(memory.list_unpromoted_summaries(tx, globex, theirs.agent_id, "u1")) == 1


# -- memory documents ---------------------------------------------------------------------------------------
def test_upsert_inserts_then_updates_in_place(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    bot = new_agent(db, acme, "bot")
    with db.transaction() as tx:
        first = memory.upsert_memory_documents(tx, acme, bot.id, [
            Doc(path="MEMORY.md", content="v1", metadata={"kind": "root"}),
            Doc(user_id="group:telegram:-100", path="MEMORY.md", content="group v1"),
        ])
    assert len(first) == 2 and all(is_canonical_id(i, "memory-document") for i in first)
    with db.transaction() as tx:
        before = memory.get_memory_document(tx, acme, first[0])
        second = memory.upsert_memory_documents(tx, acme, bot.id, [
            Doc(path="notes/today.md", content="new"),
            Doc(path="MEMORY.md", content="v2"),  # metadata None: kept
        ])
    assert second[1] == first[0] and second[0] not in first
    with db.transaction() as tx:
        after = memory.get_memory_document(tx, acme, first[0])
        group = memory.list_memory_documents(tx, acme, bot.id, user_id="group:telegram:-100")
        everything = memory.list_memory_documents(tx, acme, bot.id)
    assert after.content == "v2" and after.metadata == {"kind": "root"}
    assert after.created_at == before.created_at and after.updated_at >= before.updated_at
    assert [d.content for d in group] == ["group v1"]
    assert [(d.user_id, d.path) for d in everything] == [("", "MEMORY.md"), ("", "notes/today.md"),
                                                         ("group:telegram:-100", "MEMORY.md")]
    assert count(db, "memory_documents") == 3


def test_upsert_matches_each_person_and_path_exactly_not_their_cross_product(db: Database) -> None:
    """The existing-documents look-up narrows by the batch's people and paths separately (so the engine can
    use the (agent, person, path) index); (a, y) existing must not turn a batch's (a, x) into an update."""
    acme = make_tenant(db, "acme").scope
    bot = new_agent(db, acme, "bot")
    with db.transaction() as tx:
        old = memory.upsert_memory_documents(tx, acme, bot.id, [Doc(user_id="a", path="y", content="a-y"),
                                                                 Doc(user_id="b", path="x", content="b-x")])
        new = memory.upsert_memory_documents(tx, acme, bot.id, [Doc(user_id="a", path="x", content="a-x"),
                                                                 Doc(user_id="b", path="y", content="b-y")])
        everything = memory.list_memory_documents(tx, acme, bot.id)
    assert not set(old) & set(new)
    assert [(d.user_id, d.path, d.content) for d in everything] == [
        ("a", "x", "a-x"), ("a", "y", "a-y"), ("b", "x", "b-x"), ("b", "y", "b-y")]


def test_upsert_replaces_metadata_when_given(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    bot = new_agent(db, acme, "bot")
    with db.transaction() as tx:
        (doc_id,) = memory.upsert_memory_documents(tx, acme, bot.id, [Doc(path="a", content="x", metadata={"a": 1})])
        memory.upsert_memory_documents(tx, acme, bot.id, [Doc(path="a", content="y", metadata={"b": 2})])
        assert memory.get_memory_document(tx, acme, doc_id).metadata == {"b": 2}


BAD_ROWS = {
    "path empty": (Doc(path="", content="x"), "path", "''"),
    "path with NUL": (Doc(path="a\x00b", content="x"), "path", "'a\\x00b'"),
    "content not a string": (Doc(path="p", content=b"bytes"), "content", "b'bytes'"),  # type: ignore[arg-type]
    "user_id not a string": (Doc(user_id=None, path="p", content="x"), "user_id", "None"),  # type: ignore[arg-type]
    "duplicate path": (Doc(path="good-0", content="again"), "path", "'good-0'"),
    "metadata not an object": (Doc(path="p", content="x", metadata=[1]), "metadata", ""),  # type: ignore[arg-type]
}


@pytest.mark.parametrize("position", ["first", "middle", "last"])
@pytest.mark.parametrize("case", list(BAD_ROWS))
def test_one_bad_document_fails_the_whole_batch_and_writes_nothing(db: Database, case: str, position: str) -> None:
    acme = make_tenant(db, "acme").scope
    bot = new_agent(db, acme, "bot")
    with db.transaction() as tx:
        (existing,) = memory.upsert_memory_documents(tx, acme, bot.id, [Doc(path="existing", content="old")])
    bad, field, shown = BAD_ROWS[case]
    good = [Doc(path=f"good-{i}", content="x") for i in range(4)] + [Doc(path="existing", content="new")]
    index = {"first": 0, "middle": 2, "last": len(good)}[position]
    if case == "duplicate path" and position == "first":
        index = 1  # a duplicate needs its original before it
    batch = [*good[:index], bad, *good[index:]]
    with pytest.raises(StoreError) as caught, db.transaction() as tx:
        memory.upsert_memory_documents(tx, acme, bot.id, batch)
    assert getattr(caught.value, "field", None) == f"documents[{index}].{field}"
    assert f"documents[{index}].{field}" in str(caught.value) and shown in str(caught.value)
    assert count(db, "memory_documents") == 1
    with db.transaction() as tx:
        assert memory.get_memory_document(tx, acme, existing).content == "old"


@pytest.mark.parametrize("bad", BAD_AGENT_IDS)
def test_upsert_refuses_a_non_id_agent_and_writes_nothing(db: Database, bad: str) -> None:
    acme = make_tenant(db, "acme").scope
    with pytest.raises(InvalidIdError) as caught, db.transaction() as tx:
        memory.upsert_memory_documents(tx, acme, bad, [Doc(path="p", content="x")])
    assert caught.value.field == "agent_id" and repr(bad) in str(caught.value)
    assert count(db, "memory_documents") == 0


def test_upsert_for_another_tenants_agent_is_not_found_and_writes_nothing(db: Database) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    theirs = new_agent(db, globex, "bot")
    with pytest.raises(NotFoundError, match=f"agent '{theirs.id}' not found"), db.transaction() as tx:
        memory.upsert_memory_documents(tx, acme, theirs.id, [Doc(path="p", content="x")])
    assert count(db, "memory_documents") == 0


def test_documents_of_another_tenant_are_not_found(db: Database) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    theirs = new_agent(db, globex, "bot")
    with db.transaction() as tx:
        (doc_id,) = memory.upsert_memory_documents(tx, globex, theirs.id, [Doc(path="secret", content="x")])
        memory.replace_chunks(tx, globex, doc_id, ["c0"])
    missing = format_id("memory-document")
    with db.transaction() as tx:
        for ref in (doc_id, missing):
            for call in (memory.get_memory_document, memory.delete_memory_document, memory.list_chunks):
                with pytest.raises(NotFoundError, match=f"memory document '{ref}' not found"):
                    call(tx, acme, ref)
            with pytest.raises(NotFoundError):
                memory.replace_chunks(tx, acme, ref, ["mine now"])
        with pytest.raises(NotFoundError):
            memory.list_memory_documents(tx, acme, theirs.id)
        with pytest.raises(InvalidIdError):
            memory.get_memory_document(tx, acme, "vault-document-calm-rivers-k8m4p2d7n9x3")
    with db.transaction() as tx:
        assert [c.content for c in memory.list_chunks(tx, globex, doc_id)] == ["c0"]


def test_chunks_are_replaced_and_a_bad_chunk_keeps_the_old_ones(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    bot = new_agent(db, acme, "bot")
    with db.transaction() as tx:
        (doc_id,) = memory.upsert_memory_documents(tx, acme, bot.id, [Doc(path="a", content="abc")])
        first = memory.replace_chunks(tx, acme, doc_id, ["a", "b", "c"])
        second = memory.replace_chunks(tx, acme, doc_id, ["ab", "c"])
    assert len(first) == 3 and len(second) == 2 and not set(first) & set(second)
    with pytest.raises(InvalidInputError, match=r"invalid chunks\[1\] ''"), db.transaction() as tx:
        memory.replace_chunks(tx, acme, doc_id, ["ok", ""])
    with db.transaction() as tx:
        chunks = memory.list_chunks(tx, acme, doc_id)
        assert [(c.seq, c.content, c.agent_id) for c in chunks] == [(0, "ab", bot.id), (1, "c", bot.id)]
        assert memory.replace_chunks(tx, acme, doc_id, []) == []
        memory.replace_chunks(tx, acme, doc_id, ["x"])
        memory.delete_memory_document(tx, acme, doc_id)
    assert count(db, "memory_chunks") == 0 and count(db, "memory_documents") == 0


def test_empty_batch_writes_nothing(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    bot = new_agent(db, acme, "bot")
    with db.transaction() as tx:
        assert memory.upsert_memory_documents(tx, acme, bot.id, []) == []
