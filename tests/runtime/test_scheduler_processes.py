"""Scale: two real ``agentfy serve`` processes on one PostgreSQL database fire 2,000 one-shot cron jobs.

What it measures: the jobs' due times are spread evenly over :data:`SPREAD_SECONDS` (about 67 due a second),
starting :data:`LEAD_SECONDS` after they are committed; both processes poll every
:data:`POLL_SECONDS` (the ``scheduler.poll_seconds`` setting) and fire through the offline model.  Every job
must fire exactly once — 2,000 ``cron_runs`` rows, one per job, each ``ok``, each in a session of its own —
both processes must fire some (the split is printed, from each process's ``scheduler.fired`` log records),
and the claim's lateness (the run's start minus its due time) must stay within :data:`P99_LATENESS_SECONDS`
at the 99th percentile.  The numbers are printed (``pytest -s`` shows them).

It is a wall-clock test on purpose (real processes, real time): the whole takes well under two minutes,
most of it the spread itself.
"""

from __future__ import annotations

import json
import statistics
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agentfy.schedule import from_utc_text
from agentfy.store.db import Database
from agentfy.store.migrate import upgrade
from agentfy.store.repos import cron
from tests.gateway.processes import Server, serving
from tests.helpers.databases import PgDatabases
from tests.helpers.tenants import Tenant, make_tenant

pytestmark = [pytest.mark.slow, pytest.mark.scale]
JOBS = 2000
PROCESSES = 2
SPREAD_SECONDS = 30.0
LEAD_SECONDS = 8.0
POLL_SECONDS = 0.1
P99_LATENESS_SECONDS = 2.0
#: After the last due time, how long the runs may take to end before the test gives up.
DRAIN_SECONDS = 30.0


def schedule_jobs(db: Database, org: Tenant) -> tuple[datetime, datetime]:
    """The one-shot jobs of ``org``'s agent, in one transaction; ``(first due time, when they were committed)``."""
    assert org.bot is not None
    start = datetime.now(UTC) + timedelta(seconds=LEAD_SECONDS)
    step = SPREAD_SECONDS / JOBS
    with db.transaction() as tx:
        for i in range(JOBS):
            due = start + timedelta(seconds=i * step)
            cron.create_cron_job(tx, org.scope, org.bot.id, created_by="1001",
                                 schedule=f"at {due.isoformat(timespec='milliseconds')}",
                                 payload={"message": f"job {i}"})
    return start, datetime.now(UTC)


def ended_runs(db: Database) -> int:
    with db.transaction(write=False) as tx:
        return int(tx.scalar("SELECT count(*) FROM cron_runs WHERE outcome <> 'running'"))


def fired_by(server: Server) -> set[str]:
    """The job IDs ``server`` logged as fired (its JSON log records)."""
    jobs: set[str] = set()
    for line in server.output().splitlines():
        if '"scheduler.fired"' not in line:
            continue
        record = json.loads(line)
        if record.get("message") == "scheduler.fired":
            jobs.add(record["job_id"])
    return jobs


def test_two_processes_fire_2000_jobs_each_exactly_once_on_time(pg_databases: PgDatabases, tmp_path: Path) -> None:
    name = pg_databases.create()
    url = pg_databases.url(name)
    db = Database(url)
    try:
        upgrade(db)
        acme = make_tenant(db, "acme", agent_key="bot")  # no model configured: the offline model answers
        env = {"AGENTFY_SCHEDULER_POLL_SECONDS": str(POLL_SECONDS), "AGENTFY_LOG_FORMAT": "json"}
        with serving(url, PROCESSES, tmp_path, env=env) as servers:
            first_due, committed = schedule_jobs(db, acme)
            assert committed < first_due, f"creating the jobs took until {committed}, after the first was due"
            deadline = time.monotonic() + LEAD_SECONDS + SPREAD_SECONDS + DRAIN_SECONDS
            while ended_runs(db) < JOBS and time.monotonic() < deadline:
                time.sleep(0.5)
            split = [fired_by(server) for server in servers]
        with db.transaction(write=False) as tx:
            runs = tx.all("SELECT job_id, due_at, started_at, outcome, session_key, error FROM cron_runs")
            sessions = int(tx.scalar("SELECT count(*) FROM sessions"))
            jobs_left = int(tx.scalar("SELECT count(*) FROM cron_jobs WHERE enabled"))
    finally:
        db.dispose()
        pg_databases.drop(name)

    lateness = sorted((from_utc_text(started) - from_utc_text(due)).total_seconds()
                      for _, due, started, _, _, _ in runs)
    p50 = statistics.median(lateness) if lateness else float("nan")
    p99 = statistics.quantiles(lateness, n=100)[98] if len(lateness) > 1 else float("nan")
    worst = max(lateness, default=float("nan"))
    outcomes = Counter(outcome for _, _, _, outcome, _, _ in runs)
    print(f"\n{JOBS} one-shot jobs due over {SPREAD_SECONDS:g} s, {PROCESSES} processes polling every "
          f"{POLL_SECONDS:g} s: {len(runs)} runs {dict(outcomes)}, {sessions} sessions; fired per process "
          f"{[len(s) for s in split]}; lateness p50 {p50:.3f} s, p99 {p99:.3f} s, max {worst:.3f} s "
          f"(jobs committed {(first_due - committed).total_seconds():.1f} s before the first was due)")

    assert len(runs) == JOBS, f"{len(runs)} runs of {JOBS} jobs"
    assert len({job_id for job_id, *_ in runs}) == JOBS  # one per job
    assert outcomes == {"ok": JOBS}, [r for r in runs if r[3] != "ok"][:3]
    assert len({session_key for *_, session_key, _ in runs}) == JOBS and sessions == JOBS
    assert jobs_left == 0  # every one-shot job disabled itself
    assert all(split), f"a process fired nothing: {[len(s) for s in split]}"
    assert not (split[0] & split[1]) and len(split[0] | split[1]) == JOBS
    assert p99 <= P99_LATENESS_SECONDS, f"p99 lateness {p99:.3f} s > {P99_LATENESS_SECONDS} s"
