"""The ``agentfy`` command: minting, checking and explaining IDs (and, as they land, serving and operating).

Exit statuses are part of the contract: ``agentfy id check`` exits 0 for a valid ID and 1 for an invalid one,
so scripts can use it as a predicate; usage errors exit 2 (Typer's convention).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import sqlalchemy as sa
import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from agentfy.cutover.detect import LegacyDatabaseError
from agentfy.events import admin
from agentfy.events.settings import BusSettings
from agentfy.gateway.bootstrap import refuse_a_legacy_database
from agentfy.ids import (
    ID_ENTITIES,
    PRODUCTS,
    explain_id,
    format_id,
    is_id,
)
from agentfy.ids.explain import IdExplanation
from agentfy.ids.registry import UnknownPrefixError
from agentfy.ids.validate import UnknownProductError
from agentfy.store.db import DATABASE_URL_ENV, Database
from agentfy.store.db import database_url as resolve_database_url
from agentfy.store.errors import StoreError
from agentfy.store.input_scan import scan_inputs
from agentfy.store.migrate import current_revision, head_revision, upgrade
from agentfy.store.orphans import IdColumn, id_columns, scan
from agentfy.store.pool import MAX_OVERFLOW_ENV, POOL_SIZE_ENV, POOL_TIMEOUT_ENV, PoolSettings
from agentfy.store.repos.orgs import ensure_platform_organization

app = typer.Typer(
    name="agentfy",
    help="Identity core of the agentfy platform: canonical IDs, tenant-scoped storage and the gateway.",
    no_args_is_help=True,
    add_completion=False,
)
id_app = typer.Typer(
    help="Mint, check and explain IDs of the form <prefix>-<adjective>-<noun>-<12 Crockford base32>.",
    no_args_is_help=True,
)
app.add_typer(id_app, name="id")
db_app = typer.Typer(
    help="The database: migrations and the orphan scan. The URL comes from --database-url, else "
         "$AGENTFY_DATABASE_URL, else the embedded SQLite file ./var/agentfy.db.",
    no_args_is_help=True,
)
app.add_typer(db_app, name="db")

events_app = typer.Typer(help="The durable event bus: stats, dead letters, requeues and pruning.",
                         no_args_is_help=True)
app.add_typer(events_app, name="events")
admin_app = typer.Typer(help="Platform administration: the platform-admin API key.", no_args_is_help=True)
app.add_typer(admin_app, name="admin")
cutover_app = typer.Typer(
    help="The ID cutover: every legacy identity (bare UUIDs, retired organization-… prefixes) to its canonical "
         "ID, in one verified transaction. See docs/cutover.md.",
    no_args_is_help=True)
app.add_typer(cutover_app, name="cutover")

PoolSizeOption = Annotated[int | None, typer.Option(
    "--db-pool-size", envvar=POOL_SIZE_ENV, show_envvar=True, min=1,
    help="Idle database connections each process keeps [default: 8].")]
PoolOverflowOption = Annotated[int | None, typer.Option(
    "--db-max-overflow", envvar=MAX_OVERFLOW_ENV, show_envvar=True, min=0,
    help="More connections each process may open under load, closed when returned [default: 12].")]
PoolTimeoutOption = Annotated[float | None, typer.Option(
    "--db-pool-timeout", envvar=POOL_TIMEOUT_ENV, show_envvar=True, min=0.1,
    help="Seconds a request waits for a free connection before answering 503 [default: 10].")]
DatabaseUrlOption = Annotated[str | None, typer.Option(
    "--database-url", envvar="AGENTFY_DATABASE_URL", show_envvar=True,
    help="sqlite:///PATH or postgresql+psycopg://USER@HOST/DB (default: sqlite:///var/agentfy.db).")]

out = Console()
err = Console(stderr=True)

_PREFIXES_HELP = ", ".join(sorted(ID_ENTITIES.values()))


def _fail_usage(message: str) -> typer.Exit:
    err.print(f"[red]error:[/red] {message}", highlight=False)
    return typer.Exit(2)


@id_app.command("new")
def id_new(
    prefix: Annotated[str, typer.Argument(help=f"The entity's registered prefix: {_PREFIXES_HELP}.")],
    count: Annotated[int, typer.Option("--count", "-n", min=1, max=10_000_000,
                                       help="How many IDs to mint, one per line.")] = 1,
) -> None:
    """Mint new canonical IDs from the OS CSPRNG."""
    try:
        first = format_id(prefix)
    except UnknownPrefixError:
        raise _fail_usage(f"{prefix!r} is not a registered prefix; expected one of: {_PREFIXES_HELP}") from None
    write = sys.stdout.write
    write(first + "\n")
    for _ in range(count - 1):
        write(format_id(prefix) + "\n")


def _explain_or_exit(value: str, prefix: str | None, product: str) -> IdExplanation:
    try:
        return explain_id(value, prefix, product=product)
    except UnknownPrefixError:
        raise _fail_usage(f"--prefix {prefix!r} is not a registered prefix; expected one of: "
                          f"{_PREFIXES_HELP}") from None
    except UnknownProductError:
        raise _fail_usage(f"--product {product!r} is unknown; expected one of: {', '.join(PRODUCTS)}") from None
    except ValueError as error:  # a malformed prefix for another product
        raise _fail_usage(str(error)) from None


@id_app.command("check")
def id_check(
    value: Annotated[str, typer.Argument(help="The value to check, exactly as stored or sent (quote it).")],
    prefix: Annotated[str | None, typer.Option(help="Require this prefix (entity), e.g. 'agent'.")] = None,
    product: Annotated[str, typer.Option(help=f"Whose legacy formats count: {', '.join(PRODUCTS)}.")] = "agentfy",
    as_json: Annotated[bool, typer.Option("--json", help="Print the verdict as JSON.")] = False,
) -> None:
    """Check one value: exit 0 if it is a valid ID, 1 (with the reason) if not."""
    report = _explain_or_exit(value, prefix, product)
    if as_json:
        out.print_json(json.dumps(report.as_dict()))
    elif report.valid:
        model = f" ({report.model})" if report.model else ""
        out.print(f"[green]valid[/green]: {report.format} ID{model}", highlight=False)
    else:
        expected = f" {prefix}" if prefix else ""
        out.print(f"[red]invalid[/red]{expected} ID {value!r}:", highlight=False)
        for problem in report.problems:
            out.print(f"  - {problem}", highlight=False)
    raise typer.Exit(0 if report.valid else 1)


@id_app.command("explain")
def id_explain(
    value: Annotated[str, typer.Argument(help="The value to explain (quote it).")],
) -> None:
    """Explain a value: its format, prefix and model, words, suffix, and which products accept it."""
    report = _explain_or_exit(value, None, "agentfy")
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    table.add_row("value", repr(value))
    table.add_row("valid", "[green]yes[/green]" if report.valid else "[red]no[/red]")
    if report.format:
        table.add_row("format", f"{report.format}: {report.format_description}")
    if report.prefix:
        table.add_row("prefix", f"{report.prefix} (model {report.model})")
    if report.words:
        table.add_row("words", " ".join(report.words))
    if report.suffix:
        table.add_row("suffix", report.suffix)
    table.add_row("accepted by", ", ".join(report.accepted_by) or "no product")
    for problem in report.problems:
        table.add_row("problem", problem)
    out.print(table, highlight=False)


def _pool_settings(size: int | None, overflow: int | None, timeout: float | None) -> PoolSettings:
    """The pool settings: the options (which Typer already read from the environment), else the defaults;
    exported to the environment so every process ``serve`` starts uses the same."""
    try:
        defaults = PoolSettings()
        settings = PoolSettings(size if size is not None else defaults.size,
                                overflow if overflow is not None else defaults.overflow,
                                timeout if timeout is not None else defaults.timeout)
    except ValueError as error:
        raise _fail_usage(str(error)) from None
    os.environ[POOL_SIZE_ENV], os.environ[MAX_OVERFLOW_ENV] = str(settings.size), str(settings.overflow)
    os.environ[POOL_TIMEOUT_ENV] = str(settings.timeout)
    return settings


def _open_database(url: str | None, *, migrated: bool = True, pool: PoolSettings | None = None) -> Database:
    """The database; with ``migrated``, refuse (exit 1, with what to do) one that is behind the migrations."""
    try:
        db = Database(url, pool=pool)
    except ValueError as error:
        raise _fail_usage(str(error)) from None
    if migrated:
        try:
            current, head = current_revision(db), head_revision(db)
        except Exception:
            db.dispose()
            err.print(f"[red]error:[/red] cannot read the schema revision of {db.display_url}", highlight=False)
            raise typer.Exit(1) from None
        if current != head:
            db.dispose()
            err.print(f"[red]error:[/red] {db.display_url} is at schema revision {current or '(none)'}, the newest "
                      f"is {head}: run `agentfy db upgrade` first", highlight=False)
            raise typer.Exit(1)
    return db


@db_app.command("upgrade")
def db_upgrade(database_url: DatabaseUrlOption = None) -> None:
    """Apply every migration (SQLite and PostgreSQL alike) and create the platform organization."""
    db = _open_database(database_url, migrated=False)
    try:
        before = current_revision(db)
        upgrade(db)
        after = current_revision(db)
        moved = "already at" if before == after else f"{before or 'empty'} ->"
        out.print(f"{db.display_url}: {moved} revision {after}", highlight=False, soft_wrap=True)
        try:
            refuse_a_legacy_database(db)
        except LegacyDatabaseError as error:
            out.print(f"note: {error}", highlight=False, soft_wrap=True)
            return
        with db.transaction() as tx:
            platform, created = ensure_platform_organization(tx)
        out.print(f"platform organization {platform.id} ({'created' if created else 'present'})",
                  highlight=False, soft_wrap=True)
    finally:
        db.dispose()


@db_app.command("current")
def db_current(database_url: DatabaseUrlOption = None) -> None:
    """Print the database's migration revision and whether it is the newest; exit 1 if it is behind."""
    db = _open_database(database_url, migrated=False)
    try:
        current, head = current_revision(db), head_revision(db)
        out.print(f"revision {current or '(none)'}; newest {head}", highlight=False)
        raise typer.Exit(0 if current == head else 1)
    finally:
        db.dispose()


