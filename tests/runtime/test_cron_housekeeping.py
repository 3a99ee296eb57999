"""The scheduler's housekeeping of ``cron_runs`` on both engines, with an injected clock: a run left
``running`` past the staleness ends ``failed`` saying its process stopped (every tenant's, no other run
touched), runs that ended before the retention are deleted in bounded batches (never a running one), and a
scheduler does both on its first pass and then at most once an hour."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agentfy.runtime.cron_housekeeping import RunHousekeeping
from agentfy.runtime.scheduler import Scheduler
from agentfy.runtime.scheduler_settings import SchedulerSettings
from agentfy.schedule import utc_text
from agentfy.store.db import Database
from agentfy.store.repos import cron
from agentfy.store.repos.cron import Claim, CronRun
from tests.helpers.tenants import Tenant
from tests.runtime.helpers import run

T0 = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)


class Clock:
    def __init__(self, at: datetime) -> None:
        self.at = at

    def __call__(self) -> datetime:
        return self.at


def new_job(db: Database, org: Tenant) -> cron.CronJob:
    assert org.bot is not None
    with db.transaction() as tx:
        return cron.create_cron_job(tx, org.scope, org.bot.id, created_by="1001", schedule="every 1h",
                                    payload={"message": "report"}, at=T0 - timedelta(days=90))


def started(db: Database, org: Tenant, job: cron.CronJob, at: datetime, *, ended: datetime | None = None) -> CronRun:
    """A run of ``job`` started at ``at``: still running, or ended ``ok`` at ``ended``."""
    with db.transaction() as tx:
        claim = cron.start_manual_run(tx, org.scope, job.id, at=at)
        if ended is None:
            return claim.run
        return cron.end_run(tx, claim.run, outcome="ok", at=ended)


def stored(db: Database, org: Tenant, run_: CronRun) -> CronRun | None:
    with db.transaction(write=False) as tx:
        return next((r for r in cron.list_cron_runs(tx, org.scope, run_.job_id) if r.due_at == run_.due_at), None)


def test_a_run_left_running_past_the_staleness_fails_saying_its_process_stopped(
        db: Database, acme: Tenant, globex: Tenant) -> None:
    ours, theirs = new_job(db, acme), new_job(db, globex)
    dead = started(db, acme, ours, T0 - timedelta(hours=2))
    dead_elsewhere = started(db, globex, theirs, T0 - timedelta(minutes=61))
    recent = started(db, acme, ours, T0 - timedelta(minutes=59))
    finished = started(db, acme, ours, T0 - timedelta(hours=3), ended=T0 - timedelta(hours=3))
    with db.transaction() as tx:
        assert cron.fail_stale_runs(tx, started_before=T0 - timedelta(hours=1), at=T0) == 2
    for org, run_ in ((acme, dead), (globex, dead_elsewhere)):
        after = stored(db, org, run_)
        assert after is not None
        assert (after.outcome, after.error, after.ended_at) == ("failed", "the process running it stopped",
                                                                utc_text(T0))
    assert stored(db, acme, recent) == recent  # younger than the staleness: still running
    assert stored(db, acme, finished) == finished  # an ended run is never touched
    with db.transaction() as tx:  # a second sweep finds nothing left
        assert cron.fail_stale_runs(tx, started_before=T0 - timedelta(hours=1), at=T0) == 0


def test_a_swept_run_that_ends_after_all_records_its_real_outcome(db: Database, acme: Tenant) -> None:
    slow = started(db, acme, new_job(db, acme), T0 - timedelta(hours=2))
    with db.transaction() as tx:
        cron.fail_stale_runs(tx, started_before=T0 - timedelta(hours=1), at=T0)
        cron.end_run(tx, slow, outcome="ok", at=T0 + timedelta(seconds=5))
    after = stored(db, acme, slow)
    assert after is not None and (after.outcome, after.error) == ("ok", None)


def test_runs_that_ended_before_the_retention_are_deleted_in_batches_never_a_running_one(
        db: Database, acme: Tenant, globex: Tenant) -> None:
    ours, theirs = new_job(db, acme), new_job(db, globex)
    old = [started(db, acme, ours, T0 - timedelta(days=40, minutes=i), ended=T0 - timedelta(days=40))
           for i in range(3)]
    old.append(started(db, globex, theirs, T0 - timedelta(days=31), ended=T0 - timedelta(days=31)))
    kept = started(db, acme, ours, T0 - timedelta(days=31), ended=T0 - timedelta(days=29))  # ended within
    running = started(db, acme, ours, T0 - timedelta(days=45))  # never ended: the sweep's, not pruning's
    cutoff = T0 - timedelta(days=30)
    with db.transaction() as tx:
        assert cron.prune_runs(tx, ended_before=cutoff, limit=3) == 3  # a full batch: call again
    with db.transaction() as tx:
        assert cron.prune_runs(tx, ended_before=cutoff, limit=3) == 1  # fewer than a batch: done
    assert [stored(db, acme if r.tenant_id == acme.id else globex, r) for r in old] == [None] * 4
    assert stored(db, acme, kept) == kept and stored(db, acme, running) == running


@pytest.mark.parametrize("limit", [0, -1, True, 2.5])
def test_a_prune_batch_that_is_not_a_positive_integer_is_refused_naming_it(db: Database, acme: Tenant,
                                                                          limit: object) -> None:
    finished = started(db, acme, new_job(db, acme), T0 - timedelta(days=40), ended=T0 - timedelta(days=40))
    with db.transaction() as tx, pytest.raises(ValueError, match=rf"limit {limit!r} is not a batch size"):
        cron.prune_runs(tx, ended_before=T0, limit=limit)  # type: ignore[arg-type]
    assert stored(db, acme, finished) == finished


async def _ended(claim: Claim) -> CronRun:
    return claim.run


def test_the_scheduler_sweeps_and_prunes_on_its_first_pass_then_at_most_hourly(db: Database, acme: Tenant) -> None:
    job = new_job(db, acme)
    settings = SchedulerSettings(run_retention_days=30, stale_run_seconds=600)
    clock = Clock(T0)
    ticker = Scheduler(db, _ended, clock=clock, settings=settings)
    with db.transaction() as tx:  # only the manual runs below: the job's own slots are not part of this test
        cron.set_cron_job_enabled(tx, acme.scope, job.id, False)
    dead = started(db, acme, job, T0 - timedelta(minutes=11))
    expired = started(db, acme, job, T0 - timedelta(days=31), ended=T0 - timedelta(days=31))
    run(ticker.tick())
    assert stored(db, acme, expired) is None
    swept = stored(db, acme, dead)
    assert swept is not None and swept.outcome == "failed"

    later_dead = started(db, acme, job, T0 - timedelta(minutes=1))  # stale from T0 + 9 min
    clock.at = T0 + timedelta(minutes=59)
    run(ticker.tick())
    assert stored(db, acme, later_dead) == later_dead  # within the hour: no housekeeping yet
    clock.at = T0 + timedelta(hours=1)
    run(ticker.tick())
    after = stored(db, acme, later_dead)
    assert after is not None and (after.outcome, after.error) == ("failed", cron.STOPPED_RUN_ERROR)


def test_retention_zero_keeps_every_run(db: Database, acme: Tenant) -> None:
    ancient = started(db, acme, new_job(db, acme), T0 - timedelta(days=3650), ended=T0 - timedelta(days=3650))
    RunHousekeeping(db, SchedulerSettings(run_retention_days=0)).when_due(T0)
    assert stored(db, acme, ancient) == ancient


def test_a_failing_housekeeping_is_logged_and_the_pass_still_claims(db: Database, acme: Tenant,
                                                                    monkeypatch: pytest.MonkeyPatch,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    with db.transaction() as tx:
        assert acme.bot is not None
        cron.create_cron_job(tx, acme.scope, acme.bot.id, created_by="1001", schedule="every 1h",
                             payload={"message": "report"}, at=T0)

    def broken(*args: object, **kwargs: object) -> int:
        raise RuntimeError("database away")

    monkeypatch.setattr(cron, "fail_stale_runs", broken)
    ticker = Scheduler(db, _ended, clock=Clock(T0 + timedelta(hours=1, seconds=1)))
    assert [r.outcome for r in run(ticker.tick())] == ["running"]  # claimed and "fired" all the same
    assert "scheduler.housekeeping_failed" in caplog.text
