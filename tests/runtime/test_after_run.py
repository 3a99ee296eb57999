"""After the run: a completed conversation becomes episodic memory through the consolidation workers; a
conversation nearing the context window is flushed to memory and compacted."""

from __future__ import annotations

from pathlib import Path

from agentfy.agents.router import Router
from agentfy.events.consolidation import handlers
from agentfy.events.worker import Worker
from agentfy.permissions.channels import telegram_context
from agentfy.runtime.flush import memory_path
from agentfy.runtime.runner import Runtime
from agentfy.store.db import Database
from agentfy.store.repos import memory, sessions
from agentfy.store.schema import episodic_summaries
from tests.helpers.tenants import Tenant, make_tenant
from tests.runtime.helpers import inbound, run, send


def summaries(db: Database, org: Tenant) -> list[tuple[str, str, int]]:
    with db.transaction(write=False) as tx:
        rows = tx.all(memory.sa.select(episodic_summaries.c.session_key, episodic_summaries.c.user_id,
                                       episodic_summaries.c.compaction_count)
                      .where(episodic_summaries.c.tenant_id == org.id))
    return [(r[0], r[1], int(r[2])) for r in rows]


def drain(db: Database) -> None:
    worker = Worker(db, handlers())
    while worker.run_once():
        pass


def test_a_completed_conversation_becomes_episodic_memory(db: Database, runtime: Runtime, acme: Tenant) -> None:
    ctx = telegram_context(-100123, 1001, is_group=True, tenant_id=acme.id)
    message = inbound(acme, ctx, "We ship the Falcon release on Friday.", conversation="telegram:-100123")
    reply = send(runtime, message)
    assert summaries(db, acme) == []
    completed = run(runtime.end_conversation(message))
    assert completed is not None and completed.status == "completed"
    drain(db)
    assert summaries(db, acme) == [(reply.session_key, "group:telegram:-100123", 0)]  # the group's memory
    # the next message of that chat opens the next generation of the conversation
    assert send(runtime, message).session_key == f"{reply.session_key}#2"
    # ending a conversation with nothing said completes nothing
    assert run(runtime.end_conversation(inbound(acme, ctx, "x", conversation="quiet"))) is None


def test_near_the_context_window_the_conversation_is_flushed_and_compacted(db: Database, tmp_path: Path) -> None:
    org = make_tenant(db, "acme", agent_key="bot", config={"model": {"provider": "offline", "context_window": 500}})
    runtime = Runtime(db, Router(db), workspace_root=tmp_path)
    ctx = telegram_context(555, 1001, is_group=False, tenant_id=org.id)
    keys = {send(runtime, inbound(org, ctx, f"Message {n}: " + "words " * 60)).session_key for n in range(6)}
    (key,) = keys
    with db.transaction(write=False) as tx:
        session = sessions.get_session(tx, org.scope, key)
        documents = memory.list_memory_documents(tx, org.scope, org.bot.id, user_id="1001")
        stored = sessions.list_messages(tx, org.scope, key)
    assert session.compaction_count >= 1
    assert memory_path(key, 1) in {d.path for d in documents}  # written to the DM's (the sender's) memory
    assert any(m.role == "system" and m.content.startswith("[compacted]") for m in stored)
    drain(db)
    assert (key, "1001", 1) in summaries(db, org)  # each compaction is consolidated too