@db_app.command("seed")
def db_seed(database_url: DatabaseUrlOption = None) -> None:
    """Add development fixtures (organization 'demo', two agents, a team, an owner key shown once).

    Refuses a database that still holds legacy IDs: run the cutover first, or the seed would create a second
    platform organization next to the legacy one instead of the one the cutover produces.
    """
    from agentfy.cutover.detect import has_legacy_identities, legacy_identities  # noqa: PLC0415
    from agentfy.identity import Scope  # noqa: PLC0415
    from agentfy.store.errors import ConflictError  # noqa: PLC0415
    from agentfy.store.repos import agents, api_keys, orgs, teams  # noqa: PLC0415

    db = _open_database(database_url)
    try:
        legacy = legacy_identities(db) if has_legacy_identities(db) else {}
        if legacy:
            summary = ", ".join(f"{table}: {count}" for table, count in sorted(legacy.items()))
            err.print(f"[red]error:[/red] the database still holds legacy IDs ({summary}); run the ID cutover "
                      "first, then seed", highlight=False, soft_wrap=True)
            raise typer.Exit(1)
        try:
            with db.transaction() as tx:
                orgs.ensure_platform_organization(tx)
                demo = Scope(orgs.create_organization(tx, slug="demo", name="Demo").id)
                helper = agents.create_agent(tx, demo, agent_key="helper", display_name="Helper")
                agents.create_agent(tx, demo, agent_key="researcher", display_name="Researcher")
                teams.create_team(tx, demo, name="Core", lead_agent_id=helper.id)
                key = api_keys.create_api_key(tx, demo, name="demo owner", role="owner").key
        except ConflictError:
            out.print("already seeded: organization 'demo' exists")
            return
    finally:
        db.dispose()
    out.print(f"seeded organization demo ({demo.tenant_id}); owner API key (shown once):", highlight=False)
    out.print(key, highlight=False, soft_wrap=True)


