"""The Team tasks, MCP servers and Usage screens in headless Chromium against a really served gateway, on both
engines: a failed task in its status group, retried from its page; an agent's real MCP server connected with
its tools and a down one with its error; the usage charts of tokens and cost drawn (uPlot's canvas) over a
table of the same numbers, a day before any price of unknown cost.  Each screen is saved as
``build/screenshots/console-<engine>-<screen>.png`` (docs/console.md shows the SQLite ones).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from agentfy.gateway.app import create_app
from agentfy.store.db import Database
from agentfy.store.repos import prices, telemetry
from tests.helpers.browser import headless_chromium, screenshot, wait_for
from tests.helpers.mcp_server import WeatherServer, closed_port_url
from tests.helpers.served import ServedApp
from tests.helpers.tenants import Tenant

pytestmark = pytest.mark.slow


@pytest.fixture
def browser() -> Iterator[Any]:
    with headless_chromium(window=(1100, 1000)) as driver:
        yield driver


@pytest.fixture
def served(db: Database, acme: Tenant, globex: Tenant) -> Iterator[str]:
    with ServedApp(create_app(db, signing_secret=b"s" * 32), name="gateway") as gateway:
        yield gateway.url


@pytest.fixture
def weather() -> Iterator[WeatherServer]:
    with WeatherServer() as server:
        yield server


def _post(url: str, body: Any, tenant: Tenant, role: str = "owner") -> Any:
    answer = httpx.post(url, json=body, headers=tenant.headers(role))
    assert answer.status_code in (200, 201), answer.text
    return answer.json()


def _sign_in(browser: Any, served: str, key: str) -> None:
    from selenium.webdriver.common.by import By

    browser.get(f"{served}/console/sign-in")
    browser.find_element(By.ID, "api_key").send_keys(key)
    browser.find_element(By.ID, "sign-in").find_element(By.TAG_NAME, "button").click()
    wait_for(lambda: browser.current_url.endswith("/console/agents"), "the agents screen")


def test_team_tasks_mcp_servers_and_usage(browser: Any, served: str, db: Database, acme: Tenant, globex: Tenant,
                                          weather: WeatherServer, db_url: str) -> None:
    from selenium.webdriver.common.by import By

    engine = "postgresql" if db_url.startswith("postgresql") else "sqlite"
    shot = lambda name: screenshot(browser, f"console-{engine}-{name}")  # noqa: E731
    by_id = lambda name: browser.find_element(By.ID, name)  # noqa: E731
    v1 = f"{served}/v1"
    writer = _post(f"{v1}/agents", {"agent_key": "writer"}, acme)
    reviewer = _post(f"{v1}/agents", {"agent_key": "reviewer"}, acme)
    team = _post(f"{v1}/teams", {"name": "Docs", "lead": "writer"}, acme)
    for key in ("writer", "reviewer"):
        _post(f"{v1}/teams/{team['id']}/members", {"agent": key}, acme)
    _post(f"{v1}/teams/{team['id']}/tasks", {"title": "Outline the guide", "assignee": "writer"}, acme)
    done = _post(f"{v1}/teams/{team['id']}/tasks", {"title": "Collect the questions"}, acme)
    _post(f"{v1}/tasks/{done['id']}/claim", {"agent": "reviewer"}, acme)
    _post(f"{v1}/tasks/{done['id']}/complete", {"result": "twelve questions"}, acme)
    failed = _post(f"{v1}/teams/{team['id']}/tasks", {"title": "Check every link"}, acme)
    _post(f"{v1}/tasks/{failed['id']}/claim", {"agent": "writer"}, acme)
    _post(f"{v1}/tasks/{failed['id']}/fail", {"error": "the wiki is down"}, acme)
    _post(f"{v1}/teams", {"name": "Globex only"}, globex)

    _sign_in(browser, served, acme.keys["owner"])
    browser.find_element(By.LINK_TEXT, "Team tasks").click()
    wait_for(lambda: browser.find_elements(By.ID, "teams"), "the teams")
    assert "Globex only" not in browser.page_source
    browser.find_element(By.LINK_TEXT, "Docs").click()
    group = wait_for(lambda: browser.find_elements(By.ID, "tasks-failed"), "the failed tasks")[0]
    assert "Check every link" in group.text and "writer" in group.text
    assert "Collect the questions" in by_id("tasks-done").text and "Outline the guide" in by_id("tasks-open").text
    shot("tasks")
    group.find_element(By.LINK_TEXT, "Check every link").click()
    wait_for(lambda: browser.find_elements(By.ID, "retry"), "the task's page")
    assert by_id("task-error").text == "the wiki is down"
    by_id("retry").find_element(By.TAG_NAME, "button").click()
    wait_for(lambda: browser.find_elements(By.ID, "notice"), "the retried task")
    assert by_id("task-status").text == "open"

    _post(f"{v1}/agents/{writer['id']}/mcp-servers", {"name": "weather", "url": weather.url}, acme)
    _post(f"{v1}/agents/{writer['id']}/mcp-servers", {"name": "search", "url": closed_port_url()}, acme)
    browser.get(f"{served}/console/agents/{writer['id']}")
    browser.find_element(By.LINK_TEXT, "MCP servers").click()
    servers = wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, ".mcp-server"), "the MCP servers")
    texts = {server.find_element(By.TAG_NAME, "h2").text: server.text for server in servers}
    assert set(texts) == {"search", "weather"}
    assert "connected" in texts["weather"] and "mcp__weather__forecast" in texts["weather"]
    assert "connecting failed" in texts["search"] and "No tools offered." in texts["search"]
    shot("mcp")

    stamp = "T09:00:00.000000Z"
    with db.transaction() as tx:
        for agent, day, tokens in ((writer, "2026-03-01", 1200), (writer, "2026-03-02", 800),
                                   (reviewer, "2026-03-02", 300), (writer, "2026-03-03", 1500),
                                   (reviewer, "2026-03-03", 650)):
            telemetry.record_usage(tx, telemetry.UsageRecord(model="gpt-x", input_tokens=tokens - 100,
                                                             output_tokens=100, tenant_id=acme.id, provider="openai",
                                                             agent_id=agent["id"], recorded_at=day + stamp))
        telemetry.record_usage(tx, telemetry.UsageRecord(model="gpt-x", input_tokens=77777, output_tokens=1,
                                                         tenant_id=globex.id, recorded_at="2026-03-01" + stamp))
        # priced from the second day on: the first day's cost is unknown (a gap in the cost chart)
        prices.put_price(tx, acme.scope, provider="openai", model="gpt-x", effective_from="2026-03-02T00:00:00Z",
                         currency="USD", input_micros_per_million=2_000_000, output_micros_per_million=2_000_000)
    browser.find_element(By.LINK_TEXT, "Usage").click()
    wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "#tokens-chart canvas"), "the usage chart")
    assert [by_id(f"{measure}-chart").get_attribute("data-drawn")
            for measure in ("tokens", "cost", "calls")] == ["true"] * 3
    assert by_id("cost-chart").find_elements(By.TAG_NAME, "canvas")
    rows = [row.text for row in browser.find_elements(By.CSS_SELECTOR, "#usage tbody tr")]
    assert len(rows) == 5 and rows[0].startswith("2026-03-03 writer 1 1400 100 0 1500 USD 0.003")
    assert rows[-1].startswith("2026-03-01 writer 1 1100 100 0 1200 unknown")
    assert "77778" not in browser.page_source
    shot("usage")
