"""What every command shares: the root ``agentfy`` app and its global options, the consoles, failures and
exit statuses, the settings of a command and opening its database.

Every command builds its settings here, once (:func:`resolve_settings`: its options and the global ones over
the config file over the environment over the defaults), and passes them down; nothing below the command
line reads the environment.  Help texts escape ``[`` (``\\[default: …]``): Rich would read ``[default: 1]``
as markup and drop it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import sqlalchemy as sa
import typer
from rich.console import Console

from agentfy import __version__
from agentfy.logs import configure_logging
from agentfy.settings import Settings, SettingsError, load_settings
from agentfy.store.db import Database
from agentfy.store.migrate import current_revision, head_revision
from agentfy.store.urls import sqlite_file

app = typer.Typer(
    name="agentfy",
    help="The agentfy platform: the gateway, the agent runtime, the event workers, IDs and the database.",
    no_args_is_help=True,
    add_completion=False,
)

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


global_options = _Globals()


def _version(value: bool) -> None:
    if value:
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
    global_options.config = config
    global_options.debug = debug
    global_options.log_level = log_level
    global_options.log_format = log_format
    configure_logging(resolve_settings().log)


out = Console()
err = Console(stderr=True)


def fail_usage(message: str) -> typer.Exit:
    return fail(EXIT_USAGE, message)


def fail(status: int, message: str, cause: BaseException | None = None) -> typer.Exit:
    """One line on stderr and ``status``; with ``--debug``, the traceback of ``cause`` first."""
    if global_options.debug and cause is not None:
        err.print_exception(show_locals=False)
    err.print(f"[red]error:[/red] {message}", highlight=False, soft_wrap=True)
    return typer.Exit(status)


def describe_connection_error(error: BaseException) -> str:
    """A driver's connection failure in one line (its first line, without SQL), e.g. ``connection refused``."""
    cause = getattr(error, "orig", None) or error
    first = str(cause).strip().splitlines()[0] if str(cause).strip() else type(cause).__name__
    return first.removeprefix("(psycopg.OperationalError) ")


def resolve_settings(**cli: Any) -> Settings:
    """The effective settings: ``cli`` (dotted names, ``None`` for options not given) and the global options
    over the config file over the environment over the defaults; an invalid one is a usage error (exit 2)
    naming it."""
    try:
        return load_settings(given_settings(**cli), config_file=global_options.config)
    except SettingsError as error:
        raise fail_usage(str(error)) from None


def given_settings(**cli: Any) -> dict[str, Any]:
    """The settings given on the command line: the command's options and the global ones."""
    return {"log.level": global_options.log_level, "log.format": global_options.log_format, **cli}


def open_database(url: str | None, *, migrated: bool = True, settings: Settings | None = None,
                  create: bool = False) -> Database:
    """The database of ``url`` (else the ``database_url`` setting).  With ``migrated``, refuse one that is
    behind the migrations (exit 4); unless ``create``, refuse a SQLite file that does not exist (exit 3)
    rather than create an empty one; an unreachable server is exit 3."""
    settings = settings if settings is not None else resolve_settings(database_url=url)
    try:
        parsed = sa.make_url(settings.database_url)
    except sa.exc.ArgumentError:
        raise fail_usage(f"database URL {settings.database_url!r} is not a URL (expected sqlite:///PATH or "
                         "postgresql+psycopg://USER@HOST/DB)") from None
    path = sqlite_file(parsed)
    if path is not None and not create and not path.exists():
        raise fail(EXIT_UNAVAILABLE, f"no database at {path} (`agentfy db upgrade` creates it)")
    try:
        db = Database(settings.database_url, pool=settings.db)
    except ValueError as error:
        raise fail_usage(str(error)) from None
    try:
        current, head = current_revision(db), head_revision(db)
    except Exception as error:
        db.dispose()
        raise fail(EXIT_UNAVAILABLE, f"cannot reach {db.display_url}: {describe_connection_error(error)}",
                   error) from None
    if migrated and current != head:
        db.dispose()
        raise fail(EXIT_OUTDATED, f"{db.display_url} is at schema revision {current or '(none)'}, the newest "
                                  f"is {head}: run `agentfy db upgrade` first")
    return db
