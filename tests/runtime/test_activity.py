"""Work nobody's message started, and work refused, is told and kept: every cron fire and refusal, every
hand-off and every refused hand-off is a run event of the agent (by key, with identifiers only — never a
prompt or a reason) and an audit entry whose actor is the ACTOR (the job's creator, the person who asked)
with the reason — on both engines."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from agentfy.agents.router import Router
from agentfy.permissions.channels import http_context
from agentfy.runtime.events import CRON_FIRED, CRON_REFUSED, HANDOFF_REFUSED, HANDOFF_STARTED, AgentEvent
from agentfy.runtime.inbound import Inbound
from agentfy.runtime.runner import Runtime
from agentfy.store.db import Database
from agentfy.store.repos import agents, audit, links, permissions
from agentfy.store.repos.agents import Agent
from agentfy.store.repos.audit import AuditEntry
from tests.helpers.tenants import Tenant
from tests.runtime.helpers import CollectedEvents, run
from tests.runtime.test_scheduler import GROUP, T0, Clock, schedule, scheduler

PERSON = "person-1"


def _entries(db: Database, tenant: Tenant, action: str) -> list[AuditEntry]:
    with db.transaction(write=False) as tx:
        return audit.list_audit(tx, tenant.scope, action=action)


def _heard(events: CollectedEvents, name: str) -> list[tuple[str, AgentEvent]]:
    return [(tenant_id, event) for tenant_id, event in events.events if event.name == name]


def _ask(tenant: Tenant, text: str) -> Inbound:
    context = http_context(PERSON, tenant_id=tenant.scope.tenant_id, role="owner")
    return Inbound(tenant.scope.tenant_id, "bot", context, "test", "chat-1", text)


@pytest.fixture
def helper(db: Database, acme: Tenant) -> Agent:
    with db.transaction() as tx:
        return agents.create_agent(tx, acme.scope, agent_key="helper")


def test_a_fire_and_a_refused_fire_are_events_of_the_agent_and_audit_entries_of_the_creator(
        db: Database, runtime: Runtime, events: CollectedEvents, acme: Tenant) -> None:
    assert acme.bot is not None
    with db.transaction() as tx:
        permissions.grant(tx, acme.scope, acme.bot.id, chat_scope=GROUP, config_type="cron", sender_id="1001",
                          allow=True, granted_by="admin")
    job = schedule(db, acme, "every 1m", user_id=GROUP, message="secret quarterly numbers")
    clock = Clock(T0 + timedelta(minutes=1))
    ticker = scheduler(db, runtime, clock)
    (fired,) = run(ticker.tick())

    (heard,) = _heard(events, CRON_FIRED)
    assert heard[0] == acme.scope.tenant_id
    assert heard[1].message() == {"event": CRON_FIRED,
                                  "agent": {"id": acme.bot.id, "agent_key": "bot", "tenant_slug": acme.slug},
                                  "run": {"job_id": job.id, "due_at": fired.due_at, "outcome": "ok"}}
    (entry,) = _entries(db, acme, "cron.fired")
    assert (entry.actor_id, entry.target_id) == ("1001", job.id)  # the creator, never ticker:<job>
    assert entry.details["session_key"] == fired.session_key and entry.details["agent_key"] == "bot"

    with db.transaction() as tx:
        permissions.grant(tx, acme.scope, acme.bot.id, chat_scope=GROUP, config_type="cron", sender_id="1001",
                          allow=False, granted_by="admin")
    clock.at += timedelta(minutes=1)
    (denied,) = run(ticker.tick())
    assert denied.outcome == "denied"
    (refused,) = _heard(events, CRON_REFUSED)
    assert refused[1].run == {"job_id": job.id, "due_at": denied.due_at}  # no reason: it may quote the chat
    (entry,) = _entries(db, acme, "cron.refused")
    assert entry.actor_id == "1001" and "denied_by_grant" in entry.details["error"]
    told = [event.message() for _, event in events.events if event.name in (CRON_FIRED, CRON_REFUSED)]
    assert len(told) == 2 and "secret" not in str(told)  # the prompt stays out of what every member hears


def test_a_job_whose_creator_left_is_refused_and_recorded_with_the_reason(
        db: Database, runtime: Runtime, events: CollectedEvents, acme: Tenant) -> None:
    job = schedule(db, acme, "every 1m", created_by="user-afraid-swans-nmkjhgfedcba")
    (denied,) = run(scheduler(db, runtime, Clock(T0 + timedelta(minutes=1))).tick())
    assert denied.outcome == "denied"
    (entry,) = _entries(db, acme, "cron.refused")
    assert (entry.actor_id, entry.target_id) == ("user-afraid-swans-nmkjhgfedcba", job.id)
    assert "no longer a member" in entry.details["error"]
    assert [event.name for _, event in events.events] == [CRON_REFUSED]  # no run started


def test_a_delegation_is_an_event_of_the_caller_naming_the_target_and_an_audit_entry_of_the_person(
        db: Database, tmp_path: Path, acme: Tenant, helper: Agent) -> None:
    assert acme.bot is not None
    events = CollectedEvents()
    runtime = Runtime(db, Router(db), workspace_root=tmp_path / "ws", events=events)
    with db.transaction() as tx:
        links.create_link(tx, acme.scope, acme.bot.id, helper.id, kind="delegate")

    async def delegate() -> None:
        await runtime(_ask(acme, "/tool delegate agent=helper task='count the invoices'"))
        await runtime.wait_idle()

    run(delegate())
    (heard,) = _heard(events, HANDOFF_STARTED)
    assert heard[1].agent_key == "bot"
    assert heard[1].run is not None and heard[1].run["tool"] == "delegate" and heard[1].run["target"] == "helper"
    (entry,) = _entries(db, acme, "handoff.started")
    assert (entry.actor_id, entry.target_id) == (PERSON, helper.id)
    assert entry.details["task_id"] == heard[1].run["task_id"] and entry.details["depth"] == "1"


def test_a_refused_delegation_and_a_refused_subagent_are_recorded_with_the_reason(
        db: Database, tmp_path: Path, acme: Tenant, helper: Agent) -> None:
    events = CollectedEvents()
    runtime = Runtime(db, Router(db), workspace_root=tmp_path / "ws", events=events)

    async def ask(text: str) -> None:
        await runtime(_ask(acme, text))
        await runtime.wait_idle()

    run(ask("/tool delegate agent=helper task=hello"))  # no link, no shared team
    run(ask("/tool spawn_subagent task="))  # the schema refuses an empty task
    refused = [event.run for _, event in _heard(events, HANDOFF_REFUSED)]
    assert refused == [{"tool": "delegate"}, {"tool": "spawn_subagent"}]
    assert _heard(events, HANDOFF_STARTED) == []
    entries = _entries(db, acme, "handoff.refused")
    assert [entry.actor_id for entry in entries] == [PERSON, PERSON]
    reasons = {entry.details["tool"]: entry.details["reason"] for entry in entries}
    assert "out of reach" in reasons["delegate"] and "@helper" in reasons["delegate"]
    assert "task" in reasons["spawn_subagent"]
