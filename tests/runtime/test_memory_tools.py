"""``remember`` and ``search_knowledge`` on both engines: a fact is kept in the run's SCOPE, attributed to the
sender, behind the group grant, and found again there only; the knowledge graph answers from the SCOPE's
entities only, never another SCOPE's or tenant's, and a question's wildcards are only text."""

from __future__ import annotations

from agentfy.permissions.channels import telegram_context
from agentfy.runtime.runner import Runtime
from agentfy.store.db import Database
from agentfy.store.repos import knowledge, knowledge_search, memory
from agentfy.store.repos.knowledge import EntityInput, EntityRef, RelationInput
from tests.helpers.tenants import Tenant
from tests.runtime.helpers import inbound, send
from tests.runtime.test_tools import GROUP, grant, group_ctx

GROUP_SCOPE = "group:telegram:-100123"


def _documents(db: Database, org: Tenant, user_id: str) -> list[memory.MemoryDocument]:
    assert org.bot is not None
    with db.transaction(write=False) as tx:
        return memory.list_memory_documents(tx, org.scope, org.bot.id, user_id=user_id)


def _dm(org: Tenant, sender: int):  # type: ignore[no-untyped-def]
    return telegram_context(sender, sender, is_group=False, tenant_id=org.id)


def test_remember_keeps_a_fact_in_the_dm_s_scope_attributed_to_the_sender_and_finds_it_there_only(
        db: Database, runtime: Runtime, acme: Tenant) -> None:
    reply = send(runtime, inbound(acme, _dm(acme, 1001), "/tool remember fact='the invoice cutoff is the 25th'"))
    assert reply.text is not None and "remembered (remembered/" in reply.text and "from 1001" in reply.text
    (document,) = _documents(db, acme, "1001")
    assert document.content == "the invoice cutoff is the 25th"
    assert document.metadata == {"author": "1001", "source": "remember"}
    found = send(runtime, inbound(acme, _dm(acme, 1001), "/tool search_memory query=cutoff")).text or ""
    assert "25th" in found
    elsewhere = send(runtime, inbound(acme, _dm(acme, 2002), "/tool search_memory query=cutoff")).text or ""
    assert "25th" not in elsewhere  # another person's DM is another SCOPE


def test_remember_in_a_group_needs_the_senders_grant_and_writes_the_group_s_memory(
        db: Database, runtime: Runtime, acme: Tenant) -> None:
    denied = send(runtime, inbound(acme, group_ctx(acme, 1001), "/tool remember fact='launch is friday'",
                                   conversation=GROUP)).text or ""
    assert denied.startswith("remember: denied (no_grant)") and "file_writer" in denied
    assert _documents(db, acme, GROUP_SCOPE) == []  # nothing written
    grant(db, acme, "1001")
    send(runtime, inbound(acme, group_ctx(acme, 1001), "/tool remember fact='launch is friday'", conversation=GROUP))
    (document,) = _documents(db, acme, GROUP_SCOPE)
    assert document.metadata["author"] == "1001"  # the person, never the group


def _graph(db: Database, org: Tenant, user_id: str, person: str, company: str) -> None:
    assert org.bot is not None
    with db.transaction() as tx:
        knowledge.ingest_graph(tx, org.scope, entities=[
            EntityInput(agent_id=org.bot.id, user_id=user_id, name=person, entity_type="person"),
            EntityInput(agent_id=org.bot.id, user_id=user_id, name=company, entity_type="company")],
            relations=[RelationInput(agent_id=org.bot.id, source_entity_id=EntityRef(0),
                                     target_entity_id=EntityRef(1), relation="works_at")])


def test_search_knowledge_answers_from_the_scope_s_graph_only(db: Database, runtime: Runtime, acme: Tenant,
                                                               globex: Tenant) -> None:
    _graph(db, acme, "1001", "Ada Lovelace", "Analytical Engines Ltd")
    _graph(db, acme, "2002", "Ada Other", "Secret Corp")
    _graph(db, globex, "1001", "Ada Globex", "Globex Corp")
    answer = send(runtime, inbound(acme, _dm(acme, 1001), "/tool search_knowledge query='who is ada?'")).text or ""
    assert "Ada Lovelace (person)" in answer and "Ada Lovelace —works_at→ Analytical Engines Ltd" in answer
    assert "Secret" not in answer and "Globex" not in answer and "Other" not in answer
    nothing = send(runtime, inbound(acme, _dm(acme, 3003), "/tool search_knowledge query=ada")).text or ""
    assert "nothing known about 'ada'" in nothing


def test_a_question_s_like_wildcards_match_only_themselves(db: Database, acme: Tenant) -> None:
    assert acme.bot is not None
    _graph(db, acme, "1001", "Ada Lovelace", "100% Cotton_Mills")
    with db.transaction(write=False) as tx:
        def names(question: str) -> list[str]:
            return [e.name for e in knowledge_search.find(tx, acme.scope, acme.bot.id,  # type: ignore[union-attr]
                                                          user_id="1001", question=question).entities]

        assert names("%% __") == []
        assert names("100%") == ["100% Cotton_Mills"]
        assert names("o_t") == []  # "_" is not "any character": "ott" of "Cotton" does not match
        assert names("n_m") == ["100% Cotton_Mills"]  # but it is itself
        assert names("lovelace") == ["Ada Lovelace"]
        assert names("") == [] and names("a") == []  # no word of two characters: nothing is matched