@db_app.command("scan-orphans")
def db_scan_orphans(
    database_url: DatabaseUrlOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the findings as JSON.")] = False,
) -> None:
    """Report ID columns whose values are empty, the nil UUID, invalid, or point at nothing; exit 1 if any."""
    db = _open_database(database_url)
    columns = id_columns()
    try:
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=err, transient=True, disable=as_json) as progress:
            task = progress.add_task("scanning", total=len(columns))

            def advance(column: IdColumn) -> None:
                progress.update(task, advance=1, description=f"{column.table}.{column.column}")

            findings = scan(db, progress=advance)
    finally:
        db.dispose()
    if as_json:
        out.print_json(json.dumps([{"table": f.table, "column": f.column, "problem": f.problem, "count": f.count,
                                    "examples": f.examples} for f in findings]))
    elif not findings:
        out.print(f"no orphans: {len(columns)} ID columns checked")
    else:
        table = Table("table", "column", "problem", "rows", "examples")
        for f in findings:
            table.add_row(f.table, f.column, f.problem, str(f.count), ", ".join(f.examples))
        out.print(table)
    raise typer.Exit(1 if findings else 0)


@db_app.command("scan")
def db_scan(
    database_url: DatabaseUrlOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the findings as JSON.")] = False,
) -> None:
    """Report stored values that break the input policy — a NUL in text; a JSON document too deep, with a lone
    surrogate or a number beyond 64 bits, or not JSON — by table, row and column; exit 1 if any.

    Such rows were written before the policy existed; reads still serve them (marked where they cannot be
    shown). Also run `agentfy db scan-orphans` for ID columns."""
    db = _open_database(database_url)
    try:
        with Progress(TextColumn("{task.description}"), console=err, transient=True, disable=as_json) as progress:
            task = progress.add_task("scanning")
            findings = list(scan_inputs(db, progress=lambda name: progress.update(task, description=name)))
    finally:
        db.dispose()
    if as_json:
        out.print_json(json.dumps([{"table": f.table, "row": f.row, "column": f.column, "problem": f.problem}
                                   for f in findings]))
    elif not findings:
        out.print("no stored value breaks the input policy")
    else:
        table = Table("table", "row", "column", "problem")
        for f in findings:
            table.add_row(f.table, f.row, f.column, f.problem)
        out.print(table)
    raise typer.Exit(1 if findings else 0)


