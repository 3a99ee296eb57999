"""Telemetry: traces, spans and usage snapshots (one row per model call: what each agent costs).

These tables are append-only and high-volume, so they have no foreign keys; the insert path is the
defence instead.  A missing tenant or agent ID (``None`` or ``""``) becomes SQL NULL, and anything else
must be a valid ID of its entity: the nil UUID, an ``agent_key`` (``goctech-leader``) or another entity's
ID raises :class:`~agentfy.identity.InvalidIdError` before any SQL, so no row ever lands with a
placeholder ID.  Batch inserts validate every row first (the error names ``spans[i].<field>``).

Inserts are not tenant-scoped (the exporter writes for every tenant) and are idempotent on the
OpenTelemetry ID: a re-delivered span or trace is ignored.  Reads are tenant-scoped: they take the
``Scope`` and see only its rows.  :func:`usage_by_agent_day` sums the usage snapshots per agent, UTC day and
model in SQL (``GROUP BY``, the same statement on both engines: ``recorded_at`` is ISO-8601 text, so its first
ten characters are the day), each with the organization's price in effect at the call's own time.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from agentfy.identity import AgentId, OrgId, Scope, parse_id
from agentfy.store.db import Sql, Tx, now
from agentfy.store.errors import InvalidInputError, NotFoundError
from agentfy.store.inputs import check_text
from agentfy.store.repos import prices
from agentfy.store.repos._batch import check_json
from agentfy.store.repos._common import load_json
from agentfy.store.repos.prices import Price
from agentfy.store.schema import agents, model_prices, spans, traces, usage_snapshots
from agentfy.store.sql import insert

NAME_MAX_LENGTH: Final = 500
_HEX: Final = "0123456789abcdef"
TRACE_ID_LENGTH: Final = 32
SPAN_ID_LENGTH: Final = 16
DEFAULT_LIMIT: Final = 1000


def _insert_ignoring_duplicates(table: sa.Table, columns: Sequence[str], key: str) -> Sql:
    def build(dialect: str) -> sa.ClauseElement:
        values: dict[str, Any] = {c: sa.bindparam(c) for c in columns}
        if dialect == "postgresql":
            return postgresql.insert(table).values(values).on_conflict_do_nothing(index_elements=[key])
        return sqlite.insert(table).values(values).on_conflict_do_nothing(index_elements=[key])

    return Sql(build)


_INSERT_TRACE: Final = _insert_ignoring_duplicates(
    traces, ["trace_id", "tenant_id", "agent_id", "name", "started_at", "ended_at"], "trace_id")
_INSERT_SPAN: Final = _insert_ignoring_duplicates(
    spans, ["span_id", "trace_id", "tenant_id", "agent_id", "name", "started_at", "duration_ms", "attributes"],
    "span_id")
_INSERT_USAGE: Final = insert(usage_snapshots, ["tenant_id", "agent_id", "model", "input_tokens", "output_tokens",
                                                "cached_tokens", "provider", "run_id", "session_key",
                                                "recorded_at"])

_TRACE_COLUMNS: Final = (traces.c.trace_id, traces.c.tenant_id, traces.c.agent_id, traces.c.name,
                         traces.c.started_at, traces.c.ended_at)
_SPAN_COLUMNS: Final = (spans.c.span_id, spans.c.trace_id, spans.c.tenant_id, spans.c.agent_id, spans.c.name,
                        spans.c.started_at, spans.c.duration_ms, spans.c.attributes)
_TRACE_BY_ID: Final = sa.select(*_TRACE_COLUMNS).where(traces.c.tenant_id == sa.bindparam("tenant_id"),
                                                       traces.c.trace_id == sa.bindparam("trace_id"))
_TRACES_OF_AGENT: Final = (sa.select(*_TRACE_COLUMNS)
                           .where(traces.c.tenant_id == sa.bindparam("tenant_id"),
                                  traces.c.agent_id == sa.bindparam("agent_id"))
                           .order_by(traces.c.started_at.desc(), traces.c.trace_id)
                           .limit(sa.bindparam("limit")))
_SPANS_OF_AGENT: Final = (sa.select(*_SPAN_COLUMNS)
                          .where(spans.c.tenant_id == sa.bindparam("tenant_id"),
                                 spans.c.agent_id == sa.bindparam("agent_id"))
                          .order_by(spans.c.started_at.desc(), spans.c.span_id)
                          .limit(sa.bindparam("limit")))
_SPANS_OF_TRACE: Final = (sa.select(*_SPAN_COLUMNS)
                          .where(spans.c.tenant_id == sa.bindparam("tenant_id"),
                                 spans.c.trace_id == sa.bindparam("trace_id"))
                          .order_by(spans.c.started_at, spans.c.span_id))
_USAGE_OF_AGENT: Final = (sa.select(usage_snapshots.c.id, usage_snapshots.c.tenant_id, usage_snapshots.c.agent_id,
                                    usage_snapshots.c.model, usage_snapshots.c.input_tokens,
                                    usage_snapshots.c.output_tokens, usage_snapshots.c.recorded_at)
                          .where(usage_snapshots.c.tenant_id == sa.bindparam("tenant_id"),
                                 usage_snapshots.c.agent_id == sa.bindparam("agent_id"))
                          .order_by(usage_snapshots.c.recorded_at.desc(), usage_snapshots.c.id.desc())
                          .limit(sa.bindparam("limit")))


@dataclass(frozen=True, slots=True, kw_only=True)
class TraceRecord:
    """One trace (``trace_id``: 32 lower-case hex, not all zero).  ``tenant_id``/``agent_id``: an ID, or
    ``None``/``""`` when the trace belongs to none."""

    trace_id: str
    name: str
    started_at: str
    ended_at: str | None = None
    tenant_id: str | None = None
    agent_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SpanRecord:
    """One span (``span_id``: 16 lower-case hex, not all zero); IDs as in :class:`TraceRecord`."""

    span_id: str
    trace_id: str
    name: str
    started_at: str
    duration_ms: float
    tenant_id: str | None = None
    agent_id: str | None = None
    attributes: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageRecord:
    """Tokens used by one model call; ``recorded_at`` defaults to now.  ``cached_tokens``: the prompt tokens
    the provider served from its cache, ``None`` when it does not report them (not 0: unknown is not none)."""

    model: str
    input_tokens: int
    output_tokens: int
    tenant_id: str | None = None
    agent_id: str | None = None
    recorded_at: str | None = None
    cached_tokens: int | None = None
    provider: str | None = None
    run_id: str | None = None
    session_key: str | None = None


@dataclass(frozen=True, slots=True)
class Trace:
    trace_id: str
    tenant_id: OrgId | None
    agent_id: AgentId | None
    name: str
    started_at: str
    ended_at: str | None


@dataclass(frozen=True, slots=True)
class Span:
    span_id: str
    trace_id: str
    tenant_id: OrgId | None
    agent_id: AgentId | None
    name: str
    started_at: str
    duration_ms: float
    attributes: dict[str, Any]


@dataclass(frozen=True, slots=True)
class UsageSnapshot:
    id: int
    tenant_id: OrgId | None
    agent_id: AgentId | None
    model: str
    input_tokens: int
    output_tokens: int
    recorded_at: str


def optional_id(value: object, prefix: str, field: str) -> str | None:
    """``None`` for a missing ID (``None`` or ``""``), the ID itself if valid, else ``InvalidIdError``.

    The one conversion to NULL the telemetry path allows: the nil UUID is *not* "missing" — it is a caller
    bug (a failed parse turned into a placeholder) and is refused like any other non-ID.
    """
    if value is None or value == "":
        return None
    return parse_id(value, prefix, field=field)


def _otel_id(value: object, length: int, what: str, field: str) -> str:
    if type(value) is not str or len(value) != length or value.strip(_HEX) or not value.strip("0"):
        raise InvalidInputError(f"invalid {field} {value!r}: expected an OpenTelemetry {what} ID ({length} "
                                "lower-case hex digits, not all zero)", field=field, value=value)
    return value


def _count(value: object, field: str) -> int:
    if type(value) is not int or value < 0:
        raise InvalidInputError(f"invalid {field} {value!r}: expected an integer >= 0", field=field, value=value)
    return value


def _trace_row(trace: TraceRecord, field: str) -> dict[str, Any]:
    return {
        "trace_id": _otel_id(trace.trace_id, TRACE_ID_LENGTH, "trace", f"{field}trace_id"),
        "tenant_id": optional_id(trace.tenant_id, "org", f"{field}tenant_id"),
        "agent_id": optional_id(trace.agent_id, "agent", f"{field}agent_id"),
        "name": check_text(trace.name, f"{field}name", max_length=NAME_MAX_LENGTH),
        "started_at": check_text(trace.started_at, f"{field}started_at", max_length=40),
        "ended_at": None if trace.ended_at is None else check_text(trace.ended_at, f"{field}ended_at", max_length=40),
    }


def _span_row(span: SpanRecord, field: str) -> dict[str, Any]:
    duration = span.duration_ms
    if type(duration) not in (int, float) or not math.isfinite(duration) or duration < 0:
        raise InvalidInputError(f"invalid {field}duration_ms {duration!r}: expected a finite number >= 0",
                                field=f"{field}duration_ms", value=duration)
    return {
        "span_id": _otel_id(span.span_id, SPAN_ID_LENGTH, "span", f"{field}span_id"),
        "trace_id": _otel_id(span.trace_id, TRACE_ID_LENGTH, "trace", f"{field}trace_id"),
        "tenant_id": optional_id(span.tenant_id, "org", f"{field}tenant_id"),
        "agent_id": optional_id(span.agent_id, "agent", f"{field}agent_id"),
        "name": check_text(span.name, f"{field}name", max_length=NAME_MAX_LENGTH),
        "started_at": check_text(span.started_at, f"{field}started_at", max_length=40),
        "duration_ms": float(duration),
        "attributes": check_json(span.attributes, f"{field}attributes"),
    }


def _optional_text(value: str | None, field: str, max_length: int) -> str | None:
    return None if value is None else check_text(value, field, max_length=max_length)


def _usage_row(usage: UsageRecord, field: str, stamp: str) -> dict[str, Any]:
    return {
        "tenant_id": optional_id(usage.tenant_id, "org", f"{field}tenant_id"),
        "agent_id": optional_id(usage.agent_id, "agent", f"{field}agent_id"),
        "model": check_text(usage.model, f"{field}model", max_length=200),
        "input_tokens": _count(usage.input_tokens, f"{field}input_tokens"),
        "output_tokens": _count(usage.output_tokens, f"{field}output_tokens"),
        "cached_tokens": None if usage.cached_tokens is None else _count(usage.cached_tokens,
                                                                         f"{field}cached_tokens"),
        "provider": _optional_text(usage.provider, f"{field}provider", 50),
        "run_id": _optional_text(usage.run_id, f"{field}run_id", 64),
        "session_key": _optional_text(usage.session_key, f"{field}session_key", 500),
        "recorded_at": stamp if usage.recorded_at is None else check_text(usage.recorded_at, f"{field}recorded_at",
                                                                           max_length=40),
    }


# -- insert paths (not tenant-scoped) -----------------------------------------------------------------------
def record_trace(tx: Tx, trace: TraceRecord) -> None:
    """Insert a trace (ignored if its ``trace_id`` is already recorded)."""
    tx.execute(_INSERT_TRACE, _trace_row(trace, ""))


def record_traces(tx: Tx, rows: Sequence[TraceRecord]) -> None:
    """Insert many traces; every row is validated before the first is written."""
    tx.executemany(_INSERT_TRACE, [_trace_row(t, f"traces[{i}].") for i, t in enumerate(rows)])


def record_span(tx: Tx, span: SpanRecord) -> None:
    """Insert a span (ignored if its ``span_id`` is already recorded)."""
    tx.execute(_INSERT_SPAN, _span_row(span, ""))


def record_spans(tx: Tx, rows: Sequence[SpanRecord]) -> None:
    """Insert many spans; every row is validated before the first is written."""
    tx.executemany(_INSERT_SPAN, [_span_row(s, f"spans[{i}].") for i, s in enumerate(rows)])


def record_usage(tx: Tx, usage: UsageRecord) -> None:
    """Insert one usage snapshot."""
    tx.execute(_INSERT_USAGE, _usage_row(usage, "", now()))


def record_usages(tx: Tx, rows: Sequence[UsageRecord]) -> None:
    """Insert many usage snapshots; every row is validated before the first is written."""
    stamp = now()
    tx.executemany(_INSERT_USAGE, [_usage_row(u, f"usages[{i}].", stamp) for i, u in enumerate(rows)])


# -- reads (tenant-scoped) ----------------------------------------------------------------------------------
def _trace(row: tuple[Any, ...]) -> Trace:
    return Trace(row[0], row[1], row[2], row[3], row[4], row[5])


def _span(row: tuple[Any, ...]) -> Span:
    return Span(row[0], row[1], row[2], row[3], row[4], row[5], float(row[6]), load_json(row[7]))


def _limit(limit: int) -> int:
    if type(limit) is not int or not 1 <= limit <= 100_000:
        raise InvalidInputError(f"invalid limit {limit!r}: expected 1-100000", field="limit", value=limit)
    return limit


def get_trace(tx: Tx, scope: Scope, trace_id: str) -> Trace:
    """The tenant's trace with this ID, or :class:`NotFoundError` (another tenant's trace included)."""
    trace_id = _otel_id(trace_id, TRACE_ID_LENGTH, "trace", "trace_id")
    row = tx.one(_TRACE_BY_ID, {"tenant_id": scope.tenant_id, "trace_id": trace_id})
    if row is None:
        raise NotFoundError("trace", trace_id)
    return _trace(row)


def traces_for_agent(tx: Tx, scope: Scope, agent_id: str, *, limit: int = DEFAULT_LIMIT) -> list[Trace]:
    """The agent's traces in the tenant, newest first.  The agent need not exist any more (no FK: its
    history outlives it); another tenant's agent has no traces here."""
    params = {"tenant_id": scope.tenant_id, "agent_id": parse_id(agent_id, "agent", field="agent_id"),
              "limit": _limit(limit)}
    return [_trace(row) for row in tx.all(_TRACES_OF_AGENT, params)]


