"""Hand-offs (``spawn_subagent``, ``delegate``) within their limits: a delegate only over a ``delegate`` link
from the caller or a shared team, a bounded depth, a bounded number running per agent, and ``cancel_task`` —
each refusal told to the model with its reason, and nothing run for a refused hand-off."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from agentfy.agents.router import Router
from agentfy.permissions.channels import http_context
from agentfy.runtime.inbound import Inbound
from agentfy.runtime.runner import Runtime
from agentfy.runtime.settings import RuntimeSettings
from agentfy.runtime.tools import ToolEnv, ToolError
from agentfy.store import schema
from agentfy.store.db import Database
from agentfy.store.repos import agents, links, sessions, teams
from agentfy.store.repos.agents import Agent
from tests.helpers.tenants import Tenant, make_tenant
from tests.runtime.helpers import run

PERSON = "person-1"


def _runtime(db: Database, tmp_path: Path, **limits: int) -> Runtime:
    return Runtime(db, Router(db), workspace_root=tmp_path / "workspaces", settings=RuntimeSettings(**limits))


def _message(tenant: Tenant, text: str, *, agent_key: str = "bot", conversation: str = "chat-1") -> Inbound:
    context = http_context(PERSON, tenant_id=tenant.scope.tenant_id, role="owner")
    return Inbound(tenant.scope.tenant_id, agent_key, context, "test", conversation, text)


def _env(runtime: Runtime, tenant: Tenant, agent: Agent, *, conversation: str = "chat-1", depth: int = 0) -> ToolEnv:
    context = http_context(PERSON, tenant_id=tenant.scope.tenant_id, role="owner")
    return ToolEnv(runtime.db, agent, tenant.slug, runtime.workspace_root, context, "test", conversation, runtime,
                   depth)


def _conversation_texts(db: Database, tenant: Tenant, session_key: str) -> list[str]:
    with db.transaction(write=False) as tx:
        return [m.content for m in sessions.list_messages(tx, tenant.scope, session_key)]


def _sessions_of(db: Database, tenant: Tenant, agent: Agent) -> list[str]:
    with db.transaction(write=False) as tx:
        return [str(row[0]) for row in tx.all(sa.select(schema.sessions.c.session_key).where(
            schema.sessions.c.tenant_id == tenant.scope.tenant_id, schema.sessions.c.agent_id == agent.id))]


def _all_texts(db: Database, tenant: Tenant, agent: Agent) -> list[str]:
    keys = _sessions_of(db, tenant, agent)
    with db.transaction(write=False) as tx:
        return [m.content for key in keys for m in sessions.list_messages(tx, tenant.scope, key)]


@pytest.fixture
def acme(db: Database) -> Tenant:
    return make_tenant(db, "acme", agent_key="bot")


@pytest.fixture
def helper(db: Database, acme: Tenant) -> Agent:
    with db.transaction() as tx:
        return agents.create_agent(tx, acme.scope, agent_key="helper")


def test_a_delegate_needs_a_link_from_the_caller_or_a_shared_team(db: Database, tmp_path: Path, acme: Tenant,
                                                                 helper: Agent) -> None:
    runtime = _runtime(db, tmp_path)
    assert acme.bot is not None

    async def delegate() -> str | None:
        reply = await runtime(_message(acme, "/tool delegate agent=helper task=hello"))
        await runtime.wait_idle()
        return reply.text

    refused = run(delegate())
    assert refused is not None and "@helper is out of reach of @bot" in refused
    assert "POST /v1/agents/bot/links" in refused
    assert _sessions_of(db, acme, helper) == []  # nothing ran for the refused hand-off
    with db.transaction() as tx:  # a link the other way round does not let bot delegate
        links.create_link(tx, acme.scope, helper.id, acme.bot.id)
        other = links.create_link(tx, acme.scope, acme.bot.id, helper.id, kind="handoff")  # nor another kind
    assert "out of reach" in (run(delegate()) or "")
    with db.transaction() as tx:
        links.delete_link(tx, acme.scope, other.id)
        links.create_link(tx, acme.scope, acme.bot.id, helper.id)
    assert "delegated task" in (run(delegate()) or "")
    assert len(_sessions_of(db, acme, helper)) == 1


def test_teammates_may_delegate_to_each_other_and_the_route_says_how(db: Database, acme: Tenant,
                                                                    helper: Agent) -> None:
    assert acme.bot is not None
    with db.transaction() as tx:
        assert links.delegation_route(tx, acme.scope, acme.bot.id, helper.id) is None
        team = teams.create_team(tx, acme.scope, name="desk", lead_agent_id=acme.bot.id)
        # the lead reaches a member only once the member is on the team
        assert links.delegation_route(tx, acme.scope, acme.bot.id, helper.id) is None
        teams.add_member(tx, acme.scope, team.id, helper.id)
        assert links.delegation_route(tx, acme.scope, acme.bot.id, helper.id) == "team"
        assert links.delegation_route(tx, acme.scope, helper.id, acme.bot.id) == "team"
        links.create_link(tx, acme.scope, acme.bot.id, helper.id)
        assert links.delegation_route(tx, acme.scope, acme.bot.id, helper.id) == "link"


def test_another_organizations_agent_is_never_in_reach(db: Database, acme: Tenant) -> None:
    globex = make_tenant(db, "globex", agent_key="bot")
    assert acme.bot is not None and globex.bot is not None
    with db.transaction() as tx:
        # even a team of acme's naming globex's agent as lead is not a route (the scope is acme's)
        assert links.delegation_route(tx, acme.scope, acme.bot.id, globex.bot.id) is None
        assert links.delegation_route(tx, globex.scope, acme.bot.id, globex.bot.id) is None


def test_a_hand_off_beyond_the_depth_limit_is_refused(db: Database, tmp_path: Path, acme: Tenant) -> None:
    runtime = _runtime(db, tmp_path, max_delegation_depth=1)
    assert acme.bot is not None

    async def scenario() -> str:
        # the subagent (depth 1) is told to spawn another: that one would be depth 2
        reply = await runtime(_message(acme, "/tool spawn_subagent task='/tool spawn_subagent task=deeper'"))
        await runtime.wait_idle()
        return reply.session_key

    session_key = run(scenario())
    announced = _conversation_texts(db, acme, session_key)
    assert any("this run is 1 hand-offs from the person's message and at most 1 are allowed" in text
               and "runtime.max_delegation_depth" in text for text in announced), announced
    with pytest.raises(ToolError, match="at most 0 are allowed"):
        _runtime(db, tmp_path, max_delegation_depth=0)._may_hand_off(_env(runtime, acme, acme.bot), "delegate")


def test_more_hand_offs_than_the_agent_may_run_at_once_are_refused(db: Database, tmp_path: Path,
                                                                  acme: Tenant) -> None:
    runtime = _runtime(db, tmp_path, max_delegations_per_agent=2)
    assert acme.bot is not None

    async def scenario() -> None:
        env = _env(runtime, acme, acme.bot)
        first, second = runtime.spawn_subagent(env, "one"), runtime.spawn_subagent(env, "two")
        assert first != second
        with pytest.raises(ToolError, match=r"already has 2 hand-offs running, at most 2 at once"):
            runtime.spawn_subagent(env, "three")
        await runtime.wait_idle()
        runtime.spawn_subagent(env, "after")  # finished ones no longer count
        await runtime.wait_idle()

    run(scenario())


def test_cancel_task_stops_a_running_hand_off_of_this_conversation_only(db: Database, tmp_path: Path,
                                                                       acme: Tenant) -> None:
    runtime = _runtime(db, tmp_path)
    assert acme.bot is not None

    async def scenario() -> None:
        env = _env(runtime, acme, acme.bot)
        task_id = runtime.spawn_subagent(env, "/tool write_file path=never.txt content=x")
        assert not runtime.cancel(_env(runtime, acme, acme.bot, conversation="chat-2"), task_id)  # not its chat
        assert not runtime.cancel(env, "0123456789ab")  # no such task
        assert runtime.cancel(env, task_id)
        await runtime.wait_idle()
        assert not runtime.cancel(env, task_id)  # over

    run(scenario())
    assert not any((tmp_path / "workspaces").rglob("never*"))  # the cancelled task never ran its tool
    texts = _all_texts(db, acme, acme.bot)
    assert any(text.endswith(" was cancelled") for text in texts), texts  # announced back to the chat
    assert not any("write_file" in text for text in texts)


def test_the_cancel_task_tool_answers_the_model(db: Database, tmp_path: Path, acme: Tenant) -> None:
    runtime = _runtime(db, tmp_path)
    reply = run(runtime(_message(acme, "/tool cancel_task task_id=0123456789ab")))
    assert reply.text is not None and "no task '0123456789ab' of this conversation is running" in reply.text
