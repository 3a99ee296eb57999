"""The ``agentfy`` command: serving, operating and inspecting an agentfy installation; one module per command
group, sharing :mod:`agentfy.cli.common` and :mod:`agentfy.cli.options`.

* ``serve`` — the HTTP and WebSocket API (with the event workers in-process unless turned off);
* ``worker`` — the consolidation workers as a separate process;
* ``chat`` — talk to an agent from the terminal;
* ``id new | check | explain`` — mint, check and explain IDs;
* ``db upgrade | current | seed | scan-orphans | scan`` — migrations, development fixtures and the scans of
  stored values;
* ``events stats | dead-letters | requeue | prune`` — operating the durable event bus;
* ``credentials set | list | show | delete`` — an organization's named secrets (never shown);
* ``agents model set | show | check`` — which model an agent talks to, and one call to check it;
* ``admin rotate-key`` — the platform-admin API key;
* ``cutover run | unfence`` — the ID cutover (docs/cutover.md);
* ``config show`` — every setting in effect and where it came from (docs/configuration.md);
* ``channels pairing approve | allow | list | policy`` — who may talk to an agent through its bots.

Every option is also a setting of :mod:`agentfy.settings` (command line over file over environment over
default).  Help texts escape ``[`` (``\\[default: …]``): Rich would read ``[default: 1]`` as markup and drop it.

Exit statuses are part of the contract: ``agentfy id check`` exits 0 for a valid ID and 1 for an invalid one,
so scripts can use it as a predicate; usage errors exit 2 (Typer's convention).
"""

from __future__ import annotations

import sqlalchemy as sa

from agentfy.cli import (
    admin,
    agents,
    channels,
    chat,
    config,
    credentials,
    cron,
    cutover,
    db,
    events,
    ids,
    serve,
    usage,
    worker,
)
from agentfy.cli.common import (
    EXIT_FAILED,
    EXIT_OUTDATED,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    app,
    describe_connection_error,
    fail,
)
from agentfy.store.errors import StoreError, UnavailableError

# The commands and groups, in the order `agentfy --help` lists them.
app.command("worker")(worker.worker)
app.command("serve")(serve.serve)
app.command("chat")(chat.chat)
app.command("usage")(usage.usage)
app.add_typer(credentials.group, name="credentials")
app.add_typer(agents.group, name="agents")
app.add_typer(ids.group, name="id")
app.add_typer(db.group, name="db")
app.add_typer(events.group, name="events")
app.add_typer(admin.group, name="admin")
app.add_typer(cutover.group, name="cutover")
app.add_typer(config.group, name="config")
app.add_typer(channels.group, name="channels")
app.add_typer(cron.group, name="cron")

__all__ = ["EXIT_FAILED", "EXIT_OUTDATED", "EXIT_UNAVAILABLE", "EXIT_USAGE", "admin", "agents", "app", "channels",
           "chat", "config", "credentials", "cutover", "db", "events", "ids", "main", "serve", "worker"]


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
    raise SystemExit(fail(status, message, cause).exit_code) from None
