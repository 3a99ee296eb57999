"""The team task lifecycle: every transition of the table, refused ones (409, nothing written), a race of two
claimers, the deadline sweep with a driven clock, and the migration of free-word statuses (both engines)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from agentfy.identity import Scope
from agentfy.schedule import from_utc_text
from agentfy.store.db import Database, Tx
from agentfy.store.errors import ConflictError, InvalidInputError
from agentfy.store.migrate import upgrade
from agentfy.store.repos import orgs, tasks, teams
from agentfy.store.repos.tasks import TRANSITIONS, TeamTask
from agentfy.store.schema import TASK_STATUSES
from tests.helpers.databases import PgDatabases
from tests.helpers.tenants import make_tenant
from tests.store.helpers import new_agent


@dataclass(frozen=True)
class Team:
    scope: Scope
    team_id: str
    worker: str
    other: str
    outsider: str


def _team(db: Database) -> Team:
    scope = make_tenant(db, "acme").scope
    worker, other, outsider = new_agent(db, scope, "worker"), new_agent(db, scope, "other"), new_agent(db, scope, "out")
    with db.transaction() as tx:
        team = teams.create_team(tx, scope, name="T", lead_agent_id=worker.id)
        teams.add_member(tx, scope, team.id, other.id)
    return Team(scope, team.id, worker.id, other.id, outsider.id)


def _in(db: Database, team: Team, status: str) -> TeamTask:
    """A task brought to ``status`` through the named operations."""
    with db.transaction() as tx:
        task = tasks.create_task(tx, team.scope, team.team_id, title="Write docs", description="the API part",
                                 timeout_seconds=60)
        if status in ("claimed", "in_progress", "done", "failed", "timed_out"):
            task = tasks.claim_task(tx, team.scope, task.id, team.worker)
        if status == "in_progress":
            task = tasks.start_task(tx, team.scope, task.id, team.worker)
        if status == "done":
            task = tasks.complete_task(tx, team.scope, task.id, "written")
        if status == "failed":
            task = tasks.fail_task(tx, team.scope, task.id, "no access")
        if status == "cancelled":
            task = tasks.cancel_task(tx, team.scope, task.id)
    if status == "timed_out":
        with db.transaction() as tx:
            assert task.deadline_at is not None
            tasks.expire_overdue(tx, from_utc_text(task.deadline_at))
            task = tasks.get_task(tx, team.scope, task.id)
    assert task.status == status
    return task


def _operations(team: Team) -> dict[str, Callable[[Tx, str], TeamTask]]:
    return {
        "assign": lambda tx, task_id: tasks.assign_task(tx, team.scope, task_id, team.other),
        "claim": lambda tx, task_id: tasks.claim_task(tx, team.scope, task_id, team.other),
        "start": lambda tx, task_id: tasks.start_task(tx, team.scope, task_id, team.worker),
        "complete": lambda tx, task_id: tasks.complete_task(tx, team.scope, task_id, "the answer"),
        "fail": lambda tx, task_id: tasks.fail_task(tx, team.scope, task_id, "it broke"),
        "cancel": lambda tx, task_id: tasks.cancel_task(tx, team.scope, task_id, "not needed"),
        "retry": lambda tx, task_id: tasks.retry_task(tx, team.scope, task_id),
    }


def test_every_operation_from_every_status_follows_the_table(db: Database) -> None:
    team = _team(db)
    for operation, call in _operations(team).items():
        rule = TRANSITIONS[operation]
        for status in TASK_STATUSES:
            task = _in(db, team, status)
            if status in rule.sources:
                with db.transaction() as tx:
                    moved = call(tx, task.id)
                assert moved.status == rule.target, (operation, status)
                continue
            with pytest.raises(ConflictError) as caught, db.transaction() as tx:
                call(tx, task.id)
            message = str(caught.value)
            assert task.id in message and f"is {status}" in message and operation in message, message
            assert caught.value.field == "status" and caught.value.value == status
            with db.transaction(write=False) as tx:
                assert tasks.get_task(tx, team.scope, task.id) == task  # nothing written


def test_what_each_operation_records(db: Database) -> None:
    team = _team(db)
    with db.transaction() as tx:
        task = tasks.create_task(tx, team.scope, team.team_id, title="t", timeout_seconds=90)
        claimed = tasks.claim_task(tx, team.scope, task.id, team.worker)
        assert claimed.claimed_by_agent_id == team.worker and claimed.claimed_at is not None
        assert claimed.deadline_at is not None
        assert from_utc_text(claimed.deadline_at) - from_utc_text(claimed.claimed_at) == timedelta(seconds=90)
        with pytest.raises(ConflictError, match="only that agent may complete"):
            tasks.complete_task(tx, team.scope, task.id, "mine", by_agent_id=team.other)
        done = tasks.complete_task(tx, team.scope, task.id, "the answer", by_agent_id=team.worker)
        assert (done.result, done.deadline_at) == ("the answer", None)
    failed = _in(db, team, "failed")
    assert failed.error == "no access"
    with db.transaction() as tx:
        reopened = tasks.retry_task(tx, team.scope, failed.id)
    assert (reopened.status, reopened.error, reopened.claimed_by_agent_id, reopened.result) == ("open", None, None,
                                                                                               None)


def test_bad_input_is_refused_naming_the_value(db: Database) -> None:
    team = _team(db)
    outsider = team.outsider
    task = _in(db, team, "open")
    cases: list[tuple[Callable[[Tx], Any], str]] = [
        (lambda tx: tasks.create_task(tx, team.scope, team.team_id, title="x", timeout_seconds=0), "timeout_seconds"),
        (lambda tx: tasks.create_task(tx, team.scope, team.team_id, title="x", timeout_seconds=10**9),
         "timeout_seconds"),
        (lambda tx: tasks.create_task(tx, team.scope, team.team_id, title=""), "title"),
        (lambda tx: tasks.create_task(tx, team.scope, team.team_id, title="x", assignee_agent_id=outsider),
         "assignee_agent_id"),
        (lambda tx: tasks.claim_task(tx, team.scope, task.id, outsider), "agent_id"),
        (lambda tx: tasks.fail_task(tx, team.scope, task.id, ""), "error"),
    ]
    for call, field in cases:
        with pytest.raises(InvalidInputError) as caught, db.transaction() as tx:
            call(tx)
        assert caught.value.field == field
    with pytest.raises(InvalidInputError, match=f"{outsider!r} is not on team"), db.transaction() as tx:
        tasks.claim_task(tx, team.scope, task.id, outsider)
    with db.transaction(write=False) as tx:
        assert tasks.get_task(tx, team.scope, task.id) == task
        assert len(tasks.list_tasks(tx, team.scope, team.team_id)) == 1


def test_two_claimers_racing_one_wins(db: Database) -> None:
    team = _team(db)
    task = _in(db, team, "open")
    gate = threading.Barrier(2)
    outcomes: dict[str, object] = {}

    def claim(agent_id: str) -> None:
        gate.wait()
        try:
            with db.transaction() as tx:
                outcomes[agent_id] = tasks.claim_task(tx, team.scope, task.id, agent_id).claimed_by_agent_id
        except ConflictError as error:
            outcomes[agent_id] = error

    threads = [threading.Thread(target=claim, args=(agent,)) for agent in (team.worker, team.other)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    winners = [agent for agent, outcome in outcomes.items() if outcome == agent]
    losers = [outcome for outcome in outcomes.values() if isinstance(outcome, ConflictError)]
    assert len(winners) == 1 and len(losers) == 1, outcomes
    assert "is claimed" in str(losers[0])
    with db.transaction(write=False) as tx:
        assert tasks.get_task(tx, team.scope, task.id).claimed_by_agent_id == winners[0]


def test_the_sweep_times_out_overdue_work_then_an_admin_retries_or_cancels(db: Database) -> None:
    team = _team(db)
    claimed, running, waiting = _in(db, team, "claimed"), _in(db, team, "in_progress"), _in(db, team, "open")
    assert claimed.deadline_at is not None and running.deadline_at is not None
    latest = max(from_utc_text(claimed.deadline_at), from_utc_text(running.deadline_at))
    with db.transaction() as tx:
        assert tasks.expire_overdue(tx, latest - timedelta(seconds=61)) == []
        expired = tasks.expire_overdue(tx, latest)
    assert {t.id for t in expired} == {claimed.id, running.id}
    assert all(t.status == "timed_out" and t.deadline_at is None and "timed out" in (t.error or "") for t in expired)
    with db.transaction() as tx:
        assert tasks.expire_overdue(tx, latest + timedelta(days=1)) == []  # once only
        assert tasks.get_task(tx, team.scope, waiting.id) == waiting  # not being worked on: no deadline
        assert tasks.retry_task(tx, team.scope, claimed.id).status == "open"
        assert tasks.cancel_task(tx, team.scope, running.id).status == "cancelled"
        with pytest.raises(ConflictError, match="is cancelled"):
            tasks.complete_task(tx, team.scope, running.id, "too late")


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database on each engine, to migrate step by step."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'old.db'}"
        return
    databases: PgDatabases = request.getfixturevalue("pg_databases")
    name = databases.create()
    try:
        yield databases.url(name)
    finally:
        databases.drop(name)


def test_migration_maps_free_word_statuses(empty_url: str) -> None:
    db = Database(empty_url)
    try:
        upgrade(db, "0013")
        with db.transaction() as tx:
            org = orgs.create_organization(tx, slug="acme", name="Acme")
            team = teams.create_team(tx, Scope(org.id), name="T")
            old = {"todo": "open", "in_progress": "in_progress", "completed": "done", "canceled": "cancelled",
                   "waiting_on_bob": "open", "done": "done", "error": "failed"}
            ids = {}
            for status in old:
                ids[status] = task_id = tx.db.mint("team-task")
                tx.execute("INSERT INTO team_tasks (id, tenant_id, team_id, title, status, created_at) "
                           "VALUES (:id, :tenant, :team, 't', :status, '2026-01-01T00:00:00.000000Z')",
                           {"id": task_id, "tenant": org.id, "team": team.id, "status": status})
        upgrade(db)
        with db.transaction(write=False) as tx:
            for status, expected in old.items():
                task = tasks.get_task(tx, Scope(org.id), ids[status])
                assert task.status == expected, status
                assert task.updated_at == task.created_at
                assert (task.deadline_at is not None) == (expected == "in_progress")
    finally:
        db.dispose()
