"""Telemetry: missing IDs become NULL, anything else must be an ID; batches validate first; scoped reads."""

from __future__ import annotations

from typing import Any

import pytest

from agentfy.identity import InvalidIdError
from agentfy.store.db import Database
from agentfy.store.errors import InvalidInputError, NotFoundError
from agentfy.store.repos import telemetry
from agentfy.store.repos.telemetry import SpanRecord, TraceRecord, UsageRecord
from tests.helpers.tenants import make_tenant
from tests.store.helpers import count, new_agent

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
LEGACY_AGENT = "0193a5b0-7000-7000-8000-000000000001"


def _span(n: int, **kwargs: Any) -> SpanRecord:
    values: dict[str, Any] = {"span_id": f"{n + 1:016x}", "trace_id": TRACE, "name": f"step {n}",
                              "started_at": f"2026-01-01T00:00:{n:02d}.000000Z", "duration_ms": 1.5, **kwargs}
    return SpanRecord(**values)


def _nulls(db: Database, table: str) -> int:
    with db.transaction(write=False) as tx:
        return int(tx.scalar(f"SELECT count(*) FROM {table} WHERE agent_id IS NULL AND tenant_id IS NULL"))


@pytest.mark.parametrize("missing", [None, ""])
def test_a_missing_id_is_stored_as_null(db: Database, missing: str | None) -> None:
    with db.transaction() as tx:
        telemetry.record_trace(tx, TraceRecord(trace_id=TRACE, name="run", started_at="t", tenant_id=missing,
                                               agent_id=missing))
        telemetry.record_span(tx, _span(0, tenant_id=missing, agent_id=missing))
        telemetry.record_usage(tx, UsageRecord(model="m", input_tokens=1, output_tokens=2, tenant_id=missing,
                                               agent_id=missing))
    assert _nulls(db, "traces") == _nulls(db, "spans") == _nulls(db, "usage_snapshots") == 1


BAD_IDS = [("agent_id", "00000000-0000-0000-0000-000000000000"), ("agent_id", "goctech-leader"),
           ("agent_id", "team-calm-rivers-k8m4p2d7n9x3"), ("agent_id", "AGENT-CALM"), ("tenant_id", "acme"),
           ("tenant_id", "00000000-0000-0000-0000-000000000000"), ("agent_id", 0)]


@pytest.mark.parametrize(("field", "bad"), BAD_IDS)
def test_anything_but_an_id_is_refused_before_sql(db: Database, field: str, bad: object) -> None:
    with db.transaction() as tx:
        with pytest.raises(InvalidIdError) as caught:
            telemetry.record_span(tx, _span(0, **{field: bad}))
        assert caught.value.field == field and caught.value.value == bad
        with pytest.raises(InvalidIdError):
            telemetry.record_trace(tx, TraceRecord(trace_id=TRACE, name="run", started_at="t", **{field: bad}))
        with pytest.raises(InvalidIdError):
            telemetry.record_usage(tx, UsageRecord(model="m", input_tokens=1, output_tokens=1, **{field: bad}))
    assert count(db, "spans") == count(db, "traces") == count(db, "usage_snapshots") == 0


@pytest.mark.parametrize("position", [0, 2, 4])
def test_a_batch_validates_every_row_before_writing(db: Database, position: int) -> None:
    acme = make_tenant(db, "acme").scope
    bot = new_agent(db, acme, "bot")
    rows = [_span(i, tenant_id=acme.tenant_id, agent_id=bot.id) for i in range(4)]
    rows.insert(position, _span(9, agent_id="goctech-leader"))
    with pytest.raises(InvalidIdError, match=rf"invalid spans\[{position}\].agent_id 'goctech-leader'"), \
            db.transaction() as tx:
        telemetry.record_spans(tx, rows)
    usages = [UsageRecord(model="m", input_tokens=1, output_tokens=1, agent_id=bot.id) for _ in range(4)]
    usages.insert(position, UsageRecord(model="m", input_tokens=-1, output_tokens=1))
    with pytest.raises(InvalidInputError, match=rf"usages\[{position}\].input_tokens"), db.transaction() as tx:
        telemetry.record_usages(tx, usages)
    traces = [TraceRecord(trace_id=f"{i + 1:032x}", name="t", started_at="t") for i in range(4)]
    traces.insert(position, TraceRecord(trace_id=TRACE, name="t", started_at="t", tenant_id="acme"))
    with pytest.raises(InvalidIdError, match=rf"traces\[{position}\].tenant_id"), db.transaction() as tx:
        telemetry.record_traces(tx, traces)
    assert count(db, "spans") == count(db, "traces") == count(db, "usage_snapshots") == 0
    with db.transaction() as tx:
        telemetry.record_spans(tx, rows[:position] + rows[position + 1:])
        telemetry.record_usages(tx, usages[:position] + usages[position + 1:])
        telemetry.record_traces(tx, traces[:position] + traces[position + 1:])
    assert count(db, "spans") == count(db, "traces") == count(db, "usage_snapshots") == 4


