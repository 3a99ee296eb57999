"""``agentfy cron``: an organization's cron jobs and their runs, straight from the database.

For the operator of the installation, who has the database and may not have an API key: the same
repositories as ``/v1/cron-jobs`` (:mod:`agentfy.store.repos.cron`), so ``pause``/``resume`` follow the same
rules (resuming schedules the next slot after now) and ``run`` fires the job exactly as the scheduler does
(:class:`agentfy.runtime.scheduler.Firing`: as its creator, checked now), recording the run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Annotated, TypeVar

import typer

from agentfy.cli.common import fail_usage, open_database, out, resolve_settings
from agentfy.cli.options import DatabaseUrlOption
from agentfy.cli.usage import table
from agentfy.identity import InvalidAgentKeyError, InvalidIdError, Scope
from agentfy.store.db import Database, Tx
from agentfy.store.errors import InvalidInputError, NotFoundError
from agentfy.store.repos import agents, cron, orgs
from agentfy.store.repos.cron import CronJob, CronRun

T = TypeVar("T")

group = typer.Typer(help="Cron jobs: list them, their runs, run one now, pause and resume (see docs/cron.md). "
                         "The scheduler itself runs in `agentfy serve` and `agentfy worker`.",
                    no_args_is_help=True)

OrgOption = Annotated[str, typer.Option("--org", help="The organization's slug.")]
JobArgument = Annotated[str, typer.Argument(help="The cron job's ID (cron-job-…).")]


def _in_org(db: Database, org: str, work: Callable[[Tx, Scope], T], *, write: bool = False) -> T:
    """``work`` in the organization ``org``; an unknown organization, agent or job, or a bad value, is a usage
    error (exit 2) naming it."""
    with db.transaction(write=write) as tx:
        try:
            return work(tx, Scope(orgs.get_organization_by_slug(tx, org).id))
        except NotFoundError as error:
            raise fail_usage(f"there is no {error.entity} {error.ref!r} in organization {org!r}") from None
        except (InvalidInputError, InvalidIdError, InvalidAgentKeyError) as error:
            raise fail_usage(str(error)) from None


def _print_jobs(jobs: list[CronJob]) -> None:
    header = ("id", "agent_id", "schedule", "timezone", "enabled", "next_run_at", "last_run_at", "created_by")
    rows = [(j.id, j.agent_id, j.schedule, j.timezone, "yes" if j.enabled else "no", j.next_run_at or "-",
             j.last_run_at or "-", j.created_by) for j in jobs]
    out.print(table(header, rows), highlight=False, markup=False, soft_wrap=True)


def _print_runs(runs: list[CronRun]) -> None:
    header = ("due_at", "cause", "outcome", "ended_at", "session_key", "error")
    rows = [(r.due_at, r.cause, r.outcome, r.ended_at or "-", r.session_key or "-", r.error or "") for r in runs]
    out.print(table(header, rows), highlight=False, markup=False, soft_wrap=True)


@group.command("list")
def list_jobs(
    org: OrgOption,
    agent: Annotated[str | None, typer.Option("--agent", help="Only this agent's jobs (its agent_key or ID).")] = None,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Print the organization's cron jobs, oldest first, with their next and last run (UTC)."""
    db = open_database(database_url)
    try:
        def jobs(tx: Tx, scope: Scope) -> list[CronJob]:
            agent_id = None if agent is None else agents.resolve_agent(tx, scope, agent).id
            return cron.list_cron_jobs(tx, scope, agent_id)

        _print_jobs(_in_org(db, org, jobs))
    finally:
        db.dispose()


@group.command("runs")
def list_runs(org: OrgOption, job: JobArgument, database_url: DatabaseUrlOption = None) -> None:
    """Print a job's runs, oldest due first: cause, outcome (ok, failed, denied, skipped, running), the
    session it spoke in and why it failed or was denied."""
    db = open_database(database_url)
    try:
        def runs(tx: Tx, scope: Scope) -> list[CronRun]:
            cron.get_cron_job(tx, scope, job)
            return cron.list_cron_runs(tx, scope, job)

        _print_runs(_in_org(db, org, runs))
    finally:
        db.dispose()


def _set_enabled(org: str, job: str, enabled: bool, database_url: str | None) -> None:
    db = open_database(database_url)
    try:
        _print_jobs([_in_org(db, org, lambda tx, scope: cron.set_cron_job_enabled(tx, scope, job, enabled),
                             write=True)])
    finally:
        db.dispose()


@group.command("pause")
def pause(org: OrgOption, job: JobArgument, database_url: DatabaseUrlOption = None) -> None:
    """Pause a job: it does not fire until resumed."""
    _set_enabled(org, job, False, database_url)


@group.command("resume")
def resume(org: OrgOption, job: JobArgument, database_url: DatabaseUrlOption = None) -> None:
    """Resume a job: its next run is the next slot after now (never the slots it was paused through); a
    one-shot job whose time has passed cannot be resumed (exit 2)."""
    _set_enabled(org, job, True, database_url)


@group.command("run")
def run_now(org: OrgOption, job: JobArgument, database_url: DatabaseUrlOption = None) -> None:
    """Run a job now, paused or not, as its schedule would (as its creator, whose right is checked now), and
    print the run; its schedule does not move.  Exit 1 when the run failed or was denied."""
    # Imported here, not for every command: the runtime loads its model providers (see `agentfy chat`).
    from agentfy.agents.router import Router  # noqa: PLC0415
    from agentfy.gateway.app import default_workspace_root  # noqa: PLC0415
    from agentfy.keys import credentials_cipher  # noqa: PLC0415
    from agentfy.runtime.providers import Providers  # noqa: PLC0415
    from agentfy.runtime.runner import Runtime  # noqa: PLC0415
    from agentfy.runtime.scheduler import Firing  # noqa: PLC0415

    settings = resolve_settings(database_url=database_url)
    db = open_database(None, settings=settings)
    try:
        claim = _in_org(db, org, lambda tx, scope: cron.start_manual_run(tx, scope, job), write=True)
        providers = Providers(cipher=credentials_cipher(settings, db.url, create=False, required=False))
        runtime = Runtime(db, Router(db), workspace_root=settings.workspace_root or default_workspace_root(db),
                          providers=providers)

        async def fire() -> CronRun:
            try:
                return await Firing(db, runtime)(claim)
            finally:
                await runtime.providers.aclose()

        try:
            ended = asyncio.run(fire())
        finally:
            runtime.close()
        _print_runs([ended])
    finally:
        db.dispose()
    if ended.outcome != "ok":
        raise typer.Exit(1)
