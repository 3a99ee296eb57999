"""The team task sweep on a driven clock: overdue claimed and in-progress work times out once, work still
within its deadline and open tasks are left alone, the loop sweeps until stopped, and a server with its
workers runs it (both engines)."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime, timedelta
from pathlib import Path

from fastapi.testclient import TestClient

from agentfy.gateway.app import create_app
from agentfy.identity import Scope
from agentfy.runtime.task_sweep import SweepSettings, TaskSweep
from agentfy.schedule import from_utc_text
from agentfy.store.db import Database
from agentfy.store.repos import agents, tasks, teams
from tests.helpers.tenants import make_tenant
from tests.runtime.helpers import run


def test_the_sweep_times_out_overdue_work_on_the_clock_it_is_given(db: Database) -> None:
    scope = make_tenant(db, "acme").scope
    with db.transaction() as tx:
        worker = agents.create_agent(tx, scope, agent_key="worker")
        team = teams.create_team(tx, scope, name="T", lead_agent_id=worker.id)
        short = tasks.claim_task(tx, scope, tasks.create_task(tx, scope, team.id, title="short",
                                                              timeout_seconds=10).id, worker.id)
        long = tasks.start_task(tx, scope, tasks.create_task(tx, scope, team.id, title="long",
                                                             timeout_seconds=600).id, worker.id)
        waiting = tasks.create_task(tx, scope, team.id, title="waiting", timeout_seconds=1)
    assert short.deadline_at is not None
    now = [from_utc_text(short.deadline_at) - timedelta(seconds=1)]
    sweep = TaskSweep(db, clock=lambda: now[0])
    assert sweep.sweep() == []
    now[0] += timedelta(seconds=1)
    assert [t.id for t in sweep.sweep()] == [short.id]
    now[0] += timedelta(minutes=5)
    assert sweep.sweep() == []  # once only; the long one is within its ten minutes
    now[0] += timedelta(minutes=10)
    assert [t.id for t in sweep.sweep()] == [long.id]
    with db.transaction(write=False) as tx:
        assert tasks.get_task(tx, scope, waiting.id) == waiting
        assert {t.status for t in tasks.list_tasks(tx, scope, team.id)} == {"timed_out", "open"}


def test_the_loop_sweeps_until_stopped(db: Database) -> None:
    scope = make_tenant(db, "acme").scope
    with db.transaction() as tx:
        worker = agents.create_agent(tx, scope, agent_key="worker")
        team = teams.create_team(tx, scope, name="T", lead_agent_id=worker.id)
        task = tasks.claim_task(tx, scope, tasks.create_task(tx, scope, team.id, title="t").id, worker.id)
    assert task.deadline_at is not None
    passes: list[datetime] = []
    later = from_utc_text(task.deadline_at) + timedelta(seconds=1)

    def clock() -> datetime:
        passes.append(later)
        return later

    async def go() -> None:
        stop = asyncio.Event()
        running = asyncio.create_task(TaskSweep(db, clock=clock, settings=SweepSettings(poll_seconds=0.01)).run(stop))
        while len(passes) < 3:
            await asyncio.sleep(0.01)
        stop.set()
        await asyncio.wait_for(running, timeout=5)

    run(go())
    with db.transaction(write=False) as tx:
        assert tasks.get_task(tx, scope, task.id).status == "timed_out"


def test_the_server_with_its_workers_runs_the_sweep(db: Database, tmp_path: Path) -> None:
    scope = make_tenant(db, "acme").scope
    with db.transaction() as tx:
        worker = agents.create_agent(tx, scope, agent_key="worker")
        team = teams.create_team(tx, scope, name="T", lead_agent_id=worker.id)
        task = tasks.claim_task(tx, scope, tasks.create_task(tx, scope, team.id, title="t").id, worker.id)
        tx.execute("UPDATE team_tasks SET deadline_at = '2000-01-01T00:00:00.000000Z' WHERE id = :id",
                   {"id": task.id})  # overdue already: the server's first pass times it out
    with TestClient(create_app(db, signing_secret=b"s" * 32, run_workers=True, workspace_root=tmp_path)):
        deadline = time.monotonic() + 20
        while _status(db, scope, task.id) != "timed_out" and time.monotonic() < deadline:
            time.sleep(0.05)
    assert _status(db, scope, task.id) == "timed_out"


def _status(db: Database, scope: Scope, task_id: str) -> str:
    with db.transaction(write=False) as tx:
        return tasks.get_task(tx, scope, task_id).status
