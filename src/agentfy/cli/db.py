"""``agentfy db upgrade | current | seed | scan-orphans | scan``: migrations, development fixtures and the
scans of stored values."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from agentfy.cli.common import err, open_database, out
from agentfy.cli.options import DatabaseUrlOption
from agentfy.cutover.detect import LegacyDatabaseError, has_legacy_identities, legacy_identities
from agentfy.gateway.bootstrap import refuse_a_legacy_database
from agentfy.store.fixtures import create_demo
from agentfy.store.input_scan import scan_inputs
from agentfy.store.migrate import current_revision, head_revision, upgrade
from agentfy.store.orphans import IdColumn, id_columns, scan
from agentfy.store.repos.orgs import ensure_platform_organization

group = typer.Typer(
    help="The database: migrations, development fixtures and the scans of stored values. The URL comes "
         "from --database-url, else $AGENTFY_DATABASE_URL, else the embedded SQLite file ./var/agentfy.db.",
    no_args_is_help=True,
)


@group.command("upgrade")
def db_upgrade(database_url: DatabaseUrlOption = None) -> None:
    """Apply every migration (SQLite and PostgreSQL alike) and create the platform organization."""
    db = open_database(database_url, migrated=False, create=True)
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


@group.command("current")
def db_current(database_url: DatabaseUrlOption = None) -> None:
    """Print the database's migration revision and whether it is the newest; exit 1 if it is behind."""
    db = open_database(database_url, migrated=False)
    try:
        current, head = current_revision(db), head_revision(db)
        out.print(f"revision {current or '(none)'}; newest {head}", highlight=False)
        raise typer.Exit(0 if current == head else 1)
    finally:
        db.dispose()


@group.command("seed")
def db_seed(database_url: DatabaseUrlOption = None) -> None:
    """Add development fixtures (organization 'demo', two agents, a team, an owner key shown once).

    Refuses a database that still holds legacy IDs: run the cutover first, or seeding would create a second
    platform organization next to the legacy one instead of the one the cutover produces.
    """
    db = open_database(database_url)
    try:
        legacy = legacy_identities(db) if has_legacy_identities(db) else {}
        if legacy:
            summary = ", ".join(f"{table}: {count}" for table, count in sorted(legacy.items()))
            err.print(f"[red]error:[/red] the database still holds legacy IDs ({summary}); run the ID cutover "
                      "first, then seed", highlight=False, soft_wrap=True)
            raise typer.Exit(1)
        demo = create_demo(db)
    finally:
        db.dispose()
    if demo is None:
        out.print("already seeded: organization 'demo' exists")
        return
    out.print(f"seeded organization demo ({demo.scope.tenant_id}); owner API key (shown once):", highlight=False)
    out.print(demo.owner_key, highlight=False, soft_wrap=True)


@group.command("scan-orphans")
def db_scan_orphans(
    database_url: DatabaseUrlOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the findings as JSON.")] = False,
) -> None:
    """Report ID columns whose values are empty, the nil UUID, invalid, or point at nothing; exit 1 if any."""
    db = open_database(database_url)
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


@group.command("scan")
def db_scan(
    database_url: DatabaseUrlOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the findings as JSON.")] = False,
) -> None:
    """Report stored values that break the input policy — a NUL in text; a JSON document too deep, with a lone
    surrogate or a number beyond 64 bits, or not JSON — by table, row and column; exit 1 if any.

    Such rows were written before the policy existed; reads still serve them (marked where they cannot be
    shown). Also run `agentfy db scan-orphans` for ID columns."""
    db = open_database(database_url)
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
