"""The ``agentfy`` command: serving, operating and inspecting an agentfy installation.

* ``serve`` — the HTTP and WebSocket API (with the event workers in-process unless turned off);
* ``worker`` — the consolidation workers as a separate process;
* ``chat`` — talk to an agent from the terminal;
* ``id new | check | explain`` — mint, check and explain IDs;
* ``db upgrade | current | seed | scan-orphans | scan`` — migrations, development fixtures and the scans of
  stored values;
* ``events stats | dead-letters | requeue | prune`` — operating the durable event bus;
* ``admin rotate-key`` — the platform-admin API key;
* ``cutover run | unfence`` — the ID cutover (docs/cutover.md);
* ``config show`` — every setting in effect and where it came from (docs/configuration.md).

Every option is also a setting of :mod:`agentfy.settings` (command line over file over environment over
default).  Help texts escape ``[`` (``\\[default: …]``): Rich would read ``[default: 1]`` as markup and drop it.

Exit statuses are part of the contract: ``agentfy id check`` exits 0 for a valid ID and 1 for an invalid one,
so scripts can use it as a predicate; usage errors exit 2 (Typer's convention).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import sqlalchemy as sa
import typer
from pydantic import SecretStr
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from agentfy.cutover.backup import default_backup_path
from agentfy.cutover.detect import LegacyDatabaseError
from agentfy.events import admin
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
from agentfy.keys import credentials_cipher, signing_secret
from agentfy.settings import (
    RESOLVED_SETTINGS_ENV,
    Settings,
    SettingsError,
    effective,
    load_settings,
    serialized,
)
from agentfy.store.db import Database
from agentfy.store.errors import StoreError, UnavailableError
from agentfy.store.input_scan import scan_inputs
from agentfy.store.migrate import current_revision, head_revision, upgrade
from agentfy.store.orphans import IdColumn, id_columns, scan
from agentfy.store.repos.orgs import ensure_platform_organization
from agentfy.store.urls import sqlite_file

app = typer.Typer(
    name="agentfy",
    help="The agentfy platform: the gateway, the agent runtime, the event workers, IDs and the database.",
    no_args_is_help=True,
    add_completion=False,
)
id_app = typer.Typer(
    help="Mint, check and explain IDs of the form <prefix>-<adjective>-<noun>-<12 Crockford base32>.",
    no_args_is_help=True,
)
app.add_typer(id_app, name="id")
db_app = typer.Typer(
    help="The database: migrations, development fixtures and the scans of stored values. The URL comes "
         "from --database-url, else $AGENTFY_DATABASE_URL, else the embedded SQLite file ./var/agentfy.db.",
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
config_app = typer.Typer(help="The settings: what is in effect and where each value came from. See "
                              "docs/configuration.md.", no_args_is_help=True)
app.add_typer(config_app, name="config")

#: Exit statuses of operational failures (documented in docs/configuration.md): scripts can tell a database
#: that is down from one that needs `agentfy db upgrade`.
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_UNAVAILABLE = 3
EXIT_OUTDATED = 4


@dataclass
class _Globals:
    """The options given before the command (``agentfy --config F --log-level debug serve``)."""

    config: Path | None = None
    debug: bool = False
    log_level: str | None = None
    log_format: str | None = None


_globals = _Globals()


def _version(value: bool) -> None:
    if value:
        from agentfy import __version__  # noqa: PLC0415

        print(f"agentfy {__version__}")
        raise typer.Exit(0)


@app.callback()
def _main_options(
    config: Annotated[Path | None, typer.Option(
        "--config", dir_okay=False, show_default=False,
        help="A TOML settings file [$AGENTFY_CONFIG_FILE]: over the environment, under command-line "
             "options.")] = None,
    log_level: Annotated[str | None, typer.Option(
        "--log-level", show_default=False,
        help="debug, info, warning, error or critical \\[setting log.level, $AGENTFY_LOG_LEVEL; default: "
             "info].")] = None,
    log_format: Annotated[str | None, typer.Option(
        "--log-format", show_default=False,
        help="console (readable) or json (one object per line) [$AGENTFY_LOG_FORMAT; default: console].")] = None,
    debug: Annotated[bool, typer.Option("--debug", help="Show the traceback of a failure.")] = False,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    from agentfy.logs import configure_logging  # noqa: PLC0415

    _globals.config = config
    _globals.debug = debug
    _globals.log_level = log_level
    _globals.log_format = log_format
    configure_logging(_settings().log)

# Options that are also settings read no environment variable themselves: the settings do (below the config
# file), and an option given on the command line wins over both.
PoolSizeOption = Annotated[int | None, typer.Option(
    "--db-pool-size", min=1, show_default=False,
    help="Idle database connections each process keeps \\[setting db.pool_size, $AGENTFY_DB_POOL_SIZE; "
         "default: 8].")]
PoolOverflowOption = Annotated[int | None, typer.Option(
    "--db-max-overflow", min=0, show_default=False,
    help="More connections each process may open under load, closed when returned [$AGENTFY_DB_MAX_OVERFLOW; "
         "default: 12].")]
PoolTimeoutOption = Annotated[float | None, typer.Option(
    "--db-pool-timeout", min=0.1, show_default=False,
    help="Seconds a request waits for a free connection before answering 503 [$AGENTFY_DB_POOL_TIMEOUT; "
         "default: 10].")]
DatabaseUrlOption = Annotated[str | None, typer.Option(
    "--database-url", show_default=False,
    help="sqlite:///PATH or postgresql+psycopg://USER@HOST/DB [$AGENTFY_DATABASE_URL; default: "
         "sqlite:///var/agentfy.db].")]

out = Console()
err = Console(stderr=True)

_PREFIXES_HELP = ", ".join(sorted(ID_ENTITIES.values()))


def _fail_usage(message: str) -> typer.Exit:
    return _fail(EXIT_USAGE, message)


def _fail(status: int, message: str, cause: BaseException | None = None) -> typer.Exit:
    """One line on stderr and ``status``; with ``--debug``, the traceback of ``cause`` first."""
    if _globals.debug and cause is not None:
        err.print_exception(show_locals=False)
    err.print(f"[red]error:[/red] {message}", highlight=False, soft_wrap=True)
    return typer.Exit(status)


def describe_connection_error(error: BaseException) -> str:
    """A driver's connection failure in one line (its first line, without SQL), e.g. ``connection refused``."""
    cause = getattr(error, "orig", None) or error
    first = str(cause).strip().splitlines()[0] if str(cause).strip() else type(cause).__name__
    return first.removeprefix("(psycopg.OperationalError) ")


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


