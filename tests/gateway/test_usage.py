"""Usage and cost: a message to an agent records its tokens under the agent's real ID and the tenant;
``GET /v1/usage`` sums them per agent and day within the caller's organization only; ``/metrics`` counts
tokens by provider and kind."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from agentfy.identity import Scope
from agentfy.store.db import Database, now
from agentfy.store.repos import api_keys, orgs, telemetry
from tests.helpers.tenants import Tenant


def _person(db: Database, tenant: Tenant, name: str) -> dict[str, str]:
    with db.transaction() as tx:
        user = orgs.create_user(tx, display_name=name)
        orgs.add_member(tx, tenant.scope, user.id, "owner")
        key = api_keys.create_api_key(tx, Scope(tenant.scope.tenant_id), name=name, role="owner",
                                      user_id=user.id).key
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def person(db: Database, acme: Tenant) -> dict[str, str]:
    return _person(db, acme, "ann")


def _agent(client: TestClient, tenant: Tenant, key: str) -> str:
    answer = client.post("/v1/agents", json={"agent_key": key}, headers=tenant.headers())
    assert answer.status_code == 201, answer.text
    agent_id: str = answer.json()["id"]
    return agent_id


def _talk(client: TestClient, agent: str, text: str, headers: dict[str, str]) -> None:
    answer = client.post(f"/v1/agents/{agent}/messages", json={"text": text}, headers=headers)
    assert answer.status_code == 200, answer.text


def _tokens(metrics: str, kind: str) -> float:
    found = re.search(rf'^agentfy_model_tokens_total{{kind="{kind}",provider="offline"}} (\S+)$', metrics, re.M)
    return 0.0 if found is None else float(found.group(1))


def test_a_message_records_usage_with_the_agents_id_and_tenant(db: Database, client: TestClient, acme: Tenant,
                                                               person: dict[str, str]) -> None:
    agent_id = _agent(client, acme, "bot")
    _talk(client, "bot", "hello there", person)
    with db.transaction(write=False) as tx:
        rows = telemetry.usage_for_agent(tx, acme.scope, agent_id)
        recorded = tx.all("SELECT tenant_id, agent_id, provider, run_id, session_key, cached_tokens "
                          "FROM usage_snapshots")
    assert len(rows) == 1
    assert rows[0].tenant_id == acme.id and rows[0].agent_id == agent_id
    assert rows[0].model == "offline" and rows[0].input_tokens > 0 and rows[0].output_tokens > 0
    tenant_id, agent, provider, run_id, session_key, cached = recorded[0]
    assert (tenant_id, agent, provider, cached) == (acme.id, agent_id, "offline", None)
    assert re.fullmatch(r"[0-9a-f]{16}", run_id) and session_key


def test_a_tool_round_records_one_row_per_model_call(db: Database, client: TestClient, acme: Tenant,
                                                     person: dict[str, str]) -> None:
    agent_id = _agent(client, acme, "bot")
    _talk(client, "bot", "/tool write_file path=a.txt content=hi", person)  # the tool call, then the answer
    with db.transaction(write=False) as tx:
        rows = telemetry.usage_for_agent(tx, acme.scope, agent_id)
        runs = {r[0] for r in tx.all("SELECT run_id FROM usage_snapshots")}
    assert len(rows) == 2 and len(runs) == 1


def test_usage_is_summed_per_agent_and_day_and_filtered(db: Database, client: TestClient, acme: Tenant,
                                                         person: dict[str, str]) -> None:
    bot, helper = _agent(client, acme, "bot"), _agent(client, acme, "helper")
    _talk(client, "bot", "one", person)
    _talk(client, "bot", "two", person)
    _talk(client, "helper", "three", person)
    with db.transaction() as tx:  # an older day, reported by a provider that caches
        telemetry.record_usage(tx, telemetry.UsageRecord(model="gpt-x", input_tokens=100, output_tokens=7,
                                                         cached_tokens=40, tenant_id=acme.id, agent_id=bot,
                                                         recorded_at="2026-01-02T10:00:00.000000Z"))
    today = now()[:10]
    answer = client.get("/v1/usage", headers=acme.headers("operator"))
    assert answer.status_code == 200, answer.text
    rows = answer.json()["rows"]
    today_rows = sorted([(bot, "bot", today, "offline", 2), (helper, "helper", today, "offline", 1)])
    assert [(r["agent_id"], r["agent_key"], r["day"], r["model"], r["calls"]) for r in rows] == [
        *today_rows, (bot, "bot", "2026-01-02", "gpt-x", 1)]  # newest day first, then by agent
    by_key = {(r["agent_key"], r["day"]): r for r in rows}
    assert by_key[("bot", today)]["agent_id"] == bot and by_key[("helper", today)]["agent_id"] == helper
    assert by_key[("bot", today)]["cached_tokens"] is None
    old = by_key[("bot", "2026-01-02")]
    assert (old["prompt_tokens"], old["completion_tokens"], old["cached_tokens"]) == (100, 7, 40)

    only_helper = client.get("/v1/usage", params={"agent": "helper"}, headers=acme.headers("admin")).json()["rows"]
    assert [(r["agent_id"], r["calls"]) for r in only_helper] == [(helper, 1)]
    by_id = client.get("/v1/usage", params={"agent": bot, "until": "2026-01-02"}, headers=acme.headers()).json()
    assert [(r["day"], r["model"]) for r in by_id["rows"]] == [("2026-01-02", "gpt-x")]
    recent = client.get("/v1/usage", params={"since": today}, headers=acme.headers()).json()["rows"]
    assert {r["day"] for r in recent} == {today} and len(recent) == 2


def test_another_organizations_usage_never_appears(db: Database, client: TestClient, acme: Tenant,
                                                   globex: Tenant, person: dict[str, str]) -> None:
    _agent(client, acme, "bot")
    theirs = _agent(client, globex, "secret")
    _talk(client, "secret", "globex only", _person(db, globex, "gil"))
    assert client.get("/v1/usage", headers=acme.headers()).json() == {"rows": []}
    for ref in ("secret", theirs):
        missing = client.get("/v1/usage", params={"agent": ref}, headers=acme.headers())
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found", missing.text
    assert len(client.get("/v1/usage", headers=globex.headers()).json()["rows"]) == 1


def test_usage_needs_an_operator_and_valid_days(client: TestClient, acme: Tenant) -> None:
    assert client.get("/v1/usage", headers=acme.headers("member")).status_code == 403
    for bad in ("2026-13-01", "yesterday"):
        assert client.get("/v1/usage", params={"since": bad}, headers=acme.headers()).status_code == 422


def test_metrics_count_tokens_by_provider_and_kind(client: TestClient, acme: Tenant,
                                                    person: dict[str, str]) -> None:
    _agent(client, acme, "bot")
    before = client.get("/metrics").text
    _talk(client, "bot", "count me", person)
    after = client.get("/metrics").text
    assert _tokens(after, "prompt") > _tokens(before, "prompt")
    assert _tokens(after, "completion") > _tokens(before, "completion")
    labels = re.findall(r"^agentfy_model_tokens_total\{([^}]*)\}", after, re.M)
    assert labels and all(re.fullmatch(r'kind="[a-z]+",provider="[a-z]+"', label) for label in labels)
