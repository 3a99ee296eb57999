"""Benchmark of the cron scheduler's claiming on PostgreSQL against a raw ``FOR UPDATE SKIP LOCKED`` loop.

Run: ``make bench-scheduler`` (or ``.venv/bin/python -m bench.scheduler``).  A scratch database on
``$AGENTFY_BENCH_PG_URL`` (default the local server) holds :data:`JOBS` interval jobs of one agent; each round
makes all of them due (not timed), then times draining them, :data:`BATCH` per claim.  Two lines, each
against a baseline measured in alternating rounds of the same run (the median of each side's rounds):

* **claim + end** (goal): ``Scheduler.tick`` with a ``fire`` that only ends its run (``cron.end_run`` in a
  transaction of its own, in a worker thread, as :class:`agentfy.runtime.scheduler.Firing` does; a batch's
  fires run at once), against a raw loop on a bare psycopg connection — ``SELECT … FOR UPDATE SKIP LOCKED
  LIMIT`` :data:`BATCH` of the due jobs, one ``UPDATE`` advancing them, one ``executemany`` of their
  ``running`` runs, ``COMMIT``, then each run ended by one ``UPDATE`` and ``COMMIT``;
* **claim only** (goal): the same without ending the runs (the ``fire`` hands the run back): the claim alone;
* **claim + end, raw ends in one** (reported): the raw loop ending the whole batch's runs in one
  ``UPDATE`` and ``COMMIT`` — a bound the scheduler does not aim at, since each run ends when its own fire
  does.

Goal: jobs fired per second by the scheduler at least 0.5x the raw loop's.  What the raw loop skips is the
scheduler's own work: reading each job's schedule and computing its next slot in Python, the typed rows, and
its thread hops.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from agentfy.identity import Scope
from agentfy.runtime.scheduler import Scheduler
from agentfy.runtime.scheduler_settings import SchedulerSettings
from agentfy.schedule import utc_text
from agentfy.store.db import Database
from agentfy.store.migrate import upgrade
from agentfy.store.repos import agents, cron, orgs
from agentfy.store.repos.cron import Claim, CronRun
from bench.harness import Comparison, header
from bench.postgres import scratch_database, server_problem
from bench.verdicts import report

JOBS = 2000
BATCH = 20
ROUNDS = 5
GOAL = 0.5

RAW_PICK = ("SELECT id, tenant_id, next_run_at FROM cron_jobs WHERE enabled AND next_run_at IS NOT NULL "
            "AND next_run_at <= %s ORDER BY next_run_at, id LIMIT %s FOR UPDATE SKIP LOCKED")
RAW_ADVANCE = "UPDATE cron_jobs SET last_run_at = next_run_at, next_run_at = %s WHERE id = ANY(%s)"
RAW_RUN = ("INSERT INTO cron_runs (job_id, tenant_id, due_at, cause, started_at, outcome) "
           "VALUES (%s, %s, %s, 'schedule', %s, 'running')")
RAW_END = ("UPDATE cron_runs SET ended_at = %s, outcome = 'ok' WHERE tenant_id = %s AND job_id = %s "
           "AND due_at = %s")
RAW_END_BATCH = ("UPDATE cron_runs SET ended_at = %s, outcome = 'ok' WHERE (job_id, due_at) IN "
                 "(SELECT * FROM unnest(%s::text[], %s::text[]))")
#: How the raw loop ends its runs: not at all, each in its own transaction, or a batch in one.
NO_END, EACH, BATCHED = "none", "each", "batch"


class RawClaimer:
    """The baseline: claim-and-advance on a bare driver connection; every job is ``every 1h``, so its next slot
    is simply an hour after now (no schedule is read)."""

    def __init__(self, url: str, *, end: str) -> None:
        self.conn = psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"))
        self.end = end

    def batch(self) -> int:
        """Claim, advance and record one batch (and end its runs); how many jobs it had."""
        at = datetime.now(UTC)
        stamp = utc_text(at)
        with self.conn.cursor() as cur:
            due = cur.execute(RAW_PICK, (stamp, BATCH)).fetchall()
            if due:
                cur.execute(RAW_ADVANCE, (utc_text(at + timedelta(hours=1)), [row[0] for row in due]))
                cur.executemany(RAW_RUN, [(job_id, tenant_id, due_at, stamp) for job_id, tenant_id, due_at in due])
            self.conn.commit()
            if self.end == EACH:
                for job_id, tenant_id, due_at in due:
                    cur.execute(RAW_END, (utc_text(datetime.now(UTC)), tenant_id, job_id, due_at))
                    self.conn.commit()
            elif self.end == BATCHED and due:
                cur.execute(RAW_END_BATCH, (utc_text(datetime.now(UTC)), [row[0] for row in due],
                                            [row[2] for row in due]))
                self.conn.commit()
        return len(due)

    def drain(self) -> None:
        while self.batch():
            pass

    def close(self) -> None:
        self.conn.close()


def scheduler_drain(db: Database, *, end_runs: bool) -> Callable[[], None]:
    """Draining the due jobs with ``Scheduler.tick``, its ``fire`` ending the run or not."""

    def end(run: CronRun) -> CronRun:
        with db.transaction() as tx:
            return cron.end_run(tx, run, outcome="ok")

    async def fire(claim: Claim) -> CronRun:
        return await asyncio.to_thread(end, claim.run) if end_runs else claim.run

    ticker = Scheduler(db, fire, settings=SchedulerSettings(batch_size=BATCH))

    async def drain() -> None:
        while await ticker.tick():
            pass

    return lambda: asyncio.run(drain())


def make_due(db: Database) -> None:
    """Every job due a second ago, no runs left (and the dead rows of the last round vacuumed away)."""
    stamp = utc_text(datetime.now(UTC) - timedelta(seconds=1))
    with db.transaction() as tx:
        tx.execute("DELETE FROM cron_runs")
        tx.execute("UPDATE cron_jobs SET next_run_at = :at, enabled = true", {"at": stamp})
    with db.engine.connect() as connection:
        autocommit = connection.execution_options(isolation_level="AUTOCOMMIT")
        autocommit.exec_driver_sql("VACUUM ANALYZE cron_jobs")
        autocommit.exec_driver_sql("VACUUM ANALYZE cron_runs")


def timed(db: Database, drain: Callable[[], None]) -> float:
    """Jobs per second of draining all :data:`JOBS` due jobs (each must have exactly one run)."""
    make_due(db)
    start = datetime.now(UTC)
    drain()
    rate = JOBS / (datetime.now(UTC) - start).total_seconds()
    with db.transaction(write=False) as tx:
        runs = tx.scalar("SELECT count(DISTINCT job_id) FROM cron_runs")
    assert runs == JOBS, f"{runs} of {JOBS} jobs have a run"
    return rate


def run(url: str) -> None:
    db = Database(url)
    try:
        upgrade(db)
        with db.transaction() as tx:
            scope = Scope(orgs.create_organization(tx, slug=f"bench-{uuid.uuid4().hex[:8]}", name="B").id)
            agent = agents.create_agent(tx, scope, agent_key="bench-bot")
            for i in range(JOBS):
                cron.create_cron_job(tx, scope, agent.id, created_by="1001", schedule="every 1h",
                                     payload={"message": f"job {i}"})
        for end, label, goal in ((EACH, "claim + end", GOAL), (NO_END, "claim only", GOAL),
                                 (BATCHED, "claim + end, raw ends in one", None)):
            ours, raw = scheduler_drain(db, end_runs=end != NO_END), RawClaimer(url, end=end)
            sides: dict[str, list[float]] = {"ours": [], "raw": []}
            pair: list[tuple[str, Any]] = [("ours", ours), ("raw", raw.drain)]
            timed(db, ours)
            timed(db, raw.drain)  # warm-up: imports, caches, the pool
            for round_ in range(ROUNDS):
                for side, drain in pair if round_ % 2 == 0 else reversed(pair):
                    sides[side].append(timed(db, drain))
            raw.close()
            result = Comparison(f"postgresql: {label}", "Scheduler.tick", "raw SKIP LOCKED loop",
                                statistics.median(sides["ours"]), statistics.median(sides["raw"]), goal)
            report("scheduler", result)
            sys.stdout.flush()
    finally:
        db.dispose()


def main() -> None:
    header(f"agentfy.runtime.scheduler: claiming {JOBS} due jobs, batch {BATCH}, vs a raw SKIP LOCKED loop")
    problem = server_problem()
    if problem is not None:
        print(f"# postgresql: skipped, {problem}")
        return
    with scratch_database() as url:
        run(url)


if __name__ == "__main__":
    main()