def _dead_letter_filter(*, event_type: str | None, reason: str | None, tenant: str | None, older_than: str | None,
                        newer_than: str | None, event_id: str | None = None) -> admin.DeadLetterFilter:
    """The filter of the options, or a usage error (exit 2) naming the bad value."""
    try:
        return admin.DeadLetterFilter(
            event_type=event_type, reason=reason, tenant_id=tenant, event_id=event_id,
            older_than=admin.parse_age(older_than, field="--older-than") if older_than is not None else None,
            newer_than=admin.parse_age(newer_than, field="--newer-than") if newer_than is not None else None)
    except ValueError as error:  # InvalidIdError, InvalidInputError
        raise _fail_usage(str(error)) from None


TypeFilter = Annotated[str | None, typer.Option("--type", help="Only events of this type (exact).")]
ReasonFilter = Annotated[str | None, typer.Option(help="Only those whose last error contains this (any case).")]
TenantFilter = Annotated[str | None, typer.Option(help="Only events of this tenant (an org-… ID).")]
OlderFilter = Annotated[str | None, typer.Option(help="Only those dead-lettered at least this long ago (90s, 15m, "
                                                      "2h, 3d, 1w).")]
NewerFilter = Annotated[str | None, typer.Option(help="Only those dead-lettered at most this long ago.")]


@events_app.command("dead-letters")
def events_dead_letters(
    database_url: DatabaseUrlOption = None,
    event_type: TypeFilter = None,
    reason: ReasonFilter = None,
    tenant: TenantFilter = None,
    older_than: OlderFilter = None,
    newer_than: NewerFilter = None,
    limit: Annotated[int, typer.Option(min=1, max=admin.MAX_PAGE, help="Events per page.")] = 50,
    after: Annotated[str | None, typer.Option(help="The cursor printed after the previous page.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the page as JSON: {letters, next_cursor}.")] = False,
) -> None:
    """List events that were given up on, oldest first, a page at a time (after their last attempt, at once
    for an invalid ID, or after their worker kept stopping)."""
    selection = _dead_letter_filter(event_type=event_type, reason=reason, tenant=tenant, older_than=older_than,
                                    newer_than=newer_than)
    db = _open_database(database_url)
    try:
        page = admin.dead_letters(db, selection, limit=limit, cursor=after)
    except ValueError as error:  # a cursor this command did not print
        raise _fail_usage(str(error)) from None
    finally:
        db.dispose()
    if as_json:
        out.print_json(json.dumps({"letters": [
            {"id": d.event.id, "type": d.event.type, "tenant_id": d.event.tenant_id, "agent_id": d.event.agent_id,
             "source_id": d.event.source_id, "attempts": d.attempts, "last_error": d.last_error,
             "finished_at": d.finished_at} for d in page.letters], "next_cursor": page.next_cursor}))
        return
    if not page.letters:
        out.print("no dead letters" + (" match" if selection.shape() else ""))
        return
    table = Table("event", "type", "tenant", "agent", "attempts", "dead since", "last error")
    for d in page.letters:
        table.add_row(d.event.id, d.event.type, d.event.tenant_id, d.event.agent_id or "", str(d.attempts),
                      d.finished_at or "", d.last_error or "")
    out.print(table)
    if page.next_cursor:
        out.print(f"more: --after {page.next_cursor}", highlight=False, soft_wrap=True)