def spans_for_agent(tx: Tx, scope: Scope, agent_id: str, *, limit: int = DEFAULT_LIMIT) -> list[Span]:
    """The agent's spans in the tenant, newest first (see :func:`traces_for_agent`)."""
    params = {"tenant_id": scope.tenant_id, "agent_id": parse_id(agent_id, "agent", field="agent_id"),
              "limit": _limit(limit)}
    return [_span(row) for row in tx.all(_SPANS_OF_AGENT, params)]


def spans_for_trace(tx: Tx, scope: Scope, trace_id: str) -> list[Span]:
    """The tenant's spans of one trace, in start order."""
    trace_id = _otel_id(trace_id, TRACE_ID_LENGTH, "trace", "trace_id")
    return [_span(row) for row in tx.all(_SPANS_OF_TRACE, {"tenant_id": scope.tenant_id, "trace_id": trace_id})]


def usage_for_agent(tx: Tx, scope: Scope, agent_id: str, *, limit: int = DEFAULT_LIMIT) -> list[UsageSnapshot]:
    """The agent's usage snapshots in the tenant, newest first."""
    params = {"tenant_id": scope.tenant_id, "agent_id": parse_id(agent_id, "agent", field="agent_id"),
              "limit": _limit(limit)}
    return [UsageSnapshot(int(r[0]), r[1], r[2], r[3], int(r[4]), int(r[5]), r[6])
            for r in tx.all(_USAGE_OF_AGENT, params)]


