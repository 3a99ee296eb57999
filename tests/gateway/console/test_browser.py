"""The console in headless Chromium against a really served gateway, on both engines: sign in (a bad key
first), create an agent, send it a message and see the reply, run a cron job now and see its run, watch live
events filtered by agent key.  Each screen is saved as ``build/screenshots/console-<engine>-<screen>.png``
(docs/console.md shows the SQLite ones).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from agentfy.gateway.app import create_app
from agentfy.store.db import Database
from tests.helpers.browser import headless_chromium, screenshot, wait_for
from tests.helpers.served import ServedApp
from tests.helpers.tenants import Tenant

pytestmark = pytest.mark.slow


@pytest.fixture
def browser() -> Iterator[Any]:
    with headless_chromium(window=(1100, 900)) as driver:
        yield driver


@pytest.fixture
def served(db: Database, acme: Tenant, globex: Tenant, person: str) -> Iterator[str]:
    with ServedApp(create_app(db, signing_secret=b"s" * 32), name="gateway") as gateway:
        yield gateway.url


def test_sign_in_create_an_agent_talk_to_it_and_run_its_cron_job(browser: Any, served: str, acme: Tenant,
                                                                 globex: Tenant, db_url: str) -> None:
    from selenium.webdriver.common.by import By

    engine = "postgresql" if db_url.startswith("postgresql") else "sqlite"
    shot = lambda name: screenshot(browser, f"console-{engine}-{name}")  # noqa: E731
    by_id = lambda name: browser.find_element(By.ID, name)  # noqa: E731
    assert httpx.post(f"{served}/v1/agents", json={"agent_key": "globex-only"},
                      headers=globex.headers("owner")).status_code == 201

    browser.get(f"{served}/console/agents")  # not signed in: to the sign-in form
    wait_for(lambda: browser.current_url.endswith("/console/sign-in"), "the sign-in page")
    by_id("api_key").send_keys("agfy_not-a-key")
    by_id("sign-in").find_element(By.TAG_NAME, "button").click()
    error = wait_for(lambda: browser.find_elements(By.ID, "error"), "the refusal of a bad key")[0]
    assert "HTTP 401" in error.text
    shot("sign-in")

    by_id("api_key").clear()
    by_id("api_key").send_keys(acme.keys["person"])
    by_id("sign-in").find_element(By.TAG_NAME, "button").click()
    wait_for(lambda: browser.current_url.endswith("/console/agents"), "the agents screen")
    assert by_id("tenant-slug").text == "acme" and "globex-only" not in browser.page_source

    by_id("agent_key").send_keys("helper")
    by_id("display_name").send_keys("Helper")
    by_id("display_name").submit()
    key = wait_for(lambda: browser.find_elements(By.ID, "agent-key"), "the new agent's page")[0]
    assert key.text == "helper"
    agent_id = browser.current_url.rsplit("/", 1)[1]
    browser.get(f"{served}/console/agents")
    assert agent_id in browser.page_source and "helper" in by_id("agents").text
    shot("agents")

    browser.get(f"{served}/console/agents/{agent_id}/conversations")
    by_id("text").send_keys("hello there")
    by_id("send").click()  # htmx swaps the session in
    replies = wait_for(lambda: [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#messages .msg.assistant")],
                       "the agent's reply")
    assert len(replies) == 1 and "@helper heard: hello there" in replies[0]
    shot("conversations")

    job = httpx.post(f"{served}/v1/agents/{agent_id}/cron-jobs", headers=acme.headers("person"),
                     json={"schedule": "@daily", "payload": {"message": "daily report"}})
    assert job.status_code == 201, job.text
    browser.get(f"{served}/console/agents/{agent_id}/cron")
    browser.find_element(By.CSS_SELECTOR, "#jobs a").click()
    wait_for(lambda: browser.find_elements(By.ID, "run-now"), "the job's page")
    assert "No runs yet." in browser.page_source
    by_id("run-now").find_element(By.TAG_NAME, "button").click()
    outcomes = wait_for(lambda: [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#runs .outcome")],
                        "the run")
    assert outcomes == ["ok"]
    shot("cron")

    browser.get(f"{served}/console/events")
    wait_for(lambda: by_id("events-status").get_attribute("data-state") == "subscribed", "the subscription")
    for key in ("live-one", "other-two"):
        assert httpx.post(f"{served}/v1/agents", json={"agent_key": key},
                          headers=acme.headers("owner")).status_code == 201
    assert httpx.post(f"{served}/v1/agents", json={"agent_key": "globex-two"},
                      headers=globex.headers("owner")).status_code == 201
    shown = lambda: [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#events .event")  # noqa: E731
                     if e.is_displayed()]
    wait_for(lambda: any("other-two" in row for row in shown()), "the live events")
    assert not any("globex" in row for row in shown())
    by_id("agent-filter").send_keys("live")
    rows = wait_for(lambda: shown() if all("live-one" in row for row in shown()) else None, "the filter")
    assert rows and all("agent.created" in row for row in rows)
    shot("events")

    assert browser.find_elements(By.LINK_TEXT, "Operations") == []  # an operator is no admin
    browser.find_element(By.XPATH, "//button[text()='Sign out']").click()
    wait_for(lambda: browser.current_url.endswith("/console/sign-in"), "the sign-in page again")
    by_id("api_key").send_keys(acme.keys["owner"])
    by_id("sign-in").find_element(By.TAG_NAME, "button").click()
    wait_for(lambda: browser.find_elements(By.LINK_TEXT, "Operations"), "the owner's navigation")[0].click()
    by_id("key_name").send_keys("deploy bot")
    by_id("key_name").submit()
    issued = wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "#issued code"), "the issued key")[0]
    assert issued.text.startswith("agfy_") and "deploy bot" in by_id("api-keys").text
    by_id("id").send_keys(agent_id)
    by_id("id").submit()
    explanation = wait_for(lambda: browser.find_elements(By.ID, "explanation"), "the explanation")[0]
    assert '"exists_in_your_organization": true' in explanation.text
    shot("operations")