@events_app.command("requeue")
def events_requeue(
    event_id: Annotated[str | None, typer.Argument(help="One dead event's ID (domain-event-…).")] = None,
    database_url: DatabaseUrlOption = None,
    event_type: TypeFilter = None,
    reason: ReasonFilter = None,
    tenant: TenantFilter = None,
    older_than: OlderFilter = None,
    newer_than: NewerFilter = None,
    requeue_all: Annotated[bool, typer.Option("--all", help="Every dead letter (needed when no ID or filter "
                                                           "is given).")] = False,
) -> None:
    """Give dead events a fresh set of attempts once their cause is fixed: one by ID, or every one matching the
    filters; exit 1 if none matched."""
    if event_id is not None and not is_id(event_id, "domain-event"):
        raise _fail_usage(f"{event_id!r} is not an event ID (expected domain-event-<adjective>-<noun>-<suffix>)")
    selection = _dead_letter_filter(event_type=event_type, reason=reason, tenant=tenant, older_than=older_than,
                                    newer_than=newer_than, event_id=event_id)
    if not selection.shape() and not requeue_all:
        raise _fail_usage("name an event ID, give a filter (--type, --reason, --tenant, --older-than, --newer-than) "
                          "or pass --all to requeue every dead letter")
    db = _open_database(database_url)
    try:
        requeued = admin.requeue(db, selection)
    finally:
        db.dispose()
    if event_id is not None and not requeued:
        out.print(f"{event_id} is not a dead letter" + (" matching the filters" if len(selection.shape()) > 1 else ""),
                  highlight=False)
    else:
        out.print(f"requeued {event_id}" if event_id is not None else f"requeued {requeued} dead letters",
                  highlight=False)
    raise typer.Exit(0 if requeued else 1)


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f}{unit}"
    return f"{seconds:.1f}s"


@events_app.command("stats")
def events_stats(
    database_url: DatabaseUrlOption = None,
    days: Annotated[int, typer.Option(min=1, max=366, help="Days of durable counters to show.")] = 7,
    as_json: Annotated[bool, typer.Option("--json", help="Print them as JSON.")] = False,
) -> None:
    """The outbox now (lag: due and waiting; pending; processing; dead; handled and kept; the oldest due
    event's age) and the durable counters per UTC day (observer warnings, dead letters)."""
    db = _open_database(database_url)
    try:
        stats = admin.stats(db, days=days)
    finally:
        db.dispose()
    if as_json:
        out.print_json(json.dumps(stats.as_dict()))
        return
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    for label, value in (("lag (due, waiting)", str(stats.lag)), ("pending (incl. delayed)", str(stats.pending)),
                         ("processing", str(stats.processing)), ("dead", str(stats.dead)),
                         ("done (kept)", str(stats.done)),
                         ("oldest pending age", _age(stats.oldest_pending_age_seconds))):
        table.add_row(label, value)
    out.print(table)
    if not stats.daily:
        out.print(f"no warnings or dead letters in the last {days} days")
        return
    names = sorted({name for counts in stats.daily.values() for name in counts})
    per_day = Table("day (UTC)", *names)
    for day, counts in sorted(stats.daily.items()):
        per_day.add_row(day, *(str(counts.get(name, 0)) for name in names))
    out.print(per_day)


@events_app.command("prune")
def events_prune(
    database_url: DatabaseUrlOption = None,
    older_than_days: Annotated[float | None, typer.Option(
        help="Delete events handled more than this many days ago (default: the retention_days setting, "
             "$AGENTFY_EVENTS_RETENTION_DAYS).")] = None,
) -> None:
    """Delete handled events past their retention now (workers also do it hourly). Dead letters and
    unhandled events are kept."""
    days = older_than_days if older_than_days is not None else _bus_settings().retention_days
    if days < 0:
        raise _fail_usage(f"--older-than-days {days!r} must not be negative")
    db = _open_database(database_url)
    try:
        deleted = admin.prune(db, older_than_days=days)
    finally:
        db.dispose()
    out.print(f"pruned {deleted} events handled more than {days:g} days ago", highlight=False)