def _settings(**cli: Any) -> Settings:
    """The effective settings: ``cli`` (dotted names, ``None`` for options not given) and the global options
    over the config file over the environment over the defaults; an invalid one is a usage error (exit 2)
    naming it."""
    try:
        return load_settings(_cli_settings(**cli), config_file=_globals.config)
    except SettingsError as error:
        raise _fail_usage(str(error)) from None


def _cli_settings(**cli: Any) -> dict[str, Any]:
    """The settings given on the command line: the command's options and the global ones."""
    return {"log.level": _globals.log_level, "log.format": _globals.log_format, **cli}


def _open_database(url: str | None, *, migrated: bool = True, settings: Settings | None = None,
                   create: bool = False) -> Database:
    """The database of ``url`` (else the ``database_url`` setting).  With ``migrated``, refuse one that is
    behind the migrations (exit 4); unless ``create``, refuse a SQLite file that does not exist (exit 3)
    rather than create an empty one; an unreachable server is exit 3."""
    settings = settings if settings is not None else _settings(database_url=url)
    try:
        parsed = sa.make_url(settings.database_url)
    except sa.exc.ArgumentError:
        raise _fail_usage(f"database URL {settings.database_url!r} is not a URL (expected sqlite:///PATH or "
                          "postgresql+psycopg://USER@HOST/DB)") from None
    path = sqlite_file(parsed)
    if path is not None and not create and not path.exists():
        raise _fail(EXIT_UNAVAILABLE, f"no database at {path} (`agentfy db upgrade` creates it)")
    try:
        db = Database(settings.database_url, pool=settings.db)
    except ValueError as error:
        raise _fail_usage(str(error)) from None
    try:
        current, head = current_revision(db), head_revision(db)
    except Exception as error:
        db.dispose()
        raise _fail(EXIT_UNAVAILABLE, f"cannot reach {db.display_url}: {describe_connection_error(error)}",
                    error) from None
    if migrated and current != head:
        db.dispose()
        raise _fail(EXIT_OUTDATED, f"{db.display_url} is at schema revision {current or '(none)'}, the newest "
                                   f"is {head}: run `agentfy db upgrade` first")
    return db


