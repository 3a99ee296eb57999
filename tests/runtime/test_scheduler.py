"""The cron scheduler on both engines, with an injected clock: a due job fires once as its creator, its next
run moves past now, a missed run fires once, a paused job never fires, tenants never mix, a revoked grant is
a denied run, and two schedulers racing over 200 due jobs fire each exactly once."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from agentfy.gateway.app import create_app
from agentfy.runtime.runner import Runtime
from agentfy.runtime.scheduler import Firing, Scheduler
from agentfy.schedule import utc_text
from agentfy.store.db import Database
from agentfy.store.errors import InvalidInputError
from agentfy.store.repos import cron, permissions, sessions
from agentfy.store.repos.cron import Claim, CronRun
from tests.helpers.tenants import Tenant
from tests.runtime.helpers import run

T0 = datetime(2026, 12, 2, 8, 59, 30, tzinfo=UTC)
GROUP = "group:telegram:-100123"


class Clock:
    """Time the test moves by hand."""

    def __init__(self, at: datetime) -> None:
        self.at = at

    def __call__(self) -> datetime:
        return self.at


def schedule(db: Database, org: Tenant, text: str = "0 9 * * *", *, created_by: str = "1001", user_id: str = "",
             message: str = "report", **extra: object) -> cron.CronJob:
    with db.transaction() as tx:
        return cron.create_cron_job(tx, org.scope, org.bot.id, created_by=created_by,  # type: ignore[union-attr]
                                    user_id_scope=user_id, schedule=text, payload={"message": message}, at=T0,
                                    **extra)  # type: ignore[arg-type]


def runs(db: Database, org: Tenant, job: cron.CronJob) -> list[CronRun]:
    with db.transaction(write=False) as tx:
        return cron.list_cron_runs(tx, org.scope, job.id)


def job_now(db: Database, org: Tenant, job: cron.CronJob) -> cron.CronJob:
    with db.transaction(write=False) as tx:
        return cron.get_cron_job(tx, org.scope, job.id)


def scheduler(db: Database, runtime: Runtime, clock: Clock) -> Scheduler:
    return Scheduler(db, Firing(db, runtime, clock=clock), clock=clock)


def test_a_due_job_fires_once_as_its_creator_and_its_next_run_moves_past_now(
        db: Database, runtime: Runtime, acme: Tenant) -> None:
    clock = Clock(T0)
    job = schedule(db, acme, origin_channel="telegram", origin_conversation="telegram:-100123")
    assert job.next_run_at == "2026-12-02T09:00:00.000000Z"
    ticker = scheduler(db, runtime, clock)
    assert run(ticker.tick()) == []  # not due yet
    clock.at = T0 + timedelta(seconds=45)
    (fired,) = run(ticker.tick())
    assert (fired.outcome, fired.due_at, fired.cause, fired.error) == ("ok", job.next_run_at, "schedule", None)
    assert run(ticker.tick()) == []  # the same slot never fires twice
    after = job_now(db, acme, job)
    assert (after.next_run_at, after.last_run_at) == ("2026-12-03T09:00:00.000000Z", job.next_run_at)
    assert runs(db, acme, job) == [fired]
    with db.transaction(write=False) as tx:
        said = [(m.role, m.sender_id, m.content) for m in sessions.list_messages(tx, acme.scope, fired.session_key)]
    assert said[0] == ("user", "1001", "report")  # the ACTOR is the creator, not the ticker
    assert said[1][0] == "assistant"
    assert fired.session_key is not None and "telegram:-100123" in fired.session_key


def test_after_downtime_a_missed_job_fires_once_and_next_runs_after_now(
        db: Database, runtime: Runtime, acme: Tenant) -> None:
    clock = Clock(T0)
    job = schedule(db, acme, "0 * * * *")
    clock.at = T0 + timedelta(hours=10)  # ten slots missed
    ticker = scheduler(db, runtime, clock)
    assert len(run(ticker.tick())) == 1
    assert run(ticker.tick()) == []
    assert len(runs(db, acme, job)) == 1
    assert job_now(db, acme, job).next_run_at == utc_text(datetime(2026, 12, 2, 19, tzinfo=UTC))


def test_a_paused_job_never_fires_and_resuming_skips_the_slots_it_was_paused_through(
        db: Database, runtime: Runtime, acme: Tenant) -> None:
    clock = Clock(T0)
    job = schedule(db, acme, "every 1m")
    with db.transaction() as tx:
        cron.set_cron_job_enabled(tx, acme.scope, job.id, False)
    clock.at = T0 + timedelta(hours=3)
    ticker = scheduler(db, runtime, clock)
    assert run(ticker.tick()) == []
    with db.transaction() as tx:
        resumed = cron.set_cron_job_enabled(tx, acme.scope, job.id, True, at=clock.at)
    assert resumed.next_run_at == utc_text(clock.at + timedelta(minutes=1))
    assert run(ticker.tick()) == [] and runs(db, acme, job) == []


def test_a_one_shot_job_fires_once_then_disables_itself(db: Database, runtime: Runtime, acme: Tenant) -> None:
    clock = Clock(T0)
    job = schedule(db, acme, "at 2026-12-02T10:00:00+01:00")
    clock.at = T0 + timedelta(days=2)
    ticker = scheduler(db, runtime, clock)
    assert [r.outcome for r in run(ticker.tick())] == ["ok"]
    after = job_now(db, acme, job)
    assert (after.enabled, after.next_run_at) == (False, None)
    with db.transaction() as tx, pytest.raises(InvalidInputError) as refused:
        cron.set_cron_job_enabled(tx, acme.scope, job.id, True, at=clock.at)
    assert refused.value.field == "enabled"


def test_a_job_of_one_tenant_never_runs_for_another(db: Database, runtime: Runtime, acme: Tenant,
                                                    globex: Tenant) -> None:
    clock = Clock(T0)
    theirs = schedule(db, globex, message="globex only")
    clock.at = T0 + timedelta(minutes=1)
    (fired,) = run(scheduler(db, runtime, clock).tick())
    assert fired.tenant_id == globex.id
    with db.transaction(write=False) as tx:
        assert cron.list_cron_runs(tx, acme.scope, theirs.id) == []  # not visible in acme
        assert sessions.get_session(tx, globex.scope, fired.session_key).agent_id == globex.bot.id  # type: ignore
        assert tx.scalar("SELECT count(*) FROM sessions WHERE tenant_id = :t", {"t": acme.id}) == 0


def test_a_revoked_grant_makes_a_denied_run_with_the_reason(db: Database, runtime: Runtime, acme: Tenant) -> None:
    clock = Clock(T0)
    with db.transaction() as tx:
        permissions.grant(tx, acme.scope, acme.bot.id, chat_scope=GROUP, config_type="cron",  # type: ignore[union-attr]
                          sender_id="1001", allow=True, granted_by="admin")
    job = schedule(db, acme, "every 1m", user_id=GROUP)
    ticker = scheduler(db, runtime, clock)
    clock.at = T0 + timedelta(minutes=1)
    assert [r.outcome for r in run(ticker.tick())] == ["ok"]
    with db.transaction() as tx:
        permissions.grant(tx, acme.scope, acme.bot.id, chat_scope=GROUP, config_type="cron",  # type: ignore[union-attr]
                          sender_id="1001", allow=False, granted_by="admin")
    clock.at = T0 + timedelta(minutes=2)
    (denied,) = run(ticker.tick())
    assert denied.outcome == "denied" and denied.error is not None and "denied_by_grant" in denied.error
    assert denied.session_key is None
    assert [r.outcome for r in runs(db, acme, job)] == ["ok", "denied"]


def test_an_invalid_schedule_or_time_zone_is_refused_and_nothing_is_written(db: Database, acme: Tenant) -> None:
    for text, timezone, field in (("every fortnight", "UTC", "schedule"), ("0 9 * * *", "Moon/Base", "timezone")):
        with pytest.raises(InvalidInputError) as refused:
            schedule(db, acme, text, timezone=timezone)
        assert (refused.value.field, refused.value.value) == (field, text if field == "schedule" else timezone)
        assert refused.value.expected
    with db.transaction(write=False) as tx:
        assert cron.list_cron_jobs(tx, acme.scope) == []


@pytest.mark.slow  # two schedulers, each on its own Database, over 200 due jobs
def test_two_schedulers_racing_over_200_due_jobs_fire_each_exactly_once(db: Database, acme: Tenant) -> None:
    with db.transaction() as tx:
        jobs = [cron.create_cron_job(tx, acme.scope, acme.bot.id, created_by="1001",  # type: ignore[union-attr]
                                     schedule="every 1h", payload={"message": "x"}, at=T0) for _ in range(200)]
    clock = Clock(T0 + timedelta(hours=1, seconds=1))
    fired: list[str] = []
    lock = threading.Lock()
    barrier = threading.Barrier(2)

    async def count(claim: Claim) -> CronRun:
        with lock:
            fired.append(claim.job.id)
        return claim.run

    def race() -> None:
        own = Database(db.url)
        try:
            ticker = Scheduler(own, count, clock=clock)
            ticker.settings = type(ticker.settings)(batch_size=7)
            barrier.wait()
            while asyncio.run(ticker.tick()):
                pass
        finally:
            own.dispose()

    threads = [threading.Thread(target=race) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert sorted(fired) == sorted(job.id for job in jobs)
    with db.transaction(write=False) as tx:
        assert tx.scalar("SELECT count(*) FROM cron_runs") == 200
        assert tx.scalar("SELECT count(DISTINCT job_id) FROM cron_runs") == 200


@pytest.mark.slow  # the real clock: an `every 1s` job fires within about two seconds of the server starting
def test_the_server_with_its_workers_runs_the_scheduler_on_the_real_clock(db: Database, acme: Tenant,
                                                                          tmp_path: Path) -> None:
    application = create_app(db, signing_secret=b"s" * 32, run_workers=True, workspace_root=tmp_path)
    with db.transaction() as tx:
        job = cron.create_cron_job(tx, acme.scope, acme.bot.id, created_by="1001",  # type: ignore[union-attr]
                                   schedule="every 1s", payload={"message": "tick"})
    with TestClient(application):
        deadline = time.monotonic() + 20
        while not [r for r in runs(db, acme, job) if r.outcome == "ok"] and time.monotonic() < deadline:
            time.sleep(0.1)
    assert [r for r in runs(db, acme, job) if r.outcome == "ok"]


def test_jobs_from_before_validation_are_scheduled_at_the_first_pass_or_disabled_saying_why(
        db: Database, runtime: Runtime, acme: Tenant) -> None:
    clock = Clock(T0)
    good, bad = schedule(db, acme, "0 9 * * *"), schedule(db, acme, "every 1m")
    with db.transaction() as tx:  # as migration 0013 leaves rows written before it
        tx.execute("UPDATE cron_jobs SET next_run_at = NULL")
        tx.execute("UPDATE cron_jobs SET schedule = 'whenever' WHERE id = :id", {"id": bad.id})
    assert run(scheduler(db, runtime, clock).tick()) == []
    assert job_now(db, acme, good).next_run_at == "2026-12-02T09:00:00.000000Z"
    after = job_now(db, acme, bad)
    assert (after.enabled, after.next_run_at) == (False, None)
    (skipped,) = runs(db, acme, bad)
    assert skipped.outcome == "skipped" and skipped.error is not None and "'whenever'" in skipped.error
