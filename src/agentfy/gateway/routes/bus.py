"""``/v1/org/bus``, ``/v1/org/dead-letters`` and ``/v1/org/orphans``: the operator's bus and database checks,
cut down to the caller's own organization, for its admins.

The operator's tools (``agentfy events stats|dead-letters|requeue``, ``agentfy db scan-orphans``) see every
tenant; these routes call the same functions (:mod:`agentfy.events.admin`, :mod:`agentfy.store.orphans`) with
the caller's organization as their tenant filter, applied in SQL — so no row of another organization is read,
counted, shown or changed.  The organization is the key's, never a request's.

* ``GET /v1/org/bus``: the organization's events by status, the backlog due now (``lag``) and the age of its
  oldest event.  The bus's durable daily counters are the platform's (no tenant), so they are not shown.
* ``GET /v1/org/dead-letters``: its dead-lettered events, oldest first, a page at a time (a signed cursor,
  like every list): type, what the event was about, the attempts, the last error (trimmed) and when it died.
  The payload is never shown: it may carry a conversation's text, and an admin needs the error, not the data.
* ``POST /v1/org/dead-letters/{event_id}/requeue``: a fresh set of attempts for one of them, once its cause is
  fixed.  Another organization's event, a missing one and one that is not dead are the same 404, and nothing
  is changed.
* ``GET /v1/org/orphans``: the orphan scan of the organization's rows (the tables with a tenant column; see
  :mod:`agentfy.store.orphans` for what is left out and why).
"""

from __future__ import annotations

from typing import Annotated, Final

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from agentfy.events import admin
from agentfy.events.admin import DeadLetter, DeadLetterFilter
from agentfy.gateway.deps import Authenticated
from agentfy.gateway.pages import Cursor, Page, decode_cursor, encode_cursor, invalid_cursor
from agentfy.gateway.routes.schemas import id_field, id_path, optional_id_field
from agentfy.gateway.routing import ApiRoute
from agentfy.store import orphans
from agentfy.store.errors import InvalidInputError, NotFoundError

router = APIRouter(tags=["operations"], route_class=ApiRoute)

#: How much of a dead letter's last error an answer carries (a traceback's first lines say enough).
ERROR_CHARS: Final = 500
DEAD_LETTER_PAGE: Final = 50
DEAD_LETTER_PAGE_MAX: Final = 200
LIST_OPERATION: Final = "org.dead_letters.list"

EventIdPath = Annotated[str, id_path("domain-event", "event")]
DeadLetterLimit = Annotated[int, Query(ge=1, le=DEAD_LETTER_PAGE_MAX,
                                       description=f"Dead letters per page (default {DEAD_LETTER_PAGE}).")]


class BusOut(BaseModel):
    lag: int = Field(description="The organization's events due now and not yet taken by a worker (the backlog).")
    pending: int = Field(description="Events waiting, including those due later (a retry's backoff).")
    processing: int = Field(description="Events a worker holds right now.")
    dead: int = Field(description="Events that failed for good (see /v1/org/dead-letters).")
    done: int = Field(description="Events handled and not yet pruned.")
    oldest_pending_age_seconds: float | None = Field(description="How long the oldest event due now has waited; "
                                                                 "null when none is due.")


class DeadLetterOut(BaseModel):
    id: str = id_field("domain-event", "The event's ID (requeue it by this).")
    type: str
    source_id: str = Field(description="What the event is about (with its type, it deduplicates the event).")
    agent_id: str | None = optional_id_field("agent", "The agent it is about, if any.")
    occurred_at: str
    attempts: int = Field(description="How many times a worker tried it.")
    last_error: str | None = Field(description=f"The last attempt's error, at most {ERROR_CHARS} characters.")
    dead_at: str | None = Field(description="When it was dead-lettered (UTC).")


class RequeuedOut(BaseModel):
    id: str = id_field("domain-event")
    status: str = Field(description="pending: a worker takes it again, with a fresh set of attempts.")