@db_app.command("upgrade")
def db_upgrade(database_url: DatabaseUrlOption = None) -> None:
    """Apply every migration (SQLite and PostgreSQL alike) and create the platform organization."""
    db = _open_database(database_url, migrated=False, create=True)
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

    Refuses a database that still holds legacy IDs: run the cutover first, or seeding would create a second
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
    days = older_than_days if older_than_days is not None else _settings().events.retention_days
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
        help="The file holding the credentials key (base64 of 32 bytes) \\[setting credentials_key_file; "
             "$AGENTFY_CREDENTIALS_KEY wins]; needed when an organization whose ID changes has credentials.")] = None,
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

    settings = _settings(database_url=database_url, credentials_key_file=credentials_key_file)
    # Not a Database: opening one would set WAL on a SQLite file (and create its directory) before the
    # cutover's own checks could refuse; the engine checks the schema revision itself, read-only.
    try:
        url = sa.engine.make_url(settings.database_url)
    except sa.exc.ArgumentError:
        raise _fail_usage(f"{settings.database_url!r} is not a database URL") from None
    try:
        # The key is read, never created: a new key could decrypt nothing.
        cipher = credentials_cipher(settings, settings.database_url, create=False, required=False)
    except (StoreError, ValueError) as error:
        raise _fail_usage(str(error)) from None
    if backup is None and not dry_run:
        backup = default_backup_path(url, datetime.now(UTC))
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

    url = _settings(database_url=database_url).database_url
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
    "--lease-seconds", help="Seconds a claim is held without renewal \\[default: 60].", show_default=False)]
RenewOption = Annotated[float | None, typer.Option(
    "--renew-seconds", help="Seconds between lease renewals \\[default: a third of the lease].", show_default=False)]
TimeoutOption = Annotated[float | None, typer.Option(
    "--handler-timeout", help="Seconds an attempt may take before it fails \\[default: 300].", show_default=False)]
AttemptsOption = Annotated[int | None, typer.Option(
    "--max-attempts", help="Deliveries before an event is dead-lettered \\[default: 5].", show_default=False)]
BackoffOption = Annotated[float | None, typer.Option(
    "--backoff-base", help="Seconds before the first retry, doubled each time \\[default: 1].", show_default=False)]
BackoffMaxOption = Annotated[float | None, typer.Option(
    "--backoff-max", help="Longest wait between retries, in seconds \\[default: 300].", show_default=False)]
JitterOption = Annotated[float | None, typer.Option(
    "--backoff-jitter", help="Share (0-1) of a retry's wait cut at random \\[default: 0.5].", show_default=False)]
BatchOption = Annotated[int | None, typer.Option(
    "--batch-size", help="Events claimed and acknowledged together \\[default: 20].", show_default=False)]
ConcurrencyOption = Annotated[int | None, typer.Option(
    "--concurrency", help="Worker threads in this process \\[default: 1].", show_default=False)]
PollOption = Annotated[float | None, typer.Option(
    "--poll", help="Seconds between polls when idle \\[default: 0.5].", show_default=False)]
RetentionOption = Annotated[float | None, typer.Option(
    "--retention-days", help="Days handled events are kept; 0 keeps them \\[default: 7].", show_default=False)]


def _bus_options(*, poll: float | None, lease_seconds: float | None, renew_seconds: float | None,
                 handler_timeout: float | None, max_attempts: int | None, backoff_base: float | None,
                 backoff_max: float | None, backoff_jitter: float | None, batch_size: int | None,
                 concurrency: int | None, retention_days: float | None) -> dict[str, Any]:
    """The event-bus options of ``worker`` and ``serve`` under their setting names."""
    return {"events.poll_seconds": poll, "events.lease_seconds": lease_seconds,
            "events.renew_seconds": renew_seconds, "events.handler_timeout_seconds": handler_timeout,
            "events.max_attempts": max_attempts, "events.backoff_base_seconds": backoff_base,
            "events.backoff_max_seconds": backoff_max, "events.backoff_jitter": backoff_jitter,
            "events.batch_size": batch_size, "events.concurrency": concurrency,
            "events.retention_days": retention_days}


