"""Logs carry the key with its tenant; spans carry the ID under ``agent_id``."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode, Tracer

from agentfy.agents.telemetry import (
    AgentLoggerAdapter,
    AgentTenantPairFilter,
    agent_log_fields,
    agent_logger,
    agent_span,
)
from agentfy.identity import AgentId, AgentKey, InvalidAgentKeyError, InvalidIdError, OrgId
from agentfy.identity.keys import InvalidTenantSlugError
from agentfy.ids import format_id, is_id
from agentfy.store.repos.agents import Agent

LOGGER = "agentfy.tests.agents.telemetry"


def make_agent(key: str = "tieu-ho") -> Agent:
    return Agent(AgentId(format_id("agent")), OrgId(format_id("org")), AgentKey(key), "Tiểu Hổ", {},
                 "2026-04-11T00:00:00Z", "2026-04-11T00:00:00Z")


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def tracer(exporter: InMemorySpanExporter) -> Iterator[Tracer]:
    provider = TracerProvider()  # a private provider: the global one is left alone
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider.get_tracer("agentfy-tests")
    provider.shutdown()


@pytest.fixture
def log(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    return caplog


# -- Logs ---------------------------------------------------------------------------------------------------
def test_log_fields_are_the_key_and_the_slug_together() -> None:
    assert agent_log_fields("tieu-ho", "master") == {"agent": "tieu-ho", "tenant": "master"}


def test_log_fields_cannot_be_built_with_one_of_the_pair() -> None:
    with pytest.raises(TypeError):
        agent_log_fields("tieu-ho")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        AgentLoggerAdapter(logging.getLogger(LOGGER), agent_key="tieu-ho")  # type: ignore[call-arg]


def test_ids_are_refused_in_log_fields() -> None:
    with pytest.raises(InvalidAgentKeyError):
        agent_log_fields(format_id("agent"), "master")
    with pytest.raises(InvalidTenantSlugError):
        agent_log_fields("tieu-ho", format_id("org"))


def test_every_record_of_the_adapter_has_both_fields(log: pytest.LogCaptureFixture) -> None:
    logger = agent_logger(LOGGER, make_agent(), "master")
    logger.debug("debug")
    logger.info("turn started", extra={"turn": 3})
    logger.warning("slow tool %s", "search")
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        logger.exception("turn failed")
    records = [r for r in log.records if r.name == LOGGER]
    assert len(records) == 4
    for record in records:
        assert (record.agent, record.tenant) == ("tieu-ho", "master")  # type: ignore[attr-defined]
        assert not is_id(record.agent, None)  # type: ignore[attr-defined]
    assert records[1].turn == 3  # type: ignore[attr-defined]


def test_the_adapter_refuses_a_second_agent_or_tenant(log: pytest.LogCaptureFixture) -> None:
    logger = agent_logger(logging.getLogger(LOGGER), make_agent(), "master")
    with pytest.raises(ValueError, match="tenant"):
        logger.info("x", extra={"tenant": "viet-org"})
    with pytest.raises(ValueError, match="agent"):
        logger.info("x", extra={"agent": "other-bot"})
    assert not [r for r in log.records if r.name == LOGGER]


def test_the_pair_filter_refuses_a_key_without_its_tenant(log: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger(LOGGER)
    pair_filter = AgentTenantPairFilter()
    logger.addFilter(pair_filter)
    try:
        with pytest.raises(ValueError, match="without its tenant"):
            logger.info("alone", extra={"agent": "tieu-ho"})
        logger.info("paired", extra=agent_log_fields("tieu-ho", "master"))
        logger.info("tenant-level", extra={"tenant": "master"})
    finally:
        logger.removeFilter(pair_filter)
    assert [r.getMessage() for r in log.records if r.name == LOGGER] == ["paired", "tenant-level"]


# -- Spans --------------------------------------------------------------------------------------------------
def only_span(exporter: InMemorySpanExporter) -> ReadableSpan:
    spans = exporter.get_finished_spans()
    assert len(spans) == 1
    return spans[0]


def test_the_span_carries_the_id_as_agent_id_and_never_the_key(tracer: Tracer,
                                                               exporter: InMemorySpanExporter) -> None:
    agent = make_agent()
    with agent_span(tracer, "agent.turn", agent, "master", attributes={"turn": 3}) as span:
        assert span.is_recording()
    attributes = dict(only_span(exporter).attributes or {})
    assert attributes["agent_id"] == agent.id and is_id(attributes["agent_id"], "agent")
    assert attributes["agent_id"] != agent.agent_key
    assert attributes["tenant_id"] == agent.tenant_id and is_id(attributes["tenant_id"], "org")
    assert attributes["agent.key"] == "tieu-ho" and attributes["tenant.slug"] == "master"
    assert attributes["turn"] == 3
    assert agent.agent_key not in (attributes["agent_id"], attributes["tenant_id"])


def test_the_span_is_current_and_nests(tracer: Tracer, exporter: InMemorySpanExporter) -> None:
    agent = make_agent()
    with agent_span(tracer, "agent.turn", agent, "master") as outer, tracer.start_as_current_span("tool") as inner:
        assert inner.get_span_context().trace_id == outer.get_span_context().trace_id
    names = [s.name for s in exporter.get_finished_spans()]
    assert names == ["tool", "agent.turn"]


def test_an_exception_is_recorded_and_re_raised(tracer: Tracer, exporter: InMemorySpanExporter) -> None:
    with pytest.raises(RuntimeError), agent_span(tracer, "agent.turn", make_agent(), "master"):
        raise RuntimeError("boom")
    span = only_span(exporter)
    assert span.status.status_code is StatusCode.ERROR
    assert [event.name for event in span.events] == ["exception"]


@pytest.mark.parametrize("reserved", ["agent_id", "tenant_id", "agent.key", "tenant.slug"])
def test_identity_attributes_cannot_be_overridden(tracer: Tracer, exporter: InMemorySpanExporter,
                                                  reserved: str) -> None:
    with pytest.raises(ValueError, match=reserved), agent_span(tracer, "t", make_agent(), "master",
                                                               attributes={reserved: "tieu-ho"}):
        pass
    assert not exporter.get_finished_spans()


def test_a_record_with_swapped_identities_starts_no_span(tracer: Tracer, exporter: InMemorySpanExporter) -> None:
    agent = make_agent()
    swapped = agent._replace(id=agent.agent_key, agent_key=agent.id)  # type: ignore[arg-type]  # mypy sees it too
    with pytest.raises(InvalidIdError), agent_span(tracer, "t", swapped, "master"):
        pass
    with pytest.raises(InvalidTenantSlugError), agent_span(tracer, "t", agent, agent.tenant_id):
        pass
    assert not exporter.get_finished_spans()
