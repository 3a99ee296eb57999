"""The loop: a message through the router, the session, the offline model and back; one run per session."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agentfy.agents.router import Router
from agentfy.identity.context import current
from agentfy.permissions.channels import http_context, telegram_context
from agentfy.runtime.model import ModelRequest, ModelResponse, TextSink
from agentfy.runtime.offline import OfflineProvider
from agentfy.runtime.providers import Providers
from agentfy.runtime.runner import Runtime
from agentfy.store.db import Database
from agentfy.store.errors import NotFoundError
from agentfy.store.repos import sessions
from tests.helpers.tenants import Tenant, make_tenant
from tests.runtime.helpers import CollectedEvents, inbound, run, send


def test_a_dm_is_answered_and_both_messages_are_stored(db: Database, runtime: Runtime, acme: Tenant,
                                                       events: CollectedEvents) -> None:
    ctx = telegram_context(555, 1001, is_group=False, tenant_id=acme.id)
    reply = send(runtime, inbound(acme, ctx, "hello there"))
    assert reply.text == "@bot heard: hello there"
    with db.transaction(write=False) as tx:
        session = sessions.get_session(tx, acme.scope, reply.session_key)
        stored = sessions.list_messages(tx, acme.scope, reply.session_key)
    assert session.agent_id == acme.bot.id and session.user_id == "1001"  # the SCOPE of a DM is the sender
    assert [(m.role, m.sender_id, m.content) for m in stored] == [
        ("user", "1001", "hello there"), ("assistant", None, "@bot heard: hello there")]
    names = events.names()
    assert [n for n in names if n != "agent.run.delta"] == ["agent.run.started", "agent.replied",
                                                            "agent.run.finished"]
    deltas = [e for _, e in events.events if e.name == "agent.run.delta"]
    # The reply streams as deltas, between the start and the reply, for the DM's scope only.
    assert names.index("agent.replied") > names.index("agent.run.delta") > names.index("agent.run.started")
    assert "".join((e.run or {})["text"] for e in deltas) == reply.text
    assert {e.scope_user_id for e in deltas} == {"1001"}
    assert {e.agent_key for _, e in events.events} == {"bot"} and {t for t, _ in events.events} == {acme.id}


def test_the_next_message_continues_the_session_with_its_history(db: Database, tmp_path: Path, acme: Tenant) -> None:
    model = OfflineProvider()
    model.keep_requests = True
    runtime = Runtime(db, Router(db), workspace_root=tmp_path, providers=Providers(offline=model))
    ctx = http_context("user-calm-rivers-k8m4p2d7n9x3", tenant_id=acme.id, role="member")
    first = send(runtime, inbound(acme, ctx, "one"))
    second = send(runtime, inbound(acme, ctx, "two"))
    assert first.session_key == second.session_key
    request = model.requests[-1]
    assert [(m.role, m.content) for m in request.messages] == [
        ("user", "one"), ("assistant", "@bot heard: one"), ("user", "two")]
    prefix, runtime_section = request.system_prompt.split("<!-- agentfy:cache-boundary -->\n")
    assert "@bot" in prefix and acme.bot.id not in prefix  # key above the boundary
    assert f"agent_id: {acme.bot.id}" in runtime_section  # ID below it


def test_a_missing_agent_is_not_found_and_nothing_is_stored(db: Database, runtime: Runtime, acme: Tenant,
                                                            globex: Tenant) -> None:
    ctx = telegram_context(555, 1001, is_group=False, tenant_id=acme.id)
    with pytest.raises(NotFoundError, match="nobody"):
        send(runtime, inbound(acme, ctx, "hi", agent_key="nobody"))
    # another tenant's agent is as missing as no agent: acme's context cannot reach globex's bot by its ID
    with pytest.raises(NotFoundError):
        send(runtime, inbound(acme, ctx, "hi", agent_key=globex.bot.id))


@pytest.mark.parametrize(("text", "problem"), [("", "empty"), ("   ", "empty"), ("x" * 100_001, "at most")])
def test_bad_text_is_refused_before_anything_is_stored(db: Database, runtime: Runtime, acme: Tenant, text: str,
                                                       problem: str) -> None:
    ctx = telegram_context(555, 1001, is_group=False, tenant_id=acme.id)
    with pytest.raises(ValueError, match=problem):
        send(runtime, inbound(acme, ctx, text))
    with db.transaction(write=False) as tx:
        assert tx.scalar(sessions.sa.select(sessions.sa.func.count()).select_from(sessions.sessions)) == 0


def test_a_context_of_another_tenant_is_refused(runtime: Runtime, acme: Tenant, globex: Tenant) -> None:
    ctx = telegram_context(555, 1001, is_group=False, tenant_id=globex.id)
    with pytest.raises(ValueError, match="not the message's tenant"):
        send(runtime, inbound(acme, ctx, "hi"))


class GatedModel:
    """Answers after ``gate`` opens, recording the run's context and overlap."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.active = 0
        self.most_active = 0
        self.contexts: list[tuple[str | None, str | None]] = []

    async def complete(self, request: ModelRequest, *, on_text: TextSink | None = None) -> ModelResponse:
        self.active += 1
        self.most_active = max(self.most_active, self.active)
        self.contexts.append((current().agent_id, current().sender_id))
        await self.gate.wait()
        self.active -= 1
        return ModelResponse(text=f"done: {request.messages[-1].content}")


