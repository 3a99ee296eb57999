"""``/v1/usage``: what the organization's agents cost, in model tokens per agent, UTC day and model.

The rows are the sums of ``usage_snapshots`` (one per model call, written by the runtime), grouped in SQL
(:func:`agentfy.store.repos.telemetry.usage_by_agent_day`).  ``agent`` names one agent by ID or agent_key,
resolved like every agent reference (:mod:`agentfy.gateway.resolve`): another organization's agent is the same
404 as a missing one.  ``since`` and ``until`` are days (``YYYY-MM-DD``, UTC, both included).  Each row names
the agent by ID and by its current agent_key (``null`` for usage of an agent since deleted, or of no agent).
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
from agentfy.store.repos import telemetry

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


class UsageOut(Strict):
    rows: list[UsageRowOut] = Field(description=f"Newest day first; at most {USAGE_ROWS_MAX}.")


@router.get("/usage", operation_id="usage.list", response_model=UsageOut)
def list_usage(call: Authenticated, *,
               agent: Annotated[str | None, Query(max_length=AGENT_REF_MAX_LENGTH, description=(
                   f"Only this agent's usage. {AGENT_REF_DESCRIPTION}"),
                   json_schema_extra={"pattern": AGENT_REF_PATTERN})] = None,
               since: Day = None, until: Day = None) -> UsageOut:
    """The organization's model tokens per agent, UTC day and model (one agent's with ``agent``), for
    ``since``..``until``."""
    with call.gateway.db.transaction(write=False) as tx:
        agent_id = None if agent is None else agent_in(tx, call.who, agent).id
        days = telemetry.usage_by_agent_day(tx, call.who.scope, agent_id=agent_id, since=since, until=until,
                                            limit=USAGE_ROWS_MAX)
    return UsageOut(rows=[UsageRowOut(agent_id=row.agent_id, agent_key=row.agent_key, day=row.day, model=row.model,
                                      calls=row.calls, prompt_tokens=row.input_tokens,
                                      completion_tokens=row.output_tokens, cached_tokens=row.cached_tokens)
                          for row in days])
