"""What one message costs the database, counted on each engine, so a change that adds a statement or a
transaction to every message is seen here rather than in a benchmark weeks later.

A message to an agent on an OpenAI-compatible model, in a conversation that already has an exchange (the
steady state: the session exists, the router and the tenant's slug are cached).  Every statement on the store's
pooled connections is counted (:mod:`tests.helpers.statements`); on PostgreSQL each is one round trip to the
server.  The run lock's two statements (PostgreSQL, on its own connection) are not in these counts.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from agentfy.agents.router import Router
from agentfy.permissions.channels import http_context
from agentfy.runtime.inbound import Reply
from agentfy.runtime.model import Usage
from agentfy.runtime.providers import Providers
from agentfy.runtime.runner import Runtime
from agentfy.store.db import Database
from agentfy.store.errors import NotFoundError
from agentfy.store.repos import orgs, sessions, telemetry
from tests.helpers.fake_openai import Completion, FakeOpenAI
from tests.helpers.statements import Recorded, recording
from tests.helpers.tenants import Tenant, make_tenant
from tests.runtime.helpers import inbound, run

REPLY = "The answer is forty-two."


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(default=Completion(text=REPLY, usage=Usage(12, 5))) as server:
        yield server


def _second_message(db: Database, tmp_path: Path, fake: FakeOpenAI, *,
                    conversation: str = "chat-1") -> tuple[Recorded, Reply, Tenant]:
    """The statements of a message after a first one (in ``conversation``: the same one by default, else a new
    conversation of the same person)."""
    acme = make_tenant(db, "acme", agent_key="bot", config={"model": {
        "provider": "openai", "base_url": fake.url, "model": "fake"}})
    with db.transaction() as tx:
        person = orgs.create_user(tx, display_name="Ann").id
        orgs.add_member(tx, acme.scope, person, "member")
    context = http_context(person, tenant_id=acme.id, role="member")
    providers = Providers()
    runtime = Runtime(db, Router(db), workspace_root=tmp_path, providers=providers)

    async def go() -> tuple[Recorded, Reply]:
        try:
            await runtime(inbound(acme, context, "What is the answer to everything?"))
            with recording(db) as recorded:
                reply = await runtime(inbound(acme, context, "And what is the question?", conversation=conversation))
            return recorded, reply
        finally:
            await providers.aclose()
            runtime.close()

    recorded, reply = run(go())
    return recorded, reply, acme


def test_a_message_is_two_transactions_of_few_statements(db: Database, tmp_path: Path, fake: FakeOpenAI) -> None:
    recorded, reply, acme = _second_message(db, tmp_path, fake)
    assert reply.text == REPLY
    # The turn's opening transaction (the agent, the session read and locked, history, skills, recall's two
    # lookups, the MCP servers, the user message) and the reply's (its message, the usage row: no savepoint).
    assert recorded.transactions == 2, recorded.summary()
    assert recorded.round_trips == 15, recorded.summary()
    assert len([sql for sql in recorded.statements if sql.lstrip().upper().startswith("SELECT AGENTS.")]) == 1, (
        "the run's agent is read once in its writing transaction (never trusted from the cache), then not again")
    # What the counts stand for was all done: both messages and the usage row are stored.
    with db.transaction(write=False) as tx:
        stored = sessions.list_messages(tx, acme.scope, reply.session_key)
        [used] = telemetry.usage_by_agent_day(tx, acme.scope)
    assert [m.role for m in stored] == ["user", "assistant"] * 2 and stored[-1].content == REPLY
    assert used.calls == 2


def test_a_new_conversation_opens_its_session_in_the_same_round_trips(db: Database, tmp_path: Path,
                                                                      fake: FakeOpenAI) -> None:
    recorded, reply, acme = _second_message(db, tmp_path, fake, conversation="chat-2")
    assert reply.text == REPLY
    # No session is found; it is opened (one INSERT for the agent record the transaction read) and takes the
    # message without locking it again: one statement more than a resumed conversation.
    assert recorded.transactions == 2, recorded.summary()
    assert recorded.round_trips == 16, recorded.summary()
    with db.transaction(write=False) as tx:
        stored = sessions.list_messages(tx, acme.scope, reply.session_key)
    assert [(m.role, m.content) for m in stored] == [("user", "And what is the question?"), ("assistant", REPLY)]


def test_a_message_to_an_agent_archived_elsewhere_is_refused_and_writes_nothing(db: Database,
                                                                                tmp_path: Path) -> None:
    """Another process archived the agent a moment ago; its change notice has not arrived (the archive is plain
    SQL here, so none ever does), and this process's router still holds the agent.  The run resolves it in its
    writing transaction and refuses: no session, no message."""
    acme = make_tenant(db, "acme", agent_key="bot")
    assert acme.bot is not None
    with db.transaction() as tx:
        person = orgs.create_user(tx, display_name="Ann").id
        orgs.add_member(tx, acme.scope, person, "member")
    context = http_context(person, tenant_id=acme.id, role="member")
    runtime = Runtime(db, Router(db), workspace_root=tmp_path, providers=Providers())

    async def go() -> None:
        try:
            await runtime(inbound(acme, context, "hello"))  # the router caches the agent
            with db.transaction() as tx:
                tx.execute(sa.text("UPDATE agents SET deleted_at = created_at WHERE id = :id"),
                           {"id": acme.bot.id})
            with pytest.raises(NotFoundError):
                await runtime(inbound(acme, context, "are you there?", conversation="chat-2"))
            with pytest.raises(NotFoundError):
                await runtime(inbound(acme, context, "and here?"))
        finally:
            runtime.close()

    run(go())
    with db.transaction(write=False) as tx:
        stored = tx.all(sa.text("SELECT content FROM session_messages WHERE tenant_id = :t ORDER BY seq"),
                        {"t": acme.id})
        opened = tx.scalar(sa.text("SELECT count(*) FROM sessions WHERE tenant_id = :t"), {"t": acme.id})
    assert [row[0] for row in stored][:1] == ["hello"] and len(stored) == 2  # the first exchange alone
    assert opened == 1
