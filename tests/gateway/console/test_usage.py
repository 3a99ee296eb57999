"""The Usage screen: tokens per agent per day (the API's models added up) as chart data in a JSON script element
and as a table of the same numbers, agents by key; filters passed to the API (its error shown for a bad day); a
member gets no link and the API's 403; another organization's usage never appears; the vendored uPlot is the
pinned release; on both engines."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from fastapi.testclient import TestClient

from agentfy.gateway.console.app import STATIC_DIR
from agentfy.gateway.console.screens.usage import json_script
from agentfy.store.db import Database
from agentfy.store.repos import agents, prices, telemetry
from tests.gateway.console.conftest import SignedIn
from tests.helpers.tenants import Tenant

UPLOT_SHA256 = {"uPlot.iife.min.js": "19c8d4c6ad88929a79f4ae49d6f7161566dfd0ba3d15cc495e974f787eb78f1f",
                "uPlot.min.css": "df630c6a8d6f8eeaff264b50f73ce5b114f646ffd9a0bb74f049b0a00135fa04"}  # uplot 1.6.32


def _use(db: Database, tenant: Tenant, agent_id: str | None, day: str, model: str, prompt: int,
         completion: int) -> None:
    with db.transaction() as tx:
        telemetry.record_usage(tx, telemetry.UsageRecord(model=model, input_tokens=prompt, output_tokens=completion,
                                                         tenant_id=tenant.id, agent_id=agent_id,
                                                         recorded_at=f"{day}T10:00:00.000000Z"))


def _data(page: str) -> Any:
    found = re.search(r'<script type="application/json" id="usage-data">(.*?)</script>', page, re.S)
    assert found is not None, "the page has no chart data"
    return json.loads(found.group(1))


def _table(page: str) -> list[list[str]]:
    body = page.split('id="usage"')[1].split("</tbody>")[0]
    return [re.findall(r"<td>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", body)][1:]


def test_tokens_per_agent_per_day_as_chart_data_and_a_table(signed_in: SignedIn, db: Database, acme: Tenant,
                                                            globex: Tenant) -> None:
    with db.transaction() as tx:
        support = agents.create_agent(tx, acme.scope, agent_key="support").id
        sales = agents.create_agent(tx, acme.scope, agent_key="sales").id
        theirs = agents.create_agent(tx, globex.scope, agent_key="globex-bot").id
    _use(db, acme, support, "2026-03-01", "gpt-a", 100, 20)
    _use(db, acme, support, "2026-03-01", "gpt-b", 10, 5)  # a second model, the same day: added up
    _use(db, acme, support, "2026-03-02", "gpt-a", 40, 2)
    _use(db, acme, sales, "2026-03-02", "gpt-a", 7, 3)
    _use(db, globex, theirs, "2026-03-01", "gpt-a", 99999, 1)
    page = signed_in("operator").get("/console/usage")
    assert page.status_code == 200, page.text
    assert _data(page.text) == {"days": ["2026-03-01", "2026-03-02"],
                                "series": [{"agent": "sales", "tokens": [0, 10], "calls": [0, 1]},
                                           {"agent": "support", "tokens": [135, 42], "calls": [2, 1]}],
                                "cost": []}  # no prices: no cost series, and the page says why
    rows = _table(page.text)
    assert [row[:7] for row in rows] == [
        ["2026-03-02", "support", "1", "40", "2", "0", '<strong class="tokens">42</strong>'],
        ["2026-03-02", "sales", "1", "7", "3", "0", '<strong class="tokens">10</strong>'],
        ["2026-03-01", "support", "2", "110", "25", "0", '<strong class="tokens">135</strong>']]
    assert rows[2][7] == '<span class="cost">unknown</span>' and rows[2][8] == "gpt-a, gpt-b"
    assert 'id="no-cost"' in page.text and 'id="cost-chart"' not in page.text
    assert "globex-bot" not in page.text and "99999" not in page.text and theirs not in page.text
    assert 'src="/console/static/uPlot.iife.min.js"' in page.text
    assert 'id="tokens-chart"' in page.text and 'id="calls-chart"' in page.text


def test_filters_go_to_the_api_and_its_error_is_shown(signed_in: SignedIn, db: Database, acme: Tenant,
                                                      globex: Tenant) -> None:
    with db.transaction() as tx:
        support = agents.create_agent(tx, acme.scope, agent_key="support").id
        sales = agents.create_agent(tx, acme.scope, agent_key="sales").id
        theirs = agents.create_agent(tx, globex.scope, agent_key="globex-bot").id
    _use(db, acme, support, "2026-03-01", "gpt-a", 100, 20)
    _use(db, acme, sales, "2026-03-02", "gpt-a", 7, 3)
    client = signed_in("admin")
    one = client.get("/console/usage?agent=sales").text
    assert [row[1] for row in _table(one)] == ["sales"] and 'value="sales"' in one
    since = client.get("/console/usage?since=2026-03-02&until=2026-03-02").text
    assert _data(since)["days"] == ["2026-03-02"]
    empty = client.get("/console/usage?until=2026-02-01").text
    assert "No usage in this range." in empty and "usage-data" not in empty
    bad = client.get("/console/usage?since=yesterday")
    assert bad.status_code == 422 and "yesterday" in bad.text
    foreign = client.get(f"/console/usage?agent={theirs}")
    assert foreign.status_code == 404 and "not_found" in foreign.text


def test_a_member_gets_no_usage_link_and_the_apis_refusal(signed_in: SignedIn) -> None:
    member = signed_in("member")
    assert 'href="/console/usage"' not in member.get("/console/agents").text
    refused = member.get("/console/usage")
    assert refused.status_code == 403 and "needs the operator role or higher" in refused.text
    assert 'href="/console/usage"' in signed_in("operator").get("/console/agents").text


def test_the_chart_data_cannot_end_its_script_element() -> None:
    element = json_script("usage-data", {"agent": "</script><script>alert(1)</script>&"})
    assert element.count("</script>") == 1 and "<script>alert" not in element
    inner = element.split(">", 1)[1].rsplit("</script>", 1)[0]
    assert json.loads(inner) == {"agent": "</script><script>alert(1)</script>&"}


def test_the_vendored_uplot_is_the_pinned_release(client: TestClient) -> None:
    readme = (STATIC_DIR / "README.md").read_text()
    assert "uPlot 1.6.32" in readme
    for name, sha256 in UPLOT_SHA256.items():
        assert hashlib.sha256((STATIC_DIR / name).read_bytes()).hexdigest() == sha256 and sha256 in readme
    for name, kind in (("uPlot.iife.min.js", "javascript"), ("uPlot.min.css", "text/css"), ("usage.js", "javascript")):
        answer = client.get(f"/console/static/{name}")
        assert answer.status_code == 200 and kind in answer.headers["content-type"]


def _price(db: Database, tenant: Tenant, model: str, effective_from: str, units: str, currency: str = "USD") -> None:
    with db.transaction() as tx:
        micros = prices.micros_of(units, "price")
        prices.put_price(tx, tenant.scope, provider="openai", model=model, effective_from=effective_from,
                         currency=currency, input_micros_per_million=micros, output_micros_per_million=micros)


def test_cost_per_agent_per_day_beside_the_tokens_unknown_without_a_price(signed_in: SignedIn, db: Database,
                                                                          acme: Tenant, globex: Tenant) -> None:
    with db.transaction() as tx:
        support = agents.create_agent(tx, acme.scope, agent_key="support").id
    for day, model in (("2026-03-01", "gpt-a"), ("2026-03-02", "gpt-a"), ("2026-03-02", "gpt-b"),
                       ("2026-03-03", "gpt-b")):
        with db.transaction() as tx:
            telemetry.record_usage(tx, telemetry.UsageRecord(model=model, provider="openai", input_tokens=600_000,
                                                             output_tokens=400_000, tenant_id=acme.id,
                                                             agent_id=support, recorded_at=f"{day}T10:00:00.000000Z"))
    _price(db, acme, "gpt-a", "2026-03-02T00:00:00Z", "2.50")  # from the second day on; gpt-b never priced
    _price(db, globex, "gpt-b", "2020-01-01T00:00:00Z", "99")  # another organization's: never used here
    page = signed_in("operator").get("/console/usage")
    assert page.status_code == 200, page.text
    assert _data(page.text)["cost"] == [
        {"label": "support (USD)", "currency": "USD", "values": [None, "2.5", None]}]  # unknown is no point
    costs = {row[0]: row[7] for row in _table(page.text)}
    assert costs == {"2026-03-03": '<span class="cost">unknown</span>',
                     "2026-03-02": '<span class="cost">USD 2.5 + unknown (1 call)</span>',
                     "2026-03-01": '<span class="cost">unknown</span>'}
    assert 'id="cost-chart"' in page.text and 'id="no-cost"' not in page.text and "99" not in costs.values()
    assert page.text.index('id="tokens-chart"') < page.text.index('id="cost-chart"') < page.text.index(
        'id="calls-chart"')
