"""Traces: off unless an exporter is configured; when on, a request span named by its route template with
``agent_id`` and ``tenant_id`` (IDs, never the key or slug), and a span per database statement inside it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentfy import tracing
from agentfy.gateway.app import create_app
from agentfy.settings import load_settings
from agentfy.store.db import Database
from agentfy.tracing import TelemetrySettings
from tests.helpers.tenants import Tenant
from tests.store.helpers import new_agent


def test_tracing_is_off_by_default(db: Database) -> None:
    assert tracing.tracer_for(TelemetrySettings()) is None
    create_app(db, signing_secret=b"s" * 32, settings=load_settings())
    assert db.tracer is None


@pytest.fixture
def exporter(db: Database, monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    """Tracing on (the console exporter's setting), its spans kept in memory; off again afterwards."""
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    monkeypatch.setitem(tracing._configured, "console", provider.get_tracer("test"))
    monkeypatch.setenv("AGENTFY_TELEMETRY_OTEL_EXPORTER", "console")
    yield spans
    db.tracer = None


def test_a_request_span_carries_ids_and_contains_the_statements(db: Database, acme: Tenant,
                                                                exporter: InMemorySpanExporter) -> None:
    agent = new_agent(db, acme.scope, "traced-bot")
    with TestClient(create_app(db, signing_secret=b"s" * 32, settings=load_settings())) as client:
        assert client.get("/v1/agents/traced-bot", headers=acme.headers()).status_code == 200
    spans = exporter.get_finished_spans()
    (request,) = [span for span in spans if span.name == "GET /v1/agents/{agent}"]  # the gateway's, not FastAPI's too
    assert not [span.name for span in spans if span.name.startswith("fastapi.")]  # nor the framework's operations
    assert request.attributes is not None
    assert request.attributes["agent_id"] == agent.id and request.attributes["tenant_id"] == acme.scope.tenant_id
    assert request.attributes["http.response.status_code"] == 200
    assert "traced-bot" not in {str(value) for value in request.attributes.values()}  # the key is not an ID
    statements = [span for span in spans if span.name.startswith("db ")]
    assert statements and all(span.attributes and span.attributes["db.system"] == db.dialect for span in statements)
    inside = [span for span in statements if span.parent is not None
              and span.parent.span_id == request.context.span_id]
    assert inside, "the statements of the request are children of its span"


def test_an_agent_run_is_a_span_with_the_agents_id(db: Database, acme: Tenant,
                                                   exporter: InMemorySpanExporter) -> None:
    from agentfy.store.repos import api_keys, orgs

    agent = new_agent(db, acme.scope, "chatty")
    with db.transaction() as tx:
        user = orgs.create_user(tx, display_name="Ann").id
        orgs.add_member(tx, acme.scope, user, "operator")
        key = api_keys.create_api_key(tx, acme.scope, name="ann", role="operator", user_id=user).key
    with TestClient(create_app(db, signing_secret=b"s" * 32, settings=load_settings())) as client:
        answer = client.post("/v1/agents/chatty/messages", json={"text": "hello"},
                             headers={"Authorization": f"Bearer {key}"})
        assert answer.status_code == 200, answer.text
    (run,) = [span for span in exporter.get_finished_spans() if span.name == "agent.run"]
    assert run.attributes is not None
    assert run.attributes["agent_id"] == agent.id and run.attributes["tenant_id"] == acme.scope.tenant_id
    assert run.attributes["agent.key"] == "chatty" and run.attributes["tenant.slug"] == "acme"  # display only
