"""``/v1/prices`` and the cost in ``/v1/usage``: admins put, list and delete prices; usage is costed at the price
in effect at each call's time (unknown without one, never zero); bad input is a 422 naming the field; another
organization's prices are never seen, used or deleted."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from agentfy.store.db import Database
from agentfy.store.repos import telemetry
from agentfy.store.repos.telemetry import UsageRecord
from tests.helpers.tenants import Tenant

PRICE: dict[str, Any] = {"provider": "openai", "model": "gpt-x", "effective_from": "2026-01-02T00:00:00Z",
                         "currency": "USD", "input_per_million": "2.50", "output_per_million": "10"}


def _agent(client: TestClient, tenant: Tenant, key: str) -> str:
    answer = client.post("/v1/agents", json={"agent_key": key}, headers=tenant.headers())
    assert answer.status_code == 201, answer.text
    agent_id: str = answer.json()["id"]
    return agent_id


def _calls(db: Database, tenant: Tenant, agent: str, *moments: str) -> None:
    with db.transaction() as tx:
        for moment in moments:
            telemetry.record_usage(tx, UsageRecord(model="gpt-x", provider="openai", input_tokens=1_000,
                                                   output_tokens=500, tenant_id=tenant.id, agent_id=agent,
                                                   recorded_at=moment))


def _put(client: TestClient, tenant: Tenant, **changes: Any) -> Any:
    return client.put("/v1/prices", json={**PRICE, **changes}, headers=tenant.headers("admin"))


def test_usage_is_costed_at_the_price_of_its_time_and_unknown_without_one(db: Database, client: TestClient,
                                                                           acme: Tenant) -> None:
    bot = _agent(client, acme, "bot")
    _calls(db, acme, bot, "2026-01-01T10:00:00.000000Z", "2026-01-02T10:00:00.000000Z",
           "2026-01-03T10:00:00.000000Z")
    put = _put(client, acme)
    assert put.status_code == 200, put.text
    assert put.json() | {"created_at": None} == {
        "provider": "openai", "model": "gpt-x", "effective_from": "2026-01-02T00:00:00.000000Z", "currency": "USD",
        "input_per_million": "2.5", "output_per_million": "10", "input_micros_per_million": 2_500_000,
        "output_micros_per_million": 10_000_000, "created_at": None, "replaced": False}
    assert _put(client, acme, effective_from="2026-01-03T00:00:00Z", input_per_million="1",
                output_per_million="1").status_code == 200

    rows = client.get("/v1/usage", headers=acme.headers("operator")).json()["rows"]
    assert [(r["day"], r["cost"], r["currency"], r["price_effective_from"]) for r in rows] == [
        ("2026-01-03", "0.0015", "USD", "2026-01-03T00:00:00.000000Z"),
        ("2026-01-02", "0.0075", "USD", "2026-01-02T00:00:00.000000Z"),  # the later price did not rewrite it
        ("2026-01-01", None, None, None)]  # before any price: unknown, not 0
    assert {r["provider"] for r in rows} == {"openai"}

    listed = client.get("/v1/prices", headers=acme.headers("admin")).json()["items"]
    assert [p["effective_from"] for p in listed] == ["2026-01-03T00:00:00.000000Z", "2026-01-02T00:00:00.000000Z"]
    deleted = client.delete("/v1/prices", params={"provider": "openai", "model": "gpt-x",
                                                  "effective_from": "2026-01-03T00:00:00Z"},
                            headers=acme.headers("admin"))
    assert deleted.status_code == 204, deleted.text
    rows = client.get("/v1/usage", params={"since": "2026-01-03"}, headers=acme.headers()).json()["rows"]
    assert [r["cost"] for r in rows] == ["0.0075"]  # costed by the price before the deleted one


def test_a_price_of_a_model_no_agent_uses_is_fine(client: TestClient, acme: Tenant) -> None:
    answer = _put(client, acme, model="next-year-model")
    assert answer.status_code == 200, answer.text
    assert _put(client, acme, model="next-year-model", currency="EUR").json()["replaced"] is True


@pytest.mark.parametrize(("field", "value"), [
    ("currency", "usd"), ("currency", "EURO"), ("currency", "US1"), ("input_per_million", "-1"),
    ("output_per_million", "-0.01"), ("input_per_million", "1e3"), ("input_per_million", 2.5),
    ("output_per_million", "1.0000001"), ("effective_from", "2026-01-01"), ("effective_from", "2026-01-01T00:00:00"),
    ("provider", "acme-ai"), ("model", ""),
])
def test_bad_input_is_a_422_naming_the_field(client: TestClient, acme: Tenant, field: str, value: object) -> None:
    answer = _put(client, acme, **{field: value})
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert error["field"] in (field, f"body.{field}"), error
    assert "SELECT" not in answer.text and "INSERT" not in answer.text
    assert client.get("/v1/prices", headers=acme.headers("admin")).json() == {"items": []}


def test_another_organizations_prices_are_never_visible(db: Database, client: TestClient, acme: Tenant,
                                                         globex: Tenant) -> None:
    assert _put(client, globex, effective_from="2020-01-01T00:00:00Z").status_code == 200
    bot = _agent(client, acme, "bot")
    _calls(db, acme, bot, "2026-01-05T10:00:00.000000Z")
    assert client.get("/v1/prices", headers=acme.headers("admin")).json() == {"items": []}
    assert [r["cost"] for r in client.get("/v1/usage", headers=acme.headers()).json()["rows"]] == [None]
    gone = client.delete("/v1/prices", params={"provider": "openai", "model": "gpt-x",
                                               "effective_from": "2020-01-01T00:00:00Z"}, headers=acme.headers("admin"))
    assert gone.status_code == 404 and gone.json()["error"]["code"] == "not_found", gone.text
    assert len(client.get("/v1/prices", headers=globex.headers("admin")).json()["items"]) == 1


def test_prices_are_for_admins(client: TestClient, acme: Tenant) -> None:
    for role in ("member", "operator"):
        assert client.put("/v1/prices", json=PRICE, headers=acme.headers(role)).status_code == 403
        assert client.get("/v1/prices", headers=acme.headers(role)).status_code == 403
        assert client.delete("/v1/prices", params={"provider": "openai", "model": "gpt-x",
                                                   "effective_from": "2026-01-02T00:00:00Z"},
                             headers=acme.headers(role)).status_code == 403
    assert client.get("/v1/prices", headers=acme.headers("owner")).status_code == 200