def test_two_messages_to_one_session_run_one_after_the_other(db: Database, tmp_path: Path, acme: Tenant) -> None:
    model = GatedModel()
    router = Router(db)
    runtime = Runtime(db, router, workspace_root=tmp_path, providers=Providers(offline=model))
    group = telegram_context(-100123, 1001, is_group=True, tenant_id=acme.id)
    other = telegram_context(-100123, 1002, is_group=True, tenant_id=acme.id)
    router.get(group, "bot")  # cached: both messages reach the conversation's lock in the order they were sent

    async def scenario() -> tuple[list[str | None], bool, bool]:
        first = asyncio.create_task(runtime(inbound(acme, group, "first")))
        second = asyncio.create_task(runtime(inbound(acme, other, "second")))
        for _ in range(50):
            await asyncio.sleep(0.01)
            if model.active:
                break
        running_during = router.is_running(group, "bot")
        await asyncio.sleep(0.05)
        one_at_a_time = model.active == 1
        model.gate.set()
        replies = await asyncio.gather(first, second)
        return [r.text for r in replies], running_during, one_at_a_time

    texts, running_during, one_at_a_time = run(scenario())
    assert running_during and one_at_a_time and model.most_active == 1
    assert texts == ["done: first", "done: second"]
    assert not router.is_running(group, "bot")
    assert model.contexts == [(acme.bot.id, "1001"), (acme.bot.id, "1002")]  # the run's context: agent + ACTOR
    model.gate.set()
    reply = send(runtime, inbound(acme, group, "third"))
    with db.transaction(write=False) as tx:
        stored = sessions.list_messages(tx, acme.scope, reply.session_key)
    assert [(m.role, m.sender_id, m.content) for m in stored][:4] == [
        ("user", "1001", "first"), ("assistant", None, "done: first"),
        ("user", "1002", "second"), ("assistant", None, "done: second")]


def test_different_sessions_run_concurrently(db: Database, tmp_path: Path, acme: Tenant) -> None:
    model = GatedModel()
    runtime = Runtime(db, Router(db), workspace_root=tmp_path, providers=Providers(offline=model))

    async def scenario() -> int:
        tasks = [asyncio.create_task(runtime(inbound(acme, telegram_context(555, sender, is_group=False,
                                                                           tenant_id=acme.id), "hi")))
                 for sender in (1001, 1002)]
        for _ in range(100):
            await asyncio.sleep(0.01)
            if model.active == 2:
                break
        overlap = model.active
        model.gate.set()
        await asyncio.gather(*tasks)
        return overlap

    assert run(scenario()) == 2


def test_two_tenants_with_the_same_key_and_conversation_share_nothing(db: Database, runtime: Runtime) -> None:
    acme, globex = make_tenant(db, "acme", agent_key="bot"), make_tenant(db, "globex", agent_key="bot")
    replies = {}
    for org in (acme, globex):
        ctx = telegram_context(-100123, 1001, is_group=True, tenant_id=org.id, role="owner")
        replies[org.slug] = send(runtime, inbound(org, ctx, f"/tool write_file path=notes.txt content={org.slug}",
                                                      conversation="telegram:-100123"))
    assert replies["acme"].session_key != replies["globex"].session_key  # the key starts with each agent's ID
    for org in (acme, globex):
        with db.transaction(write=False) as tx:
            assert sessions.get_session(tx, org.scope, replies[org.slug].session_key).agent_id == org.bot.id
            with pytest.raises(NotFoundError):
                other = globex if org is acme else acme
                sessions.get_session(tx, org.scope, replies[other.slug].session_key)
    files = sorted(p for p in runtime.workspace_root.rglob("*") if p.is_file())
    assert [f.read_text() for f in files] == ["acme", "globex"]
    assert [f.relative_to(runtime.workspace_root).parts[:2] for f in files] == [("tenants", "acme"),
                                                                                 ("tenants", "globex")]
