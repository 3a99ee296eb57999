"""Operations, the bus: the organization's events by status and its backlog, its dead letters with a Requeue
button each, and — on request, since it reads every row of the organization — the orphan scan.

Each is the API's organization-scoped route (``GET /v1/org/bus``, ``GET /v1/org/dead-letters``, ``POST
/v1/org/dead-letters/{id}/requeue``, ``GET /v1/org/orphans``): another organization's events are never among
them, and requeueing one is the API's 404.  Dead letters come a page at a time, oldest first (``dead_after``
is the API's cursor for the next page); their payloads are not in the API's answer, so not here either.
"""

from __future__ import annotations

from typing import Any, Final

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from agentfy.gateway.console.api import ApiFailure, segment
from agentfy.gateway.console.layout import copyable, error_box, esc, post_form, table
from agentfy.gateway.console.screens.ops_forms import SCREEN, done, posted
from agentfy.gateway.console.visit import Visit

router = APIRouter()
PAGE_SIZE: Final = 50


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "nothing due"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _stats(bus: dict[str, Any]) -> str:
    facts = [("Backlog (due now)", "bus-lag", bus["lag"]), ("Waiting", "bus-pending", bus["pending"]),
             ("Being handled", "bus-processing", bus["processing"]), ("Dead letters", "bus-dead", bus["dead"]),
             ("Handled", "bus-done", bus["done"]),
             ("Oldest due event waited", "bus-oldest", _age(bus["oldest_pending_age_seconds"]))]
    return '<dl class="facts" id="bus">' + "".join(f'<dt>{esc(label)}</dt><dd id="{esc(key)}">{esc(value)}</dd>'
                                                   for label, key, value in facts) + "</dl>"


def _letter_row(current: Visit, letter: dict[str, Any]) -> list[str]:
    requeue = "" if not current.may("org.dead_letters.requeue") else post_form(
        f"{SCREEN}/dead-letters/{segment(letter['id'])}/requeue", current.viewer.csrf, "", label="Requeue",
        extra=f' class="inline requeue" aria-label="Requeue {esc(letter["type"])} {esc(letter["source_id"])}"')
    return [f'<span class="type">{esc(letter["type"])}</span>', f"<code>{esc(letter['source_id'])}</code>",
            esc(letter["attempts"]), f'<span class="last-error">{esc(letter["last_error"] or "")}</span>',
            esc(letter["dead_at"] or ""), copyable(letter["id"]), requeue]


async def _dead_letters(current: Visit, after: str) -> str:
    found = await current.api.get("/org/dead-letters", limit=str(PAGE_SIZE), cursor=after or None)
    rows = table(("Type", "About", "Attempts", "Last error", "Dead since", "Event", ""),
                 (_letter_row(current, letter) for letter in found["items"]), table_id="dead-letters",
                 empty="No dead letters.")
    following = found["next_cursor"]
    more = "" if following is None else (f'<p><a id="dead-letters-next" href="{esc(SCREEN)}?dead_after='
                                         f'{esc(segment(following))}#bus-heading">Later dead letters</a></p>')
    first = "" if not after else f'<p><a href="{esc(SCREEN)}#bus-heading">The oldest dead letters</a></p>'
    return "<h3>Dead letters</h3>" + rows + more + first


def _finding_row(finding: dict[str, Any]) -> list[str]:
    return [f"<code>{esc(finding['table'])}.{esc(finding['column'])}</code>", esc(finding["problem"]),
            esc(finding["count"]), ", ".join(f"<code>{esc(example)}</code>" for example in finding["examples"])]


async def _orphans(current: Visit, scan: bool) -> str:
    button = (f'<form method="get" action="{SCREEN}" class="inline" id="scan-orphans">'
              '<input type="hidden" name="scan" value="orphans">'
              '<button type="submit">Scan for orphans</button></form>')
    head = ("<h3>Orphan scan</h3><p>ID columns of the organization's rows whose values cannot be right (empty, "
            "not a valid ID, or pointing at nothing).</p>")
    if not scan:
        return head + button
    try:
        report = await current.api.get("/org/orphans")
    except ApiFailure as failure:
        return head + button + error_box(failure.status, failure.code, failure.message, field=failure.field,
                                         value=failure.value)
    result = table(("Column", "Problem", "Rows", "Examples"), (_finding_row(f) for f in report["findings"]),
                   table_id="orphans", empty=f"No problems in the {len(report['tables'])} tables scanned.")
    return head + button + result


async def section(current: Visit, *, dead_after: str = "", scan: bool = False) -> str:
    """The bus's part of the Operations screen (empty for a key the access policy does not let read it)."""
    if not current.may("org.bus.get"):
        return ""
    bus = await current.api.get("/org/bus")
    letters = await _dead_letters(current, dead_after) if current.may("org.dead_letters.list") else ""
    orphans = await _orphans(current, scan) if current.may("org.orphans.scan") else ""
    return '<h2 id="bus-heading">Event bus</h2>' + _stats(bus) + letters + orphans


@router.post("/operations/dead-letters/{event_id}/requeue")
async def requeue(request: Request, event_id: str) -> Response:
    current, _ = await posted(request)
    await current.api.post(f"/org/dead-letters/{segment(event_id)}/requeue")
    return done(request, "requeued", "bus")
