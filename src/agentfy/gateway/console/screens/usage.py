"""Usage: the organization's model tokens per agent and UTC day, as charts and as a table of the same numbers.

The numbers are ``GET /v1/usage`` (``agent``, ``since``, ``until`` passed through: the API checks them), which
groups per agent, day and model; the page adds up each agent's models per day.  What a token costs is not
known to the platform, so the cost shown is in tokens (and model calls).  Agents are shown by key (a deleted
agent's usage by its ID, usage of no agent as such).

The charts (tokens, model calls) are drawn by the vendored uPlot (``static/uPlot.iife.min.js``, pinned in
``static/README.md``) from the page's own data, a JSON script element (``application/json``, ``<`` escaped so
no value can end the element); the table is always there, for screen readers and for a browser without
JavaScript.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Final

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from agentfy.gateway.console.layout import STATIC, esc, page, table
from agentfy.gateway.console.layout import field as form_field
from agentfy.gateway.console.responses import html
from agentfy.gateway.console.visit import visit

router = APIRouter()
#: How usage of no agent is named (the API's ``agent_id`` null).
NO_AGENT: Final = "(no agent)"


@dataclass(slots=True)
class DayTotal:
    """One agent's usage on one day, its models added up."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    models: set[str] = field(default_factory=set)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def agent_label(row: dict[str, Any]) -> str:
    """The agent as the page names it: its key; a deleted agent by ID; usage of no agent as such."""
    return str(row["agent_key"] or row["agent_id"] or NO_AGENT)


def per_agent_day(rows: list[dict[str, Any]]) -> dict[tuple[str, str], DayTotal]:
    """The API's rows (agent x day x model) added up per (agent label, day)."""
    totals: dict[tuple[str, str], DayTotal] = defaultdict(DayTotal)
    for row in rows:
        total = totals[(agent_label(row), row["day"])]
        total.calls += row["calls"]
        total.prompt_tokens += row["prompt_tokens"]
        total.completion_tokens += row["completion_tokens"]
        total.cached_tokens += row["cached_tokens"] or 0
        total.models.add(row["model"])
    return dict(totals)


def chart_data(totals: dict[tuple[str, str], DayTotal]) -> dict[str, Any]:
    """What ``usage.js`` draws: the days in order, and per agent its tokens and its model calls on each (0 on a
    day without use)."""
    days = sorted({day for _, day in totals})
    agents = sorted({agent for agent, _ in totals})
    none = DayTotal()
    return {"days": days, "series": [
        {"agent": agent, "tokens": [totals.get((agent, day), none).tokens for day in days],
         "calls": [totals.get((agent, day), none).calls for day in days]}
        for agent in agents]}


def _chart(measure: str, title: str) -> str:
    return (f'<h2>{esc(title)}</h2><figure class="chart"><div id="{esc(measure)}-chart" class="usage-chart" '
            f'data-measure="{esc(measure)}" role="img" aria-label="{esc(title)}; the table below has the same '
            'numbers"></div></figure>')


def json_script(element_id: str, value: Any) -> str:
    """``value`` as a JSON script element no value can break out of (``<``, ``>`` and ``&`` as escapes)."""
    text = (json.dumps(value, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("&", "\\u0026"))
    return f'<script type="application/json" id="{esc(element_id)}">{text}</script>'


def _row(agent: str, day: str, total: DayTotal) -> list[str]:
    return [esc(day), esc(agent), esc(total.calls), esc(total.prompt_tokens), esc(total.completion_tokens),
            esc(total.cached_tokens), f'<strong class="tokens">{esc(total.tokens)}</strong>',
            esc(", ".join(sorted(total.models)))]


def _filter(agent: str, since: str, until: str) -> str:
    pairs = (form_field("agent", "Agent (key or ID)", value=agent, extra=' autocomplete="off"'),
             form_field("since", "From day", value=since, kind="date"),
             form_field("until", "To day", value=until, kind="date"))
    return ('<form method="get" action="/console/usage" class="filter" role="search">'
            + "".join(f'<div class="pair">{pair}</div>' for pair in pairs)
            + '<button type="submit">Show</button></form>')


@router.get("/usage")
async def usage(request: Request, agent: str = "", since: str = "", until: str = "") -> Response:
    current = await visit(request)
    request.state.back = "/console/usage"
    found = await current.api.get("/usage", agent=agent.strip() or None, since=since or None, until=until or None)
    totals = per_agent_day(found["rows"])
    newest_first = sorted(totals.items(), key=lambda item: (item[0][1], item[0][0]), reverse=True)
    numbers = table(("Day (UTC)", "Agent", "Model calls", "Prompt tokens", "Completion tokens", "Cached tokens",
                     "Tokens", "Models"), (_row(who, day, total) for (who, day), total in newest_first),
                    table_id="usage", empty="No usage in this range.")
    chart = "" if not totals else (
        _chart("tokens", "Tokens per agent per day") + _chart("calls", "Model calls per agent per day")
        + json_script("usage-data", chart_data(totals))
        + f'<link rel="stylesheet" href="{STATIC}/uPlot.min.css">'
        f'<script src="{STATIC}/uPlot.iife.min.js" defer></script><script src="{STATIC}/usage.js" defer></script>')
    body = (_filter(agent, since, until) + '<p class="meta">Cost in model tokens (prompt plus completion) and '
            "calls, per agent and UTC day; the platform knows no prices.</p>" + chart + "<h2>Numbers</h2>" + numbers)
    return html(page(f"Usage of {current.viewer.tenant_slug}", body, viewer=current.viewer, section="usage"))
