"""``/v1/usage``: what the organization's agents cost, in model tokens per agent, UTC day and model.

The rows are the sums of ``usage_snapshots`` (one per model call, written by the runtime), grouped in SQL
(:func:`agentfy.store.repos.telemetry.usage_by_agent_day`).  ``agent`` names one agent by ID or agent_key,
resolved like every agent reference (:mod:`agentfy.gateway.resolve`): another organization's agent is the same
404 as a missing one.  ``since`` and ``until`` are days (``YYYY-MM-DD``, UTC, both included).  Each row names
the agent by ID and by its current agent_key (``null`` for usage of an agent since deleted, or of no agent).

Each row is also costed: the organization's price (``/v1/prices``) of the calls' provider and model in effect at
each call's own time, so a new price never rewrites the cost of earlier days.  ``cost`` is exact decimal text in
``currency`` (prompt tokens, cached ones included, at the input price; completion tokens at the output price);
calls with no price in effect have ``cost``, ``currency`` and ``price_effective_from`` ``null`` — unknown, not
zero.  A day whose calls straddle a change of price has a row for each price.
"""

from __future__ import annotations

from typing import Annotated, Final

from fastapi import APIRouter, Query
from pydantic import Field

from agentfy.gateway.deps import Authenticated
from agentfy.gateway.resolve import agent_in
from agentfy.gateway.routes.schemas import (
    AGENT_REF_DESCRIPTION,
    AGENT_REF_MAX_LENGTH,
    AGENT_REF_PATTERN,
    Strict,
    optional_id_field,
)
from agentfy.gateway.routing import ApiRoute
from agentfy.store.repos import prices, telemetry

router = APIRouter(tags=["usage"], route_class=ApiRoute)

#: Most rows one answer carries (agent x day x model groups, newest day first).
USAGE_ROWS_MAX: Final = 1000
Day = Annotated[str | None, Query(min_length=10, max_length=10, pattern=telemetry.DAY_PATTERN,
                                  description="A UTC day, YYYY-MM-DD (included).")]


class UsageRowOut(Strict):
    agent_id: str | None = optional_id_field("agent", "The agent's ID (null: usage of no agent).")
    agent_key: str | None = Field(description="The agent's current agent_key (null: deleted, or no agent).")
    day: str = Field(description="The UTC day, YYYY-MM-DD.")
    model: str = Field(description="The model the agent's configuration names (offline: the offline model).")
    calls: int = Field(description="Model calls.")
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int | None = Field(description="Prompt tokens served from the provider's cache (null: the "
                                                  "provider did not report them).")
    provider: str | None = Field(description="The provider of the calls (null: not recorded).")
    cost: str | None = Field(description="What the calls cost, exact decimal text in currency (null: no price was "
                                         "in effect for the provider and model at the calls' time — unknown).")
    currency: str | None = Field(description="ISO 4217 code of cost (null: unknown cost).")
    price_effective_from: str | None = Field(description="The effective_from of the price the calls were costed "
                                                         "with (null: none).")


class UsageOut(Strict):
    rows: list[UsageRowOut] = Field(description=f"Newest day first; at most {USAGE_ROWS_MAX}.")


@router.get("/usage", operation_id="usage.list", response_model=UsageOut)
def list_usage(call: Authenticated, *,
               agent: Annotated[str | None, Query(max_length=AGENT_REF_MAX_LENGTH, description=(
                   f"Only this agent's usage. {AGENT_REF_DESCRIPTION}"),
                   json_schema_extra={"pattern": AGENT_REF_PATTERN})] = None,
               since: Day = None, until: Day = None) -> UsageOut:
    """The organization's model tokens and their cost per agent, UTC day and model (one agent's with ``agent``),
    for ``since``..``until``."""
    with call.gateway.db.transaction(write=False) as tx:
        agent_id = None if agent is None else agent_in(tx, call.who, agent).id
        days = telemetry.usage_by_agent_day(tx, call.who.scope, agent_id=agent_id, since=since, until=until,
                                            limit=USAGE_ROWS_MAX)
    return UsageOut(rows=[usage_row_out(row) for row in days])


def usage_row_out(row: telemetry.UsageDay) -> UsageRowOut:
    cost = row.cost
    return UsageRowOut(agent_id=row.agent_id, agent_key=row.agent_key, day=row.day, model=row.model, calls=row.calls,
                       prompt_tokens=row.input_tokens, completion_tokens=row.output_tokens,
                       cached_tokens=row.cached_tokens, provider=row.provider,
                       cost=None if cost is None else prices.plain(cost),
                       currency=None if row.price is None else row.price.currency,
                       price_effective_from=None if row.price is None else row.price.effective_from)