@pytest.mark.parametrize(("field", "bad"), [("span_id", "0" * 16), ("span_id", "ABCDEF0123456789"), ("span_id", "12"),
                                            ("trace_id", "0" * 32), ("duration_ms", -1.0),
                                            ("duration_ms", float("nan")), ("name", "")])
def test_span_fields_are_checked(db: Database, field: str, bad: object) -> None:
    with pytest.raises(InvalidInputError) as caught, db.transaction() as tx:
        telemetry.record_span(tx, _span(0, **{field: bad}))
    assert caught.value.field == field


def test_redelivered_spans_and_traces_are_ignored(db: Database) -> None:
    with db.transaction() as tx:
        telemetry.record_spans(tx, [_span(0), _span(0, name="again")])
        telemetry.record_span(tx, _span(0))
        telemetry.record_traces(tx, [TraceRecord(trace_id=TRACE, name="a", started_at="t")] * 2)
    assert count(db, "spans") == count(db, "traces") == 1


def test_reads_are_tenant_scoped(db: Database) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    bot = new_agent(db, acme, "bot")
    with db.transaction() as tx:
        telemetry.record_trace(tx, TraceRecord(trace_id=TRACE, name="run", started_at="t0",
                                               tenant_id=acme.tenant_id, agent_id=bot.id))
        telemetry.record_spans(tx, [_span(i, tenant_id=acme.tenant_id, agent_id=bot.id,
                                          attributes={"tool": f"t{i}"}) for i in range(3)])
        telemetry.record_span(tx, _span(7, agent_id=bot.id))  # no tenant: nobody's read
        telemetry.record_usage(tx, UsageRecord(model="m", input_tokens=10, output_tokens=5,
                                               tenant_id=acme.tenant_id, agent_id=bot.id))
    with db.transaction() as tx:
        spans = telemetry.spans_for_agent(tx, acme, bot.id)
        assert [s.name for s in spans] == ["step 2", "step 1", "step 0"]
        assert spans[0].attributes == {"tool": "t2"} and spans[0].agent_id == bot.id
        assert [s.name for s in telemetry.spans_for_trace(tx, acme, TRACE)] == ["step 0", "step 1", "step 2"]
        assert len(telemetry.spans_for_agent(tx, acme, bot.id, limit=2)) == 2
        assert telemetry.get_trace(tx, acme, TRACE).agent_id == bot.id
        assert [t.trace_id for t in telemetry.traces_for_agent(tx, acme, bot.id)] == [TRACE]
        assert [(u.input_tokens, u.output_tokens) for u in telemetry.usage_for_agent(tx, acme, bot.id)] == [(10, 5)]
        # Another tenant, with the real IDs: nothing, and the single-row read is "not found".
        assert telemetry.spans_for_agent(tx, globex, bot.id) == []
        assert telemetry.spans_for_trace(tx, globex, TRACE) == []
        assert telemetry.traces_for_agent(tx, globex, bot.id) == []
        assert telemetry.usage_for_agent(tx, globex, bot.id) == []
        for ref in (TRACE, "1" * 32):
            with pytest.raises(NotFoundError, match=f"trace '{ref}' not found"):
                telemetry.get_trace(tx, globex, ref)
        with pytest.raises(InvalidIdError):
            telemetry.spans_for_agent(tx, acme, "bot")


def test_a_legacy_agent_id_is_an_id(db: Database) -> None:
    with db.transaction() as tx:
        telemetry.record_span(tx, _span(0, agent_id=LEGACY_AGENT))
        assert tx.scalar("SELECT agent_id FROM spans") == LEGACY_AGENT