def _pool_options(size: int | None, overflow: int | None, timeout: float | None) -> dict[str, Any]:
    return {"db.pool_size": size, "db.max_overflow": overflow, "db.pool_timeout": timeout}


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

    settings = _settings(database_url=database_url, **_pool_options(pool_size, pool_overflow, pool_timeout),
                         **_bus_options(poll=poll, lease_seconds=lease_seconds, renew_seconds=renew_seconds,
                                        handler_timeout=handler_timeout, max_attempts=max_attempts,
                                        backoff_base=backoff_base, backoff_max=backoff_max,
                                        backoff_jitter=backoff_jitter, batch_size=batch_size,
                                        concurrency=concurrency, retention_days=retention_days))
    bus = settings.events
    db = _open_database(database_url, settings=settings)
    pipeline = handlers(settings=settings.consolidation, bus=bus)
    err.print(f"worker x{1 if once else bus.concurrency} on {db.display_url}: {', '.join(sorted(pipeline))} "
              f"(lease {bus.lease_seconds:g} s, batch {bus.batch_size}, "
              f"{bus.max_attempts} attempts)", highlight=False, soft_wrap=True)
    try:
        run_until_signalled(db, pipeline, settings=bus, once=once)
    except KeyboardInterrupt:  # the second Ctrl-C
        pass
    finally:
        db.dispose()