@dataclass(frozen=True, slots=True)
class UsageDay:
    """One agent's usage of one model on one UTC day at one price (``day``: ``YYYY-MM-DD``).  ``agent_key``: the
    agent's current key, ``None`` once it is deleted (or for usage of no agent).  ``cached_tokens`` is ``None``
    when no call of the group reported it; ``calls`` is the number of model calls.  ``price``: the organization's
    price of the calls' provider and model in effect when they were made (:mod:`agentfy.store.repos.prices`), or
    ``None`` when none was — their cost is unknown; a day whose calls straddle a change of price is two groups."""

    agent_id: AgentId | None
    agent_key: str | None
    day: str
    model: str
    calls: int
    input_tokens: int
    output_tokens: int
    cached_tokens: int | None
    provider: str | None = None
    price: Price | None = None

    @property
    def cost(self) -> Decimal | None:
        """What the group's calls cost in ``price.currency`` (exact), ``None`` when unknown (no price)."""
        if self.price is None:
            return None
        return prices.cost(self.input_tokens, self.output_tokens, self.price.input_micros_per_million,
                           self.price.output_micros_per_million)


_DAY: Final = sa.func.substr(usage_snapshots.c.recorded_at, 1, 10).label("day")
#: The open ends of a range of days: every ``YYYY-MM-DD`` sorts between them.
_FIRST_DAY: Final = "0000-00-00"
_LAST_DAY: Final = "9999-99-99"