@cutover_app.command("run")
def cutover_run(
    database_url: DatabaseUrlOption = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Do everything, print what would change per table and column, then roll back: the "
                          "database is left identical.")] = False,
    backup: Annotated[Path | None, typer.Option(
        "--backup", dir_okay=False, help="Where to write the backup of the starting state (default: "
                                         "<database file>.pre-cutover-<time>.sqlite3 beside a SQLite database, "
                                         "./<database>-pre-cutover-<time>.dump for PostgreSQL).")] = None,
    credentials_key_file: Annotated[Path | None, typer.Option(
        "--credentials-key-file", exists=True, dir_okay=False,
        help="The credentials key (base64 of 32 bytes) if $AGENTFY_CREDENTIALS_KEY is not set; needed when "
             "an organization whose ID changes has credentials.")] = None,
    lock_timeout: Annotated[float, typer.Option(
        min=0.0, help="Seconds to wait for other writers' locks before refusing.")] = 5.0,
    progress_interval: Annotated[float, typer.Option(
        min=0.0, help="When stderr is not a terminal: seconds between progress lines.")] = 5.0,
) -> None:
    """Rewrite every legacy ID and every reference to it, in one transaction.

    Stop the server and workers first: the cutover refuses to run while other sessions are connected
    (PostgreSQL) or another connection is writing (SQLite). It backs up the starting state, restores the
    backup into a scratch database and compares it table by table before it writes anything. Running it
    again changes nothing.
    """
    from agentfy.cutover.console import LineProgress, RichProgress, print_report  # noqa: PLC0415
    from agentfy.cutover.errors import CutoverError  # noqa: PLC0415
    from agentfy.cutover.run import CutoverOptions, run_cutover  # noqa: PLC0415
    from agentfy.store.repos.credentials import KEY_ENV, CredentialCipher  # noqa: PLC0415

    # Not a Database: opening one would set WAL on a SQLite file (and create its directory) before the
    # cutover's own checks could refuse; the engine checks the schema revision itself, read-only.
    try:
        url = sa.engine.make_url(resolve_database_url(database_url))
    except sa.exc.ArgumentError:
        raise _fail_usage(f"{database_url!r} is not a database URL") from None
    dialect = url.get_backend_name()
    cipher = None
    try:
        if credentials_key_file is not None:
            cipher = CredentialCipher(_read_key_file(credentials_key_file))
        elif os.environ.get(KEY_ENV):
            cipher = CredentialCipher.from_env()
    except (StoreError, ValueError) as error:
        raise _fail_usage(str(error)) from None
    if backup is None and not dry_run:
        backup = _default_backup_path(url, dialect)
    options = CutoverOptions(dry_run=dry_run, backup=backup, cipher=cipher, lock_timeout_seconds=lock_timeout)
    try:
        lines = LineProgress(lambda line: err.print(line, highlight=False, soft_wrap=True), progress_interval)
        with RichProgress(err) if err.is_terminal else lines as progress:
            report = run_cutover(url.render_as_string(hide_password=False), options, progress)
    except CutoverError as error:
        err.print(f"[red]error:[/red] {error}", highlight=False, soft_wrap=True)
        err.print("rolled back: the database is as it was", highlight=False)
        raise typer.Exit(1) from None
    print_report(report, out)


@cutover_app.command("unfence")
def cutover_unfence(
    database_url: DatabaseUrlOption = None,
    timeout: Annotated[float, typer.Option(min=0.0, help="Seconds to wait for the cutover's session to end.")] = 5.0,
) -> None:
    """Let connections into a PostgreSQL database again after a cutover was killed (SIGKILL, power loss).

    A running cutover refuses new connections to its database and lifts that when it ends, whatever the
    outcome; only a kill leaves it in place. The next `cutover run` lifts it too. Refuses while the cutover
    that set it is still running. Nothing to do on SQLite (its lock ends with the process).
    """
    from agentfy.cutover.errors import CutoverError  # noqa: PLC0415
    from agentfy.cutover.fence import unfence  # noqa: PLC0415

    url = resolve_database_url(database_url)
    try:
        lifted = unfence(url, timeout)
    except CutoverError as error:
        err.print(f"[red]error:[/red] {error}", highlight=False, soft_wrap=True)
        raise typer.Exit(1) from None
    if lifted is None:
        out.print("no fence: the database accepts connections", highlight=False)
    else:
        out.print(f"lifted the fence of a cutover that is gone ({lifted}): the database accepts connections again",
                  highlight=False, soft_wrap=True)


def _read_key_file(path: Path) -> bytes:
    import base64  # noqa: PLC0415
    import binascii  # noqa: PLC0415

    try:
        return base64.b64decode(path.read_text(encoding="ascii").strip(), validate=True)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise ValueError(f"{path} does not hold the base64 of a key") from None


def _default_backup_path(url: sa.URL, dialect: str) -> Path:
    from datetime import UTC, datetime  # noqa: PLC0415

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    if dialect == "sqlite":
        database = Path(url.database or "agentfy.db")
        return database.with_name(f"{database.name}.pre-cutover-{stamp}.sqlite3")
    return Path(f"{url.database or 'agentfy'}-pre-cutover-{stamp}.dump")


@admin_app.command("rotate-key")
def admin_rotate_key(database_url: DatabaseUrlOption = None) -> None:
    """Issue a new platform-admin API key and revoke every other one, in one transaction.

    The new key is printed once (only its hash is stored): store it now. Running servers refuse the old keys
    from the moment this commits. If $AGENTFY_ADMIN_API_KEY holds the old key, set it to the new one.
    """
    from agentfy.gateway.bootstrap import rotate_admin_key  # noqa: PLC0415 - admin-only import

    db = _open_database(database_url)
    try:
        key, revoked = rotate_admin_key(db)
    finally:
        db.dispose()
    out.print("[bold]new platform-admin API key (shown once; store it now):[/bold]", highlight=False)
    out.print(key, highlight=False, soft_wrap=True)
    err.print(f"revoked {len(revoked)} earlier platform-admin key(s)" + (f": {', '.join(revoked)}" if revoked else ""),
              highlight=False, soft_wrap=True)


