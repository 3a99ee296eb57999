"""Team tasks through the runtime with the offline model: the task tools (only the agent's teams' tasks, the
lifecycle's refusals told to the model, the group-chat grant), and ``task_dispatch`` — the teammate runs the
task as the person who asked, the task records the reply, and the result is announced in the chat (both
engines)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from agentfy.agents.router import Router
from agentfy.permissions.channels import http_context, telegram_context
from agentfy.runtime.inbound import Inbound
from agentfy.runtime.runner import Runtime
from agentfy.runtime.settings import RuntimeSettings
from agentfy.store.db import Database
from agentfy.store.repos import agents, audit, sessions, tasks, teams
from agentfy.store.repos.agents import Agent
from agentfy.store.repos.tasks import TeamTask
from tests.helpers.tenants import Tenant, make_tenant
from tests.runtime.helpers import run

PERSON = "person-1"


@dataclass(frozen=True)
class Desk:
    tenant: Tenant
    bot: Agent
    helper: Agent
    team_id: str
    other_team_id: str


@pytest.fixture
def desk(db: Database) -> Desk:
    tenant = make_tenant(db, "acme", agent_key="bot")
    assert tenant.bot is not None
    with db.transaction() as tx:
        helper = agents.create_agent(tx, tenant.scope, agent_key="helper")
        team = teams.create_team(tx, tenant.scope, name="desk", lead_agent_id=tenant.bot.id)
        teams.add_member(tx, tenant.scope, team.id, helper.id)
        other = teams.create_team(tx, tenant.scope, name="elsewhere", lead_agent_id=helper.id)
    return Desk(tenant, tenant.bot, helper, team.id, other.id)


def _runtime(db: Database, tmp_path: Path, **settings: int) -> Runtime:
    return Runtime(db, Router(db), workspace_root=tmp_path / "workspaces", settings=RuntimeSettings(**settings))


def _say(runtime: Runtime, desk: Desk, text: str, *, agent_key: str = "bot", group: bool = False) -> str:
    tenant_id = desk.tenant.scope.tenant_id
    context = (telegram_context(-100, 1001, is_group=True, tenant_id=tenant_id) if group
               else http_context(PERSON, tenant_id=tenant_id, role="owner"))

    async def go() -> str:
        reply = await runtime(Inbound(tenant_id, agent_key, context, "test", "chat-1", text))
        await runtime.wait_idle()
        return reply.text or ""

    return run(go())


def _task(db: Database, desk: Desk, task_id: str) -> TeamTask:
    with db.transaction(write=False) as tx:
        return tasks.get_task(tx, desk.tenant.scope, task_id)


def _new(db: Database, desk: Desk, team_id: str | None = None, title: str = "Summarise the notes") -> TeamTask:
    with db.transaction() as tx:
        return tasks.create_task(tx, desk.tenant.scope, team_id or desk.team_id, title=title)


def test_an_agent_creates_claims_and_completes_its_teams_tasks(db: Database, tmp_path: Path, desk: Desk) -> None:
    runtime = _runtime(db, tmp_path)
    created = _say(runtime, desk, f"/tool task_create team={desk.team_id} title='Write the FAQ' "
                                  "description='ten questions' timeout_seconds=120")
    assert "task_create: created" in created and "[open] Write the FAQ" in created
    with db.transaction(write=False) as tx:
        [task] = tasks.list_tasks(tx, desk.tenant.scope, desk.team_id)
    assert (task.created_by_agent_id, task.description, task.timeout_seconds) == (desk.bot.id, "ten questions", 120)
    listed = _say(runtime, desk, "/tool task_list status=open")
    assert task.id in listed
    assert "claimed" in _say(runtime, desk, f"/tool task_claim task_id={task.id}")
    refused = _say(runtime, desk, f"/tool task_claim task_id={task.id}")
    assert f"team task {task.id!r} is claimed: it cannot claim" in refused
    assert "from claimed it may start, complete, fail, cancel" in refused
    helper_says = _say(runtime, desk, f"/tool task_complete task_id={task.id} result=mine", agent_key="helper")
    assert "only that agent may complete it" in helper_says
    assert "completed" in _say(runtime, desk, f"/tool task_complete task_id={task.id} result='FAQ written'")
    done = _task(db, desk, task.id)
    assert (done.status, done.result) == ("done", "FAQ written")


def test_tasks_of_other_teams_are_out_of_reach(db: Database, tmp_path: Path, desk: Desk) -> None:
    runtime = _runtime(db, tmp_path)
    theirs = _new(db, desk, desk.other_team_id)
    for command in (f"/tool task_claim task_id={theirs.id}", f"/tool task_fail task_id={theirs.id} error=x",
                    f"/tool task_dispatch task_id={theirs.id} agent=helper"):
        assert f"team task {theirs.id!r} not found" in _say(runtime, desk, command)
    assert f"team {desk.other_team_id!r} not found" in _say(
        runtime, desk, f"/tool task_create team={desk.other_team_id} title=x")
    assert "task_list: no tasks" in _say(runtime, desk, f"/tool task_list team={desk.team_id}")
    assert _task(db, desk, theirs.id) == theirs
    assert "argument 'status'" not in _say(runtime, desk, "/tool task_list status=finished")
    assert "is not a task status" in _say(runtime, desk, "/tool task_list status=finished")


def test_in_a_group_chat_writing_tools_need_the_senders_grant(db: Database, tmp_path: Path, desk: Desk) -> None:
    runtime = _runtime(db, tmp_path)
    task = _new(db, desk)
    denied = _say(runtime, desk, f"/tool task_claim task_id={task.id}", group=True)
    assert denied.startswith("@bot heard") is False and "denied" in denied
    assert _task(db, desk, task.id) == task


def test_a_dispatched_task_runs_as_the_person_and_its_result_is_recorded_and_announced(
        db: Database, tmp_path: Path, desk: Desk) -> None:
    runtime = _runtime(db, tmp_path)
    task = _new(db, desk, title="Check the invoices")
    answer = _say(runtime, desk, f"/tool task_dispatch task_id={task.id} agent=helper")
    assert f"dispatched {task.id} [in_progress]" in answer
    done = _task(db, desk, task.id)
    assert (done.status, done.result) == ("done", "@helper heard: Check the invoices")
    assert done.assignee_agent_id == desk.helper.id and done.session_key is not None
    with db.transaction(write=False) as tx:
        ran = sessions.list_messages(tx, desk.tenant.scope, done.session_key)
        chat = [s for s in sessions.open_conversations(tx, desk.tenant.scope, desk.bot.id, limit=10)
                if s.conversation == "chat-1"]
        announced = sessions.list_messages(tx, desk.tenant.scope, chat[0].session_key)
    assert (ran[0].role, ran[0].sender_id, ran[0].content) == ("user", PERSON, "Check the invoices")
    assert any(m.sender_id == PERSON and m.content == "@helper heard: Check the invoices" for m in announced)
    with db.transaction(write=False) as tx:  # recorded like every hand-off: the person as the actor
        (entry,) = audit.list_audit(tx, desk.tenant.scope, action="handoff.started")
    assert (entry.actor_id, entry.target_id) == (PERSON, desk.helper.id)
    assert (entry.details["tool"], entry.details["task_id"], entry.details["target"]) == (
        "task_dispatch", task.id, "helper")


def test_a_dispatched_run_that_fails_fails_the_task(db: Database, tmp_path: Path, desk: Desk) -> None:
    runtime = _runtime(db, tmp_path, text_max_length=100)
    task = _new(db, desk, title="x" * 150)
    _say(runtime, desk, f"/tool task_dispatch task_id={task.id} agent=helper")
    failed = _task(db, desk, task.id)
    assert failed.status == "failed" and "ValueError: the message text is 150 characters long" in (failed.error or "")


def test_dispatch_refusals(db: Database, tmp_path: Path, desk: Desk) -> None:
    runtime = _runtime(db, tmp_path, max_delegation_depth=0)
    task = _new(db, desk)
    assert "at most 0 are allowed" in _say(runtime, desk, f"/tool task_dispatch task_id={task.id} agent=helper")
    runtime = _runtime(db, tmp_path)
    assert "has no assignee" in _say(runtime, desk, f"/tool task_dispatch task_id={task.id}")
    with db.transaction() as tx:
        outsider = agents.create_agent(tx, desk.tenant.scope, agent_key="outsider")
    assert f"agent_id {outsider.id!r} is not on team" in _say(
        runtime, desk, f"/tool task_dispatch task_id={task.id} agent=outsider")
    assert _task(db, desk, task.id) == task
    with db.transaction(write=False) as tx:  # each refusal is recorded with its reason, none as started
        refused = audit.list_audit(tx, desk.tenant.scope, action="handoff.refused")
        assert audit.list_audit(tx, desk.tenant.scope, action="handoff.started") == []
    assert len(refused) == 3 and {entry.details["tool"] for entry in refused} == {"task_dispatch"}
    assert any("is not on team" in entry.details["reason"] for entry in refused)
