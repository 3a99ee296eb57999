"""Full-text search on both engines: SCOPE and tenant isolation, every kind, the index in step with writes,
ranking, hostile query text and bad input."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentfy.identity import InvalidIdError
from agentfy.store.db import Database
from agentfy.store.errors import InvalidInputError, NotFoundError
from agentfy.store.repos import agents, memory, search, vault
from agentfy.store.repos.memory import MemoryDocumentInput as Doc
from agentfy.store.repos.vault import VaultUpload
from agentfy.store.search_index import INDEXED_CHARS, vault_text
from tests.helpers.tenants import Tenant, make_tenant
from tests.store.helpers import new_agent

GROUP = "group:telegram:-100123"


def _remember(db: Database, org: Tenant, *docs: Doc, agent_id: str | None = None) -> list[str]:
    with db.transaction() as tx:
        return list(memory.upsert_memory_documents(tx, org.scope, agent_id or _bot(org), list(docs)))


def _bot(org: Tenant) -> str:
    assert org.bot is not None
    return org.bot.id


def _search(db: Database, org: Tenant, query: str, user_id: str | None = "", **options: Any) -> list[search.SearchHit]:
    options.setdefault("agent_id", _bot(org))
    with db.transaction(write=False) as tx:
        return search.search(tx, org.scope, user_id=user_id, query=query, **options)


def _titles(hits: list[search.SearchHit]) -> list[tuple[str, str]]:
    return [(hit.kind, hit.title) for hit in hits]


def _upload(db: Database, org: Tenant, path: str, content: bytes, content_type: str = "text/plain") -> str:
    with db.transaction() as tx:
        [document_id] = vault.upload_documents(tx, org.scope, [VaultUpload(agent_id=_bot(org), path=path,
                                                                           content_type=content_type,
                                                                           content=content)])
    return document_id


def test_a_fact_is_found_in_its_scope_only_never_in_another_scope_or_tenant(db: Database) -> None:
    acme, globex = make_tenant(db, "acme", agent_key="bot"), make_tenant(db, "globex", agent_key="bot")
    [in_group] = _remember(db, acme, Doc(user_id=GROUP, path="plans.md", content="The launch is on Friday"))
    _remember(db, acme, Doc(user_id="1001", path="private.md", content="my launch secret"))
    _remember(db, globex, Doc(user_id=GROUP, path="plans.md", content="globex launch on Monday"))
    hits = _search(db, acme, "LAUNCH", user_id=GROUP)
    assert [(h.kind, h.id, h.title) for h in hits] == [("memory", in_group, "plans.md")]
    assert "launch is on Friday" in hits[0].snippet and hits[0].score > 0
    assert _titles(_search(db, acme, "launch", user_id="1001")) == [("memory", "private.md")]
    assert _search(db, acme, "launch", user_id=None) == []  # the agent's own memory holds nothing
    assert _search(db, acme, "secret", user_id=GROUP) == [] and _search(db, acme, "Monday", user_id=GROUP) == []
    assert _titles(_search(db, globex, "launch", user_id=GROUP)) == [("memory", "plans.md")]


def test_another_agent_of_the_tenant_has_its_own_memory(db: Database) -> None:
    acme = make_tenant(db, "acme", agent_key="bot")
    helper = new_agent(db, acme.scope, "helper")
    _remember(db, acme, Doc(path="notes.md", content="helper knows the coffee order"), agent_id=helper.id)
    assert _search(db, acme, "coffee") == []
    assert _titles(_search(db, acme, "coffee", agent_id=helper.id)) == [("memory", "notes.md")]


def test_an_agent_of_another_tenant_is_not_found_rather_than_empty(db: Database) -> None:
    acme, globex = make_tenant(db, "acme", agent_key="bot"), make_tenant(db, "globex", agent_key="bot")
    with pytest.raises(NotFoundError, match="agent"):
        _search(db, acme, "launch", agent_id=_bot(globex))


def test_episodic_summaries_and_vault_text_are_found_with_their_kind(db: Database) -> None:
    acme = make_tenant(db, "acme", agent_key="bot")
    with db.transaction() as tx:
        summary, _ = memory.create_episodic_summary(tx, acme.scope, agent_id=_bot(acme), user_id=GROUP,
                                                    session_key="s-7", compaction_count=2,
                                                    summary="We agreed the budget for the offsite")
        memory.create_episodic_summary(tx, acme.scope, agent_id=_bot(acme), user_id="1001", session_key="s-8",
                                       compaction_count=0, summary="a private budget talk")
    report = _upload(db, acme, "reports/offsite.md", "Offsite budget: 3000 €".encode(), "text/markdown")
    _upload(db, acme, "scan.pdf", b"%PDF budget", "application/pdf")  # not text: never indexed
    _upload(db, acme, "broken.txt", b"budget \xff\xfe", "text/plain")  # not UTF-8: not text either
    hits = _search(db, acme, "budget offsite", user_id=GROUP)
    assert {(h.kind, h.id, h.title) for h in hits} == {("episodic", summary.id, "s-7 #2"),
                                                      ("vault", report, "reports/offsite.md")}
    assert _titles(_search(db, acme, "budget", user_id=GROUP, kinds=["vault"])) == [("vault", "reports/offsite.md")]
    assert _titles(_search(db, acme, "budget", user_id=GROUP, kinds=["episodic"])) == [("episodic", "s-7 #2")]
    # the vault is the agent's, whatever the SCOPE: found from the agent's own memory too
    assert _titles(_search(db, acme, "3000", user_id=None)) == [("vault", "reports/offsite.md")]


def test_the_path_is_searched_word_by_word(db: Database) -> None:
    acme = make_tenant(db, "acme", agent_key="bot")
    _remember(db, acme, Doc(path="people/alice_smith.md", content="likes tea"))
    assert _titles(_search(db, acme, "alice")) == [("memory", "people/alice_smith.md")]


def test_the_index_follows_updates_and_deletes(db: Database) -> None:
    acme = make_tenant(db, "acme", agent_key="bot")
    [document_id] = _remember(db, acme, Doc(path="diet.md", content="eats meat"))
    assert _titles(_search(db, acme, "meat")) == [("memory", "diet.md")]
    assert _remember(db, acme, Doc(path="diet.md", content="vegetarian since May")) == [document_id]
    assert _search(db, acme, "meat") == []
    assert [h.id for h in _search(db, acme, "vegetarian")] == [document_id]
    with db.transaction() as tx:
        memory.delete_memory_document(tx, acme.scope, document_id)
    assert _search(db, acme, "vegetarian") == []
    report = _upload(db, acme, "menu.txt", b"vegetarian menu")
    with db.transaction() as tx:
        vault.delete_vault_document(tx, acme.scope, report)
    assert _search(db, acme, "vegetarian") == []


def test_a_write_that_rolls_back_leaves_the_index_as_it_was(db: Database) -> None:
    acme = make_tenant(db, "acme", agent_key="bot")
    _remember(db, acme, Doc(path="diet.md", content="eats meat"))
    with pytest.raises(RuntimeError), db.transaction() as tx:
        memory.upsert_memory_documents(tx, acme.scope, _bot(acme), [Doc(path="diet.md", content="vegan")])
        raise RuntimeError("abort")
    assert _titles(_search(db, acme, "meat")) == [("memory", "diet.md")] and _search(db, acme, "vegan") == []


def test_deleting_the_agent_removes_its_rows_from_the_index(db: Database) -> None:
    acme = make_tenant(db, "acme", agent_key="bot")
    helper = new_agent(db, acme.scope, "helper")
    _remember(db, acme, Doc(path="a.md", content="kept"), agent_id=helper.id)
    with db.transaction() as tx:
        agents.delete_agent(tx, acme.scope, helper.id)
        if db.dialect == "sqlite":  # PostgreSQL's vectors are columns of the deleted rows themselves
            assert tx.scalar("SELECT count(*) FROM search_entries") == 0
            assert tx.scalar("SELECT count(*) FROM search_fts WHERE search_fts MATCH 'kept'") == 0


def test_ranking_prefers_the_better_match(db: Database) -> None:
    acme = make_tenant(db, "acme", agent_key="bot")
    filler = " ".join(f"word{i}" for i in range(60))
    _remember(db, acme, Doc(path="passing.md", content=f"{filler} espresso {filler}"),
              Doc(path="about.md", content="espresso espresso: the espresso machine and espresso beans"),
              Doc(path="espresso.md", content=f"{filler} espresso"))
    titles = [h.title for h in _search(db, acme, "espresso")]
    assert titles[0] in ("about.md", "espresso.md") and titles[-1] == "passing.md"
    hits = _search(db, acme, "espresso", limit=2)
    assert len(hits) == 2 and hits[0].score >= hits[1].score


def test_every_word_must_match(db: Database) -> None:
    acme = make_tenant(db, "acme", agent_key="bot")
    _remember(db, acme, Doc(path="a.md", content="red apples"), Doc(path="b.md", content="red cars"))
    assert _titles(_search(db, acme, "red apples")) == [("memory", "a.md")]
    assert sorted(_titles(_search(db, acme, "red"))) == [("memory", "a.md"), ("memory", "b.md")]


@pytest.mark.parametrize(("query", "found"), [
    ('"', []), ('"apples', ["a.md"]), ("appl*", []), ("apples*", ["a.md"]), ("NEAR(apples red)", []),
    ("red AND NOT apples", []), ("apples OR cars", []), ("title:apples", []), ("{title body}: apples", []),
    ("(apples", ["a.md"]), ("^apples", ["a.md"]), ("-red", ["a.md", "b.md"]), ("red & !apples", ["a.md"]),
    ("red <-> apples", ["a.md"]), ("a'b", []), ("***", [])])
def test_query_syntax_is_literal_text(db: Database, query: str, found: list[str]) -> None:
    """Operators are words to find (``NEAR``, ``OR``, ``NOT``, ``title``: no document has them) or punctuation
    between words (``*`` is no prefix search, ``-`` no exclusion); never a syntax error."""
    acme = make_tenant(db, "acme", agent_key="bot")
    _remember(db, acme, Doc(path="a.md", content="red apples"), Doc(path="b.md", content="red cars"))
    assert sorted(h.title for h in _search(db, acme, query)) == found


def test_fts5_match_quotes_every_word() -> None:
    assert search.fts5_match('say "hi" NEAR(x) a*') == '"say" """hi""" "NEAR(x)" "a*"'


@pytest.mark.parametrize(("options", "field"), [
    ({"query": ""}, "query"), ({"query": " \t\n "}, "query"), ({"query": "x" * 1_001}, "query"),
    ({"query": "a\x00b"}, "query"), ({"kinds": []}, "kinds"), ({"kinds": ["memory", "files"]}, "kinds"),
    ({"kinds": "memory"}, "kinds"), ({"limit": 0}, "limit"), ({"limit": 101}, "limit"), ({"limit": True}, "limit"),
    ({"user_id": "u" * 201}, "user_id")])
def test_bad_input_is_a_clear_error_naming_the_field(db: Database, options: dict[str, Any], field: str) -> None:
    acme = make_tenant(db, "acme", agent_key="bot")
    arguments: dict[str, Any] = {"query": "apples", "user_id": ""} | options
    with pytest.raises(InvalidInputError) as caught:
        _search(db, acme, **arguments)
    assert caught.value.field == field and str(caught.value).startswith(f"invalid {field}")


def test_a_malformed_agent_id_is_refused_before_sql(db: Database) -> None:
    acme = make_tenant(db, "acme", agent_key="bot")
    with pytest.raises(InvalidIdError):
        _search(db, acme, "apples", agent_id="bot")


def test_vault_text_rule() -> None:
    assert vault_text("text/plain; charset=utf-8", "héllo".encode()) == "héllo"
    assert vault_text("application/ld+json", b"{}") == "{}"
    assert vault_text("application/pdf", b"hello") is None
    assert vault_text("text/plain", b"\xff") is None and vault_text("text/plain", b"a\x00b") is None
    long = ("é" * (INDEXED_CHARS + 10)).encode()
    assert vault_text("text/plain", long) == "é" * INDEXED_CHARS


# -- hostile queries: never a database error, never another scope's or tenant's row --------------------------
_VOCABULARY = ["secret", "NEAR", "AND", "OR", "NOT", "*", '"', ":", "(", ")", "^", "-", "&", "|", "!", "<->",
               "'", "title:", "body:", "{", "}", "\\", "%", "_", "$1", "?", ";", "--", "/*", "café", "launch"]
_HOSTILE = st.one_of(
    st.lists(st.sampled_from(_VOCABULARY), min_size=1, max_size=8).map(" ".join),
    st.lists(st.sampled_from(_VOCABULARY), min_size=1, max_size=8).map("".join),
    st.text(max_size=60),
    st.text(alphabet=st.sampled_from('"*:()^-+&|!<>\'{}NEAR secret launch'), min_size=1, max_size=40))
_CONTENT = " ".join(_VOCABULARY)


@pytest.fixture
def three_scopes(db: Database) -> tuple[Database, Tenant, set[str]]:
    """Acme's bot with the same hostile-looking text in two SCOPEs, its vault, another agent and another
    tenant; returns the IDs a search of SCOPE ``1001`` may find."""
    acme, globex = make_tenant(db, "acme", agent_key="bot"), make_tenant(db, "globex", agent_key="bot")
    helper = new_agent(db, acme.scope, "helper")
    allowed = set(_remember(db, acme, Doc(user_id="1001", path="mine.md", content=_CONTENT)))
    allowed.add(_upload(db, acme, "shared.txt", _CONTENT.encode()))
    _remember(db, acme, Doc(user_id="1002", path="theirs.md", content=_CONTENT), Doc(path="own.md", content=_CONTENT))
    _remember(db, acme, Doc(user_id="1001", path="helper.md", content=_CONTENT), agent_id=helper.id)
    _remember(db, globex, Doc(user_id="1001", path="mine.md", content=_CONTENT))
    with db.transaction() as tx:
        memory.create_episodic_summary(tx, acme.scope, agent_id=_bot(acme), user_id="1002", session_key="s",
                                       compaction_count=0, summary=_CONTENT)
        memory.create_episodic_summary(tx, globex.scope, agent_id=_bot(globex), user_id="1001", session_key="s",
                                       compaction_count=0, summary=_CONTENT)
    return db, acme, allowed


@settings(max_examples=120, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=_HOSTILE)
def test_hostile_queries_never_fail_in_the_database_nor_cross_a_scope(
        three_scopes: tuple[Database, Tenant, set[str]], query: str) -> None:
    db, acme, allowed = three_scopes
    try:
        hits = _search(db, acme, query, user_id="1001", limit=100)
    except InvalidInputError as error:  # only what the input rules refuse: blank, NUL, lone surrogate
        assert error.field == "query" and (not query.strip() or "\x00" in query
                                           or any("\ud800" <= c <= "\udfff" for c in query))
        return
    assert {hit.id for hit in hits} <= allowed


def test_the_known_hostile_words_find_the_scopes_own_rows(three_scopes: tuple[Database, Tenant, set[str]]) -> None:
    db, acme, allowed = three_scopes
    for query in ("secret NEAR", '"secret" *', "title: body:", "launch café", "(launch) AND NOT"):
        assert {hit.id for hit in _search(db, acme, query, user_id="1001")} == allowed, query


def test_scope_rows_exist_in_other_scopes_too(three_scopes: tuple[Database, Tenant, set[str]]) -> None:
    """The isolation above is not vacuous: the same words are found in the other SCOPE and tenant."""
    db, acme, _ = three_scopes
    assert {h.title for h in _search(db, acme, "secret", user_id="1002")} == {"theirs.md", "s #0", "shared.txt"}
    with db.transaction(write=False) as tx:
        other = agents.get_agent_by_key(tx, acme.scope, "helper")
    assert [h.title for h in _search(db, acme, "secret", user_id="1001", agent_id=other.id)] == ["helper.md"]