# The bus settings as options of `worker` and `serve`; unset ones come from $AGENTFY_EVENTS_* or the defaults.
LeaseOption = Annotated[float | None, typer.Option(
    "--lease-seconds", help="Seconds a claim is held without renewal [default: 60].", show_default=False)]
RenewOption = Annotated[float | None, typer.Option(
    "--renew-seconds", help="Seconds between lease renewals [default: a third of the lease].", show_default=False)]
TimeoutOption = Annotated[float | None, typer.Option(
    "--handler-timeout", help="Seconds an attempt may take before it fails [default: 300].", show_default=False)]
AttemptsOption = Annotated[int | None, typer.Option(
    "--max-attempts", help="Deliveries before an event is dead-lettered [default: 5].", show_default=False)]
BackoffOption = Annotated[float | None, typer.Option(
    "--backoff-base", help="Seconds before the first retry, doubled each time [default: 1].", show_default=False)]
BackoffMaxOption = Annotated[float | None, typer.Option(
    "--backoff-max", help="Longest wait between retries, in seconds [default: 300].", show_default=False)]
JitterOption = Annotated[float | None, typer.Option(
    "--backoff-jitter", help="Share (0-1) of a retry's wait cut at random [default: 0.5].", show_default=False)]
BatchOption = Annotated[int | None, typer.Option(
    "--batch-size", help="Events claimed and acknowledged together [default: 20].", show_default=False)]
ConcurrencyOption = Annotated[int | None, typer.Option(
    "--concurrency", help="Worker threads in this process [default: 1].", show_default=False)]
PollOption = Annotated[float | None, typer.Option(
    "--poll", help="Seconds between polls when idle [default: 0.5].", show_default=False)]
RetentionOption = Annotated[float | None, typer.Option(
    "--retention-days", help="Days handled events are kept; 0 keeps them [default: 7].", show_default=False)]


def _bus_settings(**options: float | int | None) -> BusSettings:
    """The bus settings: ``options`` given on the command line over $AGENTFY_EVENTS_* over the defaults; a
    bad value is a usage error (exit 2) naming the setting and the value."""
    from pydantic import ValidationError  # noqa: PLC0415

    try:
        given: dict[str, Any] = {name: value for name, value in options.items() if value is not None}
        return BusSettings(**given)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])} {e.get('input')!r}: {e['msg']}" if e["loc"]
            else str(e["msg"]).removeprefix("Value error, ") for e in error.errors())
        raise _fail_usage(f"invalid event bus setting: {problems}") from None


@app.command("worker")
def worker(
    *,
    database_url: DatabaseUrlOption = None,
    once: Annotated[bool, typer.Option("--once", help="Handle what is due now, then exit.")] = False,
    poll: PollOption = None,
    lease_seconds: LeaseOption = None,
    renew_seconds: RenewOption = None,
    handler_timeout: TimeoutOption = None,
    max_attempts: AttemptsOption = None,
    backoff_base: BackoffOption = None,
    backoff_max: BackoffMaxOption = None,
    backoff_jitter: JitterOption = None,
    batch_size: BatchOption = None,
    concurrency: ConcurrencyOption = None,
    retention_days: RetentionOption = None,
    pool_size: PoolSizeOption = None,
    pool_overflow: PoolOverflowOption = None,
    pool_timeout: PoolTimeoutOption = None,
) -> None:
    """Run the consolidation workers (episodic, semantic, dreaming, dedup) as a separate process.

    Any number of worker processes may share one PostgreSQL database (events are claimed with FOR UPDATE
    SKIP LOCKED); on SQLite, claims are serialised. Every setting can also come from $AGENTFY_EVENTS_<NAME>
    (e.g. AGENTFY_EVENTS_LEASE_SECONDS). Ctrl-C and SIGTERM stop cleanly: what is finished is written, the
    rest is given back; a second Ctrl-C quits at once.
    """
    from agentfy.events.consolidation import handlers  # noqa: PLC0415 - only the worker needs them
    from agentfy.events.runner import run_until_signalled  # noqa: PLC0415

    settings = _bus_settings(
        poll_seconds=poll, lease_seconds=lease_seconds, renew_seconds=renew_seconds,
        handler_timeout_seconds=handler_timeout, max_attempts=max_attempts, backoff_base_seconds=backoff_base,
        backoff_max_seconds=backoff_max, backoff_jitter=backoff_jitter, batch_size=batch_size,
        concurrency=concurrency, retention_days=retention_days)
    db = _open_database(database_url, pool=_pool_settings(pool_size, pool_overflow, pool_timeout))
    pipeline = handlers()
    err.print(f"worker x{1 if once else settings.concurrency} on {db.display_url}: {', '.join(sorted(pipeline))} "
              f"(lease {settings.lease_seconds:g} s, batch {settings.batch_size}, "
              f"{settings.max_attempts} attempts)", highlight=False, soft_wrap=True)
    try:
        run_until_signalled(db, pipeline, settings=settings, once=once)
    except KeyboardInterrupt:  # the second Ctrl-C
        pass
    finally:
        db.dispose()


