"""``agentfy cutover run | unfence``: the ID cutover (docs/cutover.md)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import sqlalchemy as sa
import typer

from agentfy.cli.common import err, fail_usage, out, resolve_settings
from agentfy.cli.options import DatabaseUrlOption
from agentfy.cutover.backup import default_backup_path
from agentfy.cutover.errors import CutoverError
from agentfy.keys import credentials_cipher
from agentfy.store.errors import StoreError

group = typer.Typer(
    help="The ID cutover: every legacy identity (bare UUIDs, retired organization-… prefixes) to its canonical "
         "ID, in one verified transaction. See docs/cutover.md.",
    no_args_is_help=True)


@group.command("run")
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
    # Imported here: the cutover's engines import psycopg, the optional `postgres` extra, which the other
    # commands (and a SQLite-only installation) must not need.
    from agentfy.cutover.console import LineProgress, RichProgress, print_report  # noqa: PLC0415
    from agentfy.cutover.run import CutoverOptions, run_cutover  # noqa: PLC0415

    settings = resolve_settings(database_url=database_url, credentials_key_file=credentials_key_file)
    # Not a Database: opening one would set WAL on a SQLite file (and create its directory) before the
    # cutover's own checks could refuse; the engine checks the schema revision itself, read-only.
    try:
        url = sa.engine.make_url(settings.database_url)
    except sa.exc.ArgumentError:
        raise fail_usage(f"{settings.database_url!r} is not a database URL") from None
    try:
        # The key is read, never created: a new key could decrypt nothing.
        cipher = credentials_cipher(settings, settings.database_url, create=False, required=False)
    except (StoreError, ValueError) as error:
        raise fail_usage(str(error)) from None
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


@group.command("unfence")
def cutover_unfence(
    database_url: DatabaseUrlOption = None,
    timeout: Annotated[float, typer.Option(min=0.0, help="Seconds to wait for the cutover's session to end.")] = 5.0,
) -> None:
    """Let connections into a PostgreSQL database again after a cutover was killed (SIGKILL, power loss).

    A running cutover refuses new connections to its database and lifts that when it ends, whatever the
    outcome; only a kill leaves it in place. The next `cutover run` lifts it too. Refuses while the cutover
    that set it is still running. Nothing to do on SQLite (its lock ends with the process).
    """
    from agentfy.cutover.fence import unfence  # noqa: PLC0415 - psycopg: the optional `postgres` extra

    url = resolve_settings(database_url=database_url).database_url
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
