"""``agentfy cron``: list, pause, resume, run now and the runs, in one organization (both engines); an unknown
organization or another organization's job is a usage error, and the scheduler runs in ``agentfy worker``."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentfy.cli import app
from agentfy.store.db import Database
from agentfy.store.repos import cron
from tests.helpers.tenants import make_tenant

runner = CliRunner()


def test_the_cli_lists_pauses_resumes_runs_and_shows_the_runs(db_url: str) -> None:
    db = Database(db_url)
    try:
        acme = make_tenant(db, "acme", agent_key="bot")
        make_tenant(db, "globex", agent_key="bot")
        assert acme.bot is not None
        with db.transaction() as tx:
            job = cron.create_cron_job(tx, acme.scope, acme.bot.id, created_by="1001", schedule="every 1h",
                                       payload={"message": "report"})
        base = ["--database-url", db_url]
        listed = runner.invoke(app, ["cron", "list", "--org", "acme", *base])
        assert listed.exit_code == 0 and job.id in listed.output and "every 1h" in listed.output
        assert job.id not in runner.invoke(app, ["cron", "list", "--org", "globex", *base]).output
        foreign = runner.invoke(app, ["cron", "pause", job.id, "--org", "globex", *base])
        assert foreign.exit_code == 2 and "cron job" in foreign.output
        paused = runner.invoke(app, ["cron", "pause", job.id, "--org", "acme", *base])
        assert paused.exit_code == 0 and " no " in paused.output
        resumed = runner.invoke(app, ["cron", "resume", job.id, "--org", "acme", *base])
        assert resumed.exit_code == 0 and " yes " in resumed.output
        ran = runner.invoke(app, ["cron", "run", job.id, "--org", "acme", *base])
        assert ran.exit_code == 0, ran.output
        assert "manual" in ran.output and "ok" in ran.output
        runs = runner.invoke(app, ["cron", "runs", job.id, "--org", "acme", *base])
        assert runs.exit_code == 0 and "manual" in runs.output
        assert runner.invoke(app, ["cron", "runs", job.id, "--org", "nope", *base]).exit_code == 2
        with db.transaction(write=False) as tx:
            assert [r.outcome for r in cron.list_cron_runs(tx, acme.scope, job.id)] == ["ok"]
    finally:
        db.dispose()


def test_the_worker_once_fires_what_is_due(db_url: str) -> None:
    db = Database(db_url)
    try:
        acme = make_tenant(db, "acme", agent_key="bot")
        assert acme.bot is not None
        with db.transaction() as tx:
            job = cron.create_cron_job(tx, acme.scope, acme.bot.id, created_by="1001", schedule="every 1s",
                                       payload={"message": "tick"})
            tx.execute("UPDATE cron_jobs SET next_run_at = '2000-01-01T00:00:00.000000Z'")
        worked = runner.invoke(app, ["worker", "--once", "--database-url", db_url])
        assert worked.exit_code == 0, worked.output
        with db.transaction(write=False) as tx:
            assert [r.outcome for r in cron.list_cron_runs(tx, acme.scope, job.id)] == ["ok"]
    finally:
        db.dispose()


def test_the_worker_claims_as_many_jobs_in_a_pass_as_the_scheduler_batch_size_says(
        db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    db = Database(db_url)
    try:
        acme = make_tenant(db, "acme", agent_key="bot")
        assert acme.bot is not None
        with db.transaction() as tx:
            for _ in range(5):
                cron.create_cron_job(tx, acme.scope, acme.bot.id, created_by="1001", schedule="every 1h",
                                     payload={"message": "tick"})
            tx.execute("UPDATE cron_jobs SET next_run_at = '2000-01-01T00:00:00.000000Z'")
        monkeypatch.setenv("AGENTFY_SCHEDULER_BATCH_SIZE", "2")
        worked = runner.invoke(app, ["worker", "--once", "--database-url", db_url])
        assert worked.exit_code == 0, worked.output
        with db.transaction(write=False) as tx:  # one pass of --once: one batch of 2, the rest still due
            assert tx.scalar("SELECT count(*) FROM cron_runs WHERE outcome = 'ok'") == 2
            assert tx.scalar("SELECT count(*) FROM cron_jobs WHERE next_run_at = '2000-01-01T00:00:00.000000Z'") == 3
    finally:
        db.dispose()


def test_the_worker_refuses_a_bad_scheduler_setting_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTFY_SCHEDULER_BATCH_SIZE", "0")
    refused = runner.invoke(app, ["worker", "--once", "--database-url", f"sqlite:///{tmp_path / 'a.db'}"])
    assert refused.exit_code == 2
    assert "scheduler.batch_size '0': Input should be greater than or equal to 1" in refused.output
    assert not (tmp_path / "a.db").exists()  # refused before anything was opened
