"""What an operator sees of a request: a JSON log record carrying its request ID, the tenant's slug and the
agent key; the ``X-Request-ID`` echoed; ``/metrics`` with requests, caches, the pool, the feed and the bus."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from agentfy.gateway.app import create_app
from agentfy.logs import IdentityFilter, JsonFormatter
from agentfy.settings import load_settings
from agentfy.store.db import Database
from tests.helpers.tenants import Tenant
from tests.store.helpers import new_agent


class _Captured(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []
        self.setFormatter(JsonFormatter())
        self.addFilter(IdentityFilter())

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@pytest.fixture
def captured() -> Iterator[_Captured]:
    handler = _Captured()
    logger = logging.getLogger("agentfy.request")
    logger.addHandler(handler)
    previous = logger.level
    logger.setLevel(logging.INFO)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(previous)


def _records(handler: _Captured) -> list[dict[str, object]]:
    return [json.loads(line) for line in handler.lines]


def test_a_request_log_line_carries_its_request_id_tenant_slug_and_agent_key(
        db: Database, client: TestClient, acme: Tenant, captured: _Captured) -> None:
    agent = new_agent(db, acme.scope, "support-bot")
    for path in (f"/v1/agents/{agent.id}", "/v1/agents/support-bot"):  # a cold read, then the warm path
        answer = client.get(path, headers={**acme.headers(), "X-Request-ID": "req-42.a"})
        assert answer.status_code == 200
        assert answer.headers["x-request-id"] == "req-42.a"
    records = _records(captured)
    assert len(records) == 2
    for record in records:
        assert record["request_id"] == "req-42.a"
        assert record["tenant"] == "acme"  # the slug, never the organization's ID
        assert record["agent_key"] == "support-bot"
        assert record["message"] == "GET /v1/agents/{agent} 200"
        assert record["status"] == 200 and isinstance(record["duration_ms"], float)
        assert acme.scope.tenant_id not in json.dumps(record)


def test_a_missing_or_implausible_request_id_is_replaced_by_a_random_one(
        client: TestClient, acme: Tenant, captured: _Captured) -> None:
    ids = set()
    for header in ({}, {"X-Request-ID": "x" * 129}, {"X-Request-ID": "bad id\twith spaces"}):
        answer = client.get("/v1/agents", headers={**acme.headers(), **header})
        assert answer.status_code == 200
        ids.add(answer.headers["x-request-id"])
    assert len(ids) == 3 and all(re.fullmatch(r"[0-9a-f]{32}", value) for value in ids)
    assert {record["request_id"] for record in _records(captured)} == ids


def _sample(text: str, name: str, **labels: str) -> float:
    for line in text.splitlines():
        if line.startswith("#") or not line.startswith(name):
            continue
        head, _, value = line.rpartition(" ")
        if head.split("{")[0] != name:
            continue
        if all(f'{key}="{val}"' in head for key, val in labels.items()):
            return float(value)
    raise AssertionError(f"no sample {name} {labels} in\n{text}")


def test_metrics_are_scraped_and_move_with_traffic(db: Database, client: TestClient, acme: Tenant) -> None:
    new_agent(db, acme.scope, "helper")
    before = client.get("/metrics")
    assert before.status_code == 200 and before.headers["content-type"].startswith("text/plain")
    for _ in range(3):
        assert client.get("/v1/agents/helper", headers=acme.headers()).status_code == 200
    assert client.get("/v1/agents/nobody", headers=acme.headers()).status_code == 404
    after = client.get("/metrics").text
    route = {"method": "GET", "route": "/v1/agents/{agent}"}
    assert _sample(after, "agentfy_http_requests_total", **route, status="200") == 3
    assert _sample(after, "agentfy_http_requests_total", **route, status="404") == 1
    assert _sample(after, "agentfy_http_request_duration_seconds_count", **route) == 4
    assert _sample(after, "agentfy_router_cache_hits_total") >= 2
    assert _sample(after, "agentfy_router_cache_misses_total") >= 1
    assert _sample(after, "agentfy_principal_cache_hits_total") >= 1
    assert _sample(after, "agentfy_db_pool_limit") == 20
    assert _sample(after, "agentfy_db_pool_connections", state="in_use") >= 0
    assert _sample(after, "agentfy_change_feed_connected") in (0, 1)
    assert _sample(after, "agentfy_run_event_broadcasts_total", outcome="dropped") == 0
    assert _sample(after, "agentfy_events", status="pending") >= 0
    assert _sample(after, "agentfy_events_lag_seconds") >= 0
    # the raw path never becomes a label: an unknown path is one bounded value
    client.get("/no/such/path/12345")
    assert "12345" not in client.get("/metrics").text


def test_a_change_committed_is_measured_as_feed_lag(db: Database, client: TestClient, acme: Tenant) -> None:
    assert client.post("/v1/agents", json={"agent_key": "fresh", "display_name": "Fresh"},
                       headers=acme.headers()).status_code == 201
    text = client.get("/metrics").text
    assert _sample(text, "agentfy_change_feed_lag_seconds_count") >= 1


def test_metrics_can_be_turned_off(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTFY_TELEMETRY_METRICS", "false")
    with TestClient(create_app(db, signing_secret=b"s" * 32, settings=load_settings())) as quiet:
        assert quiet.get("/metrics").status_code == 404