@app.command("serve")
def serve(
    *,
    database_url: DatabaseUrlOption = None,
    host: Annotated[str | None, typer.Option(help="Interface to listen on \\[default: 127.0.0.1].",
                                             show_default=False)] = None,
    port: Annotated[int | None, typer.Option(min=1, max=65535, help="Port to listen on \\[default: 8000].",
                                             show_default=False)] = None,
    processes: Annotated[int | None, typer.Option(
        "--workers", min=1, max=64, show_default=False,
        help="Gateway processes behind the one port (PostgreSQL for more than one) \\[default: 1].")] = None,
    event_workers: Annotated[bool | None, typer.Option(
        "--event-workers/--no-event-workers", show_default=False,
        help="Run the consolidation workers in-process \\[default: yes].")] = None,
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
    key on the first start (or adopt the admin_api_key setting), run the event workers, and serve.

    Any number of processes may serve one PostgreSQL database (--workers here, or more hosts: then set
    AGENTFY_SIGNING_KEY to one value everywhere). Start-up takes turns under a lock, and each process hears
    the others' changes through the change feed. Every option is also a setting (`agentfy config show`).
    """
    import uvicorn  # noqa: PLC0415 - serve-only imports

    from agentfy.gateway.bootstrap import prepare  # noqa: PLC0415
    from agentfy.gateway.rpc.protocol import MAX_FRAME_BYTES  # noqa: PLC0415
    from agentfy.logs import uvicorn_log_config  # noqa: PLC0415

    settings = _settings(database_url=database_url, **_pool_options(pool_size, pool_overflow, pool_timeout),
                         **{"serve.host": host, "serve.port": port, "serve.workers": processes,
                            "serve.event_workers": event_workers},
                         **_bus_options(poll=poll, lease_seconds=lease_seconds, renew_seconds=renew_seconds,
                                        handler_timeout=handler_timeout, max_attempts=max_attempts,
                                        backoff_base=backoff_base, backoff_max=backoff_max,
                                        backoff_jitter=backoff_jitter, batch_size=batch_size,
                                        concurrency=concurrency, retention_days=retention_days))
    db = _open_database(None, migrated=False, settings=settings, create=True)
    if settings.serve.workers > 1 and db.dialect == "sqlite":
        db.dispose()
        raise _fail_usage("--workers > 1 needs PostgreSQL: SQLite is the single-process embedded store")
    try:
        boot = prepare(db, settings)
        secret = signing_secret(settings)
    except ValueError as error:
        raise _fail_usage(str(error)) from None
    finally:
        db.dispose()
    out.print(f"{db.display_url}: ready; platform organization {boot.platform_org_id}", highlight=False,
              soft_wrap=True)
    if boot.new_admin_key:
        out.print("[bold]platform-admin API key (shown once; store it now):[/bold]", highlight=False)
        out.print(boot.new_admin_key, highlight=False, soft_wrap=True)
    # The server processes (this one too, with one) serve with exactly these settings and this signing key:
    # handed down in one variable their factory reads (agentfy.gateway.server), not read again from the
    # environment or the config file.
    resolved = settings.model_copy(update={"signing_key": SecretStr(base64.b64encode(secret).decode("ascii"))})
    os.environ[RESOLVED_SETTINGS_ENV] = serialized(resolved)
    uvicorn.run("agentfy.gateway.server:app_from_env", factory=True, host=settings.serve.host,
                port=settings.serve.port, workers=settings.serve.workers, ws_max_size=MAX_FRAME_BYTES,
                log_config=uvicorn_log_config(settings.log), log_level=settings.log.level,
                access_log=False)  # each request's agentfy.request record is the access log, with its identity


@config_app.command("show")
def config_show(
    json_output: Annotated[bool, typer.Option("--json", help="One JSON object per setting, one per line.")] = False,
) -> None:
    """Print every setting in effect, secrets masked, with the environment variable that sets it and where
    its value came from (cli, file, env or default)."""
    settings = _settings()
    rows = list(effective(settings, _cli_settings(), config_file=_globals.config))
    if json_output:
        for row in rows:
            out.print(json.dumps({"name": row.name, "env": row.environment_variable, "value": row.value,
                                  "source": row.source}), highlight=False, soft_wrap=True)
        return
    widths = [max(len(text) for text in column) for column in
              zip(*(("setting", "value", "environment variable"),
                    *((row.name, row.value, row.environment_variable) for row in rows)), strict=True)]
    for cells in (("setting", "value", "environment variable", "source"),
                  *((row.name, row.value, row.environment_variable, row.source) for row in rows)):
        line = "  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=False))
        print(f"{line}  {cells[3]}")


@app.command("chat")
def chat(
    agent_key: Annotated[str, typer.Argument(help="The agent's agent_key.")],
    org: Annotated[str | None, typer.Option("--org", help="The organization's slug (default: the only one).")] = None,
    conversation: Annotated[str, typer.Option(help="Which conversation (one session each).")] = "default",
    create: Annotated[bool, typer.Option("--create", help="Create the organization and agent if missing.")] = False,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Talk to an agent from the terminal: one line in, the reply out (/end completes the conversation, /quit or
    Ctrl-D stops).  Uses the agent's model (the offline model unless configured)."""
    from agentfy.gateway.app import default_workspace_root  # noqa: PLC0415 - only this command needs them
    from agentfy.runtime import terminal  # noqa: PLC0415

    settings = _settings(database_url=database_url)
    db = _open_database(None, settings=settings)
    try:
        try:
            target = terminal.find_target(db, agent_key, org, create=create)
        except (terminal.ChatSetupError, ValueError) as error:
            raise _fail_usage(str(error)) from None
        err.print(f"talking to @{target.agent_key} of {target.slug} as {terminal.terminal_user()} "
                  "(/end, /quit)", highlight=False)

        def read() -> str | None:
            try:
                return input()
            except EOFError:
                return None

        asyncio.run(terminal.chat(db, target, workspace_root=settings.workspace_root or default_workspace_root(db),
                                  conversation=conversation,
                                  read=read, write=lambda text: out.print(text, highlight=False, markup=False,
                                                                          soft_wrap=True)))
    finally:
        db.dispose()


def main() -> None:
    """Console-script entry point: an operational failure is one line on stderr and a documented exit status
    (3: the database is unreachable, locked or not permitted; 1: any other storage failure), not a
    traceback; ``--debug`` shows the traceback too."""
    try:
        app()
    except UnavailableError as error:
        _exit(EXIT_UNAVAILABLE, str(error), error)
    except StoreError as error:
        _exit(EXIT_FAILED, str(error), error)
    except (sa.exc.OperationalError, sa.exc.InterfaceError) as error:
        _exit(EXIT_UNAVAILABLE, f"the database is unreachable: {describe_connection_error(error)}", error)
    except PermissionError as error:
        _exit(EXIT_UNAVAILABLE, f"permission denied: {error.filename or error}", error)


def _exit(status: int, message: str, cause: BaseException) -> None:
    raise SystemExit(_fail(status, message, cause).exit_code) from None


if __name__ == "__main__":
    main()
