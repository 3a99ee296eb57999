"""``agentfy usage``: an organization's model tokens per agent, UTC day and model, as a table.

The same sums as ``GET /v1/usage`` (:func:`agentfy.store.repos.telemetry.usage_by_agent_day`), read straight
from the database: for the operator of the installation, who has the database and may not have an API key.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import typer

from agentfy.cli.common import fail_usage, open_database, out
from agentfy.cli.options import DatabaseUrlOption
from agentfy.identity import InvalidAgentKeyError, InvalidIdError, Scope
from agentfy.store.errors import InvalidInputError, NotFoundError
from agentfy.store.repos import agents, orgs, telemetry


def usage(
    org: Annotated[str, typer.Option("--org", help="The organization's slug.")],
    agent: Annotated[str | None, typer.Option("--agent", help="Only this agent (its agent_key or ID).")] = None,
    since: Annotated[str | None, typer.Option("--since", help="From this UTC day, YYYY-MM-DD (included).")] = None,
    until: Annotated[str | None, typer.Option("--until", help="Up to this UTC day, YYYY-MM-DD (included).")] = None,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Print an organization's model tokens per agent, UTC day and model, newest day first.  An unknown
    organization or agent, or a malformed day, is a usage error (exit 2)."""
    db = open_database(database_url)
    try:
        with db.transaction(write=False) as tx:
            try:
                scope = Scope(orgs.get_organization_by_slug(tx, org).id)
                agent_id = None if agent is None else agents.resolve_agent(tx, scope, agent).id
                days = telemetry.usage_by_agent_day(tx, scope, agent_id=agent_id, since=since, until=until)
            except NotFoundError as error:
                raise fail_usage(f"there is no {error.entity} {error.ref!r} in organization {org!r}") from None
            except (InvalidInputError, InvalidIdError, InvalidAgentKeyError, ValueError) as error:
                raise fail_usage(str(error)) from None
    finally:
        db.dispose()
    header = ("day", "agent", "agent_id", "model", "calls", "prompt", "completion", "cached")
    rows = [(row.day, row.agent_key or "-", row.agent_id or "-", row.model, str(row.calls), str(row.input_tokens),
             str(row.output_tokens), "-" if row.cached_tokens is None else str(row.cached_tokens)) for row in days]
    out.print(table(header, rows), highlight=False, markup=False, soft_wrap=True)


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Aligned columns, one line per row, never wrapped (an ID stays whole for a script to cut out)."""
    widths = [max(len(cells[i]) for cells in (header, *rows)) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True)).rstrip()
                     for cells in (header, *rows))
