"""Usage: the organization's model tokens and their cost per agent and UTC day, as charts and as a table of the
same numbers.

The numbers are ``GET /v1/usage`` (``agent``, ``since``, ``until`` passed through: the API checks them), which
groups per agent, day, model and price; the page adds up each agent's rows per day.  The cost is the API's: each
call at the organization's price (Operations, Prices) in effect at its time, exact decimal text, added up here as
:class:`~decimal.Decimal` per currency — never a float, except as a point's height in the chart.  Calls with no
price are of unknown cost: a day with only those has no point on the cost chart (a gap, not zero) and the table
says "unknown" (with the count of such calls beside any known cost).  Agents are shown by key (a deleted agent's
usage by its ID, usage of no agent as such).

The charts (tokens, cost, model calls) are drawn by the vendored uPlot (``static/uPlot.iife.min.js``, pinned in
``static/README.md``) from the page's own data, a JSON script element (``application/json``, ``<`` escaped so
no value can end the element); the table is always there, for screen readers and for a browser without
JavaScript.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from agentfy.gateway.console.layout import STATIC, esc, page, table
from agentfy.gateway.console.layout import field as form_field
from agentfy.gateway.console.responses import html
from agentfy.gateway.console.visit import visit
from agentfy.store.repos.prices import plain

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
    #: The known cost per currency; ``unknown_calls``: calls with no price in effect.
    costs: dict[str, Decimal] = field(default_factory=dict)
    unknown_calls: int = 0

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
        if row["cost"] is None:
            total.unknown_calls += row["calls"]
        else:
            total.costs[row["currency"]] = total.costs.get(row["currency"], Decimal(0)) + Decimal(row["cost"])
    return dict(totals)


def cost_text(total: DayTotal) -> str:
    """The day's cost as the table shows it: ``USD 0.0075``, ``unknown``, or both (``… + unknown (2 calls)``)."""
    known = [f"{currency} {plain(amount)}" for currency, amount in sorted(total.costs.items())]
    if total.unknown_calls:
        calls = "1 call" if total.unknown_calls == 1 else f"{total.unknown_calls} calls"
        known.append(f"unknown ({calls})" if known else "unknown")
    return " + ".join(known) or "0"


def cost_series(totals: dict[tuple[str, str], DayTotal], days: list[str]) -> list[dict[str, Any]]:
    """One cost series per agent and currency: decimal text per day, ``None`` for a day whose calls all have an
    unknown cost (no point: unknown is not zero), ``"0"`` for a day without use."""
    pairs = sorted({(agent, currency) for (agent, _), total in totals.items() for currency in total.costs})
    series = []
    for agent, currency in pairs:
        values: list[str | None] = []
        for day in days:
            total = totals.get((agent, day))
            if total is None:
                values.append("0")
            elif currency in total.costs:
                values.append(plain(total.costs[currency]))
            else:
                values.append(None if total.unknown_calls and not total.costs else "0")
        series.append({"label": f"{agent} ({currency})", "currency": currency, "values": values})
    return series


def chart_data(totals: dict[tuple[str, str], DayTotal]) -> dict[str, Any]:
    """What ``usage.js`` draws: the days in order, per agent its tokens and its model calls on each (0 on a day
    without use), and the cost series (:func:`cost_series`; none when no call had a price)."""
    days = sorted({day for _, day in totals})
    agents = sorted({agent for agent, _ in totals})
    none = DayTotal()
    return {"days": days, "series": [
        {"agent": agent, "tokens": [totals.get((agent, day), none).tokens for day in days],
         "calls": [totals.get((agent, day), none).calls for day in days]}
        for agent in agents], "cost": cost_series(totals, days)}


def _chart(measure: str, title: str) -> str:
    return (f'<div class="chart-block"><h2>{esc(title)}</h2><figure class="chart"><div id="{esc(measure)}-chart" '
            f'class="usage-chart" data-measure="{esc(measure)}" role="img" aria-label="{esc(title)}; the table '
            'below has the same numbers"></div></figure></div>')


def json_script(element_id: str, value: Any) -> str:
    """``value`` as a JSON script element no value can break out of (``<``, ``>`` and ``&`` as escapes)."""
    text = (json.dumps(value, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("&", "\\u0026"))
    return f'<script type="application/json" id="{esc(element_id)}">{text}</script>'


def _row(agent: str, day: str, total: DayTotal) -> list[str]:
    return [esc(day), esc(agent), esc(total.calls), esc(total.prompt_tokens), esc(total.completion_tokens),
            esc(total.cached_tokens), f'<strong class="tokens">{esc(total.tokens)}</strong>',
            f'<span class="cost">{esc(cost_text(total))}</span>', esc(", ".join(sorted(total.models)))]


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
                     "Tokens", "Cost", "Models"), (_row(who, day, total) for (who, day), total in newest_first),
                    table_id="usage", empty="No usage in this range.")
    data = chart_data(totals)
    costs = (_chart("cost", "Cost per agent per day") if data["cost"] else
             '<p class="meta" id="no-cost">No call in this range has a price: its cost is unknown. Prices are set '
             'under <a href="/console/operations#prices-heading">Operations, Prices</a>.</p>')
    chart = "" if not totals else (
        '<div class="charts">' + _chart("tokens", "Tokens per agent per day") + costs + "</div>"
        + _chart("calls", "Model calls per agent per day")
        + json_script("usage-data", data)
        + f'<link rel="stylesheet" href="{STATIC}/uPlot.min.css">'
        f'<script src="{STATIC}/uPlot.iife.min.js" defer></script><script src="{STATIC}/usage.js" defer></script>')
    body = (_filter(agent, since, until) + '<p class="meta">Model tokens (prompt plus completion), calls and their '
            "cost, per agent and UTC day: each call at the price of its model in effect at its time; a call with no "
            "price is of unknown cost.</p>" + chart + "<h2>Numbers</h2>" + numbers)
    return html(page(f"Usage of {current.viewer.tenant_slug}", body, viewer=current.viewer, section="usage"))