def _usage_by_day(one_agent: bool) -> sa.Select[Any]:
    c, a, p = usage_snapshots.c, agents.c, model_prices.c
    # The agent's current key, from a live agent of the same tenant (no FK: the usage outlives its agent).
    live = sa.and_(a.id == c.agent_id, a.tenant_id == c.tenant_id, a.deleted_at.is_(None))
    # The price in effect at the call's own time: its provider and model's latest effective_from at or before
    # recorded_at (both the store's UTC text, so they compare as text), in the same tenant only.
    earlier = model_prices.alias("earlier")
    in_effect = (sa.select(sa.func.max(earlier.c.effective_from))
                 .where(earlier.c.tenant_id == c.tenant_id, earlier.c.provider == c.provider,
                        earlier.c.model == c.model, earlier.c.effective_from <= c.recorded_at)
                 .scalar_subquery())
    priced = sa.and_(p.tenant_id == c.tenant_id, p.provider == c.provider, p.model == c.model,
                     p.effective_from == in_effect)
    where = [c.tenant_id == sa.bindparam("tenant_id"), c.recorded_at >= sa.bindparam("since"),
             sa.func.substr(c.recorded_at, 1, 10) <= sa.bindparam("until")]
    if one_agent:
        where.append(c.agent_id == sa.bindparam("agent_id"))
    price_columns = (p.effective_from, p.currency, p.input_micros_per_million, p.output_micros_per_million,
                     p.created_at)
    return (sa.select(c.agent_id, a.agent_key, _DAY, c.model, sa.func.count(), sa.func.sum(c.input_tokens),
                      sa.func.sum(c.output_tokens), sa.func.sum(c.cached_tokens), c.provider, *price_columns)
            .select_from(usage_snapshots.outerjoin(agents, live).outerjoin(model_prices, priced))
            .where(*where)
            .group_by(c.agent_id, a.agent_key, _DAY, c.model, c.provider, *price_columns)
            .order_by(_DAY.desc(), c.agent_id, c.model, c.provider.nulls_first(), p.effective_from.nulls_first())
            .limit(sa.bindparam("limit")))