@app.command("serve")
def serve(
    *,
    database_url: DatabaseUrlOption = None,
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to listen on.")] = 8000,
    processes: Annotated[int, typer.Option("--workers", min=1, max=64,
                                           help="Gateway processes behind the one port (PostgreSQL for more "
                                                "than one).")] = 1,
    event_workers: Annotated[bool, typer.Option(help="Run the consolidation workers in-process.")] = True,
    pool_size: PoolSizeOption = None,
    pool_overflow: PoolOverflowOption = None,
    pool_timeout: PoolTimeoutOption = None,
    poll: PollOption = None,
    lease_seconds: LeaseOption = None,
    renew_seconds: RenewOption = None,
    handler_timeout: TimeoutOption = None,
    max_attempts: AttemptsOption = None,
    backoff_base: BackoffOption = None,
    backoff_max: BackoffMaxOption = None,
    backoff_jitter: JitterOption = None,
    batch_size: BatchOption = None,
    concurrency: ConcurrencyOption = None,
    retention_days: RetentionOption = None,
) -> None:
    """Serve the HTTP and WebSocket API: migrate, create the platform organization, print a one-time admin
    key on the first start (or adopt $AGENTFY_ADMIN_API_KEY), run the event workers, and serve.

    Any number of processes may serve one PostgreSQL database (--workers here, or more hosts): start-up takes turns under a lock, and each process hears the others' changes through the change feed."""  # noqa: E501 - one paragraph for --help
    import base64  # noqa: PLC0415 - serve-only imports

    import uvicorn  # noqa: PLC0415

    # The event bus settings reach the server processes (and their in-process workers) as $AGENTFY_EVENTS_*.
    from agentfy.events.settings import as_environment, default_settings  # noqa: PLC0415
    from agentfy.gateway.bootstrap import SIGNING_KEY_ENV, prepare, signing_secret  # noqa: PLC0415
    from agentfy.gateway.rpc.protocol import MAX_FRAME_BYTES  # noqa: PLC0415
    from agentfy.gateway.server import RUN_WORKERS_ENV  # noqa: PLC0415

    # The event bus settings reach the server processes (and their in-process workers) as $AGENTFY_EVENTS_*;
    # a bad one is refused before anything starts.
    os.environ.update(as_environment(_bus_settings(
        poll_seconds=poll, lease_seconds=lease_seconds, renew_seconds=renew_seconds,
        handler_timeout_seconds=handler_timeout, max_attempts=max_attempts, backoff_base_seconds=backoff_base,
        backoff_max_seconds=backoff_max, backoff_jitter=backoff_jitter, batch_size=batch_size,
        concurrency=concurrency, retention_days=retention_days)))
    default_settings.cache_clear()  # with one server process this process serves too: read them again
    db = _open_database(database_url, migrated=False, pool=_pool_settings(pool_size, pool_overflow, pool_timeout))
    if processes > 1 and db.dialect == "sqlite":
        db.dispose()
        raise _fail_usage("--workers > 1 needs PostgreSQL: SQLite is the single-process embedded store")
    try:
        boot = prepare(db)
        secret = signing_secret(db)
    except ValueError as error:
        raise _fail_usage(str(error)) from None
    finally:
        db.dispose()
    out.print(f"{db.display_url}: ready; platform organization {boot.platform_org_id}", highlight=False,
              soft_wrap=True)
    if boot.new_admin_key:
        out.print("[bold]platform-admin API key (shown once; store it now):[/bold]", highlight=False)
        out.print(boot.new_admin_key, highlight=False, soft_wrap=True)
    os.environ[DATABASE_URL_ENV] = db.url
    os.environ[SIGNING_KEY_ENV] = base64.b64encode(secret).decode("ascii")
    os.environ[RUN_WORKERS_ENV] = "1" if event_workers else "0"
    uvicorn.run("agentfy.gateway.server:app_from_env", factory=True, host=host, port=port, workers=processes,
                log_level="info", ws_max_size=MAX_FRAME_BYTES)


def main() -> None:
    """Console-script entry point: a storage failure is one line on stderr and exit 1, not a traceback."""
    try:
        app()
    except StoreError as error:
        err.print(f"[red]error:[/red] {error}", highlight=False)
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
