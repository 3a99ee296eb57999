"""``agentfy events stats | dead-letters | requeue | prune``: operating the durable event bus."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.table import Table

from agentfy.cli.common import fail_usage, open_database, out, resolve_settings
from agentfy.cli.options import DatabaseUrlOption
from agentfy.events import admin
from agentfy.ids import is_id

group = typer.Typer(help="The durable event bus: stats, dead letters, requeues and pruning.", no_args_is_help=True)


def _dead_letter_filter(*, event_type: str | None, reason: str | None, tenant: str | None, older_than: str | None,
                        newer_than: str | None, event_id: str | None = None) -> admin.DeadLetterFilter:
    """The filter of the options, or a usage error (exit 2) naming the bad value."""
    try:
        return admin.DeadLetterFilter(
            event_type=event_type, reason=reason, tenant_id=tenant, event_id=event_id,
            older_than=admin.parse_age(older_than, field="--older-than") if older_than is not None else None,
            newer_than=admin.parse_age(newer_than, field="--newer-than") if newer_than is not None else None)
    except ValueError as error:  # InvalidIdError, InvalidInputError
        raise fail_usage(str(error)) from None


TypeFilter = Annotated[str | None, typer.Option("--type", help="Only events of this type (exact).")]
ReasonFilter = Annotated[str | None, typer.Option(help="Only those whose last error contains this (any case).")]
TenantFilter = Annotated[str | None, typer.Option(help="Only events of this tenant (an org-… ID).")]
OlderFilter = Annotated[str | None, typer.Option(help="Only those dead-lettered at least this long ago (90s, 15m, "
                                                      "2h, 3d, 1w).")]
NewerFilter = Annotated[str | None, typer.Option(help="Only those dead-lettered at most this long ago.")]


@group.command("dead-letters")
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
    db = open_database(database_url)
    try:
        page = admin.dead_letters(db, selection, limit=limit, cursor=after)
    except ValueError as error:  # a cursor this command did not print
        raise fail_usage(str(error)) from None
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


@group.command("requeue")
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
        raise fail_usage(f"{event_id!r} is not an event ID (expected domain-event-<adjective>-<noun>-<suffix>)")
    selection = _dead_letter_filter(event_type=event_type, reason=reason, tenant=tenant, older_than=older_than,
                                    newer_than=newer_than, event_id=event_id)
    if not selection.shape() and not requeue_all:
        raise fail_usage("name an event ID, give a filter (--type, --reason, --tenant, --older-than, --newer-than) "
                         "or pass --all to requeue every dead letter")
    db = open_database(database_url)
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


@group.command("stats")
def events_stats(
    database_url: DatabaseUrlOption = None,
    days: Annotated[int, typer.Option(min=1, max=366, help="Days of durable counters to show.")] = 7,
    as_json: Annotated[bool, typer.Option("--json", help="Print them as JSON.")] = False,
) -> None:
    """The outbox now (lag: due and waiting; pending; processing; dead; handled and kept; the oldest due
    event's age) and the durable counters per UTC day (observer warnings, dead letters)."""
    db = open_database(database_url)
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


@group.command("prune")
def events_prune(
    database_url: DatabaseUrlOption = None,
    older_than_days: Annotated[float | None, typer.Option(
        help="Delete events handled more than this many days ago (default: the retention_days setting, "
             "$AGENTFY_EVENTS_RETENTION_DAYS).")] = None,
) -> None:
    """Delete handled events past their retention now (workers also do it hourly). Dead letters and
    unhandled events are kept."""
    days = older_than_days if older_than_days is not None else resolve_settings().events.retention_days
    if days < 0:
        raise fail_usage(f"--older-than-days {days!r} must not be negative")
    db = open_database(database_url)
    try:
        deleted = admin.prune(db, older_than_days=days)
    finally:
        db.dispose()
    out.print(f"pruned {deleted} events handled more than {days:g} days ago", highlight=False)