class OrphanFindingOut(BaseModel):
    table: str
    column: str
    problem: str = Field(description="empty, nil UUID, not a valid <kind> ID, or points at nothing in <table>.")
    count: int
    examples: list[str] = Field(description=f"At most {orphans.EXAMPLES} of the offending values.")


class OrphansOut(BaseModel):
    findings: list[OrphanFindingOut] = Field(description="Empty: the organization's rows are clean.")
    tables: list[str] = Field(description="The tables scanned (those whose rows name their organization).")


def _trimmed(error: str | None) -> str | None:
    return error if error is None or len(error) <= ERROR_CHARS else error[:ERROR_CHARS - 1] + "…"


def dead_letter_out(letter: DeadLetter) -> DeadLetterOut:
    event = letter.event
    return DeadLetterOut(id=event.id, type=event.type, source_id=event.source_id, agent_id=event.agent_id or None,
                         occurred_at=event.occurred_at, attempts=letter.attempts,
                         last_error=_trimmed(letter.last_error), dead_at=letter.finished_at)


@router.get("/org/bus", operation_id="org.bus.get", response_model=BusOut)
def get_bus(call: Authenticated) -> BusOut:
    """The organization's events on the bus: counts by status, the backlog and its age (admin or higher)."""
    stats = admin.stats(call.gateway.db, tenant_id=call.who.tenant_id)
    return BusOut(lag=stats.lag, pending=stats.pending, processing=stats.processing, dead=stats.dead,
                  done=stats.done, oldest_pending_age_seconds=stats.oldest_pending_age_seconds)


@router.get("/org/dead-letters", operation_id=LIST_OPERATION, response_model=Page[DeadLetterOut])
def list_dead_letters(call: Authenticated, limit: DeadLetterLimit = DEAD_LETTER_PAGE,
                      cursor: Cursor = None) -> Page[DeadLetterOut]:
    """The organization's dead-lettered events, oldest first, without their payloads (admin or higher)."""
    after = None
    if cursor is not None:
        key = decode_cursor(call.gateway.signing_secret, call.who, LIST_OPERATION, cursor)
        if len(key) != 2 or not all(isinstance(part, str) for part in key):
            raise invalid_cursor()
        after = f"{key[0]}~{key[1]}"
    selection = DeadLetterFilter(tenant_id=call.who.tenant_id)
    try:
        found = admin.dead_letters(call.gateway.db, selection, limit=limit, cursor=after)
    except InvalidInputError as error:  # a signed key that is no (finished_at, id): not this list's cursor
        raise invalid_cursor() from error
    following = None
    if found.next_cursor is not None:
        last = found.letters[-1]
        following = encode_cursor(call.gateway.signing_secret, call.who, LIST_OPERATION,
                                  [last.finished_at, last.event.id])
    return Page[DeadLetterOut](items=[dead_letter_out(letter) for letter in found.letters], next_cursor=following)


@router.post("/org/dead-letters/{event_id}/requeue", operation_id="org.dead_letters.requeue",
             response_model=RequeuedOut)
def requeue_dead_letter(event_id: EventIdPath, call: Authenticated) -> RequeuedOut:
    """Give one of the organization's dead letters a fresh set of attempts (admin or higher).  Not a dead
    letter of this organization (missing, another's, or not dead): 404, and nothing changes."""
    if not admin.requeue_dead_letter(call.gateway.db, event_id, tenant_id=call.who.tenant_id):
        raise NotFoundError("dead letter", event_id)
    return RequeuedOut(id=event_id, status="pending")


@router.get("/org/orphans", operation_id="org.orphans.scan", response_model=OrphansOut)
def scan_orphans(call: Authenticated) -> OrphansOut:
    """The orphan scan of the organization's rows: ID columns whose values cannot be right (admin or higher)."""
    findings = orphans.scan(call.gateway.db, tenant_id=call.who.tenant_id)
    tables = sorted({column.table for column in orphans.id_columns() if orphans.has_tenant_column(column.table)})
    return OrphansOut(findings=[OrphanFindingOut(table=f.table, column=f.column, problem=f.problem, count=f.count,
                                                 examples=f.examples) for f in findings], tables=tables)