def _usage_day(r: tuple[Any, ...]) -> UsageDay:
    price = None if r[9] is None else Price(r[8], r[3], r[9], r[10], int(r[11]), int(r[12]), r[13])
    return UsageDay(r[0], r[1], r[2], r[3], int(r[4]), int(r[5]), int(r[6]), None if r[7] is None else int(r[7]),
                    r[8], price)


_USAGE_BY_DAY: Final = _usage_by_day(False)
_USAGE_OF_AGENT_BY_DAY: Final = _usage_by_day(True)


#: A UTC day as ``usage_by_agent_day`` takes it: ``YYYY-MM-DD``, month 01-12, day 01-31.  Compared as text with
#: ``recorded_at`` (ISO-8601), so a day past a month's end (``02-31``) is simply after its last day.
DAY_PATTERN: Final = r"^[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])$"
_DAY_SHAPE: Final = re.compile(DAY_PATTERN)


def _day(value: str | None, field: str) -> str | None:
    if value is None:
        return None
    if type(value) is not str or not _DAY_SHAPE.fullmatch(value):
        raise InvalidInputError(f"invalid {field} {value!r}: expected a day YYYY-MM-DD", field=field, value=value)
    return value


def usage_by_agent_day(tx: Tx, scope: Scope, *, agent_id: str | None = None, since: str | None = None,
                       until: str | None = None, limit: int = DEFAULT_LIMIT) -> list[UsageDay]:
    """The tenant's usage summed per agent, UTC day, model, provider and the price in effect at each call (see
    :class:`UsageDay`), newest day first; ``agent_id`` narrows it to one agent, ``since``/``until``
    (``YYYY-MM-DD``, both included) to a range of days.  Usage with no agent (``agent_id`` NULL) is its own
    group.  Another tenant's rows and prices never count."""
    params: dict[str, Any] = {"tenant_id": scope.tenant_id, "since": _day(since, "since") or _FIRST_DAY,
                              "until": _day(until, "until") or _LAST_DAY, "limit": _limit(limit)}
    statement = _USAGE_BY_DAY
    if agent_id is not None:
        params["agent_id"] = parse_id(agent_id, "agent", field="agent_id")
        statement = _USAGE_OF_AGENT_BY_DAY
    return [_usage_day(r) for r in tx.all(statement, params)]
