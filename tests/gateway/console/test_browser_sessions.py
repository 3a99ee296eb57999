"""The Sessions screen in headless Chromium against a really served gateway, on both engines: an agent's
sessions reached from its page, filtered to a group chat by scope, one opened in the Conversations screen.
The list is saved as ``build/screenshots/console-<engine>-sessions.png`` (docs/console.md shows the SQLite one).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from agentfy.gateway.app import create_app
from agentfy.store.db import Database
from agentfy.store.repos import agents, sessions
from tests.helpers.browser import headless_chromium, screenshot, wait_for
from tests.helpers.served import ServedApp
from tests.helpers.tenants import Tenant

pytestmark = pytest.mark.slow
GROUP = "group:telegram:-100123"


@pytest.fixture
def browser() -> Iterator[Any]:
    with headless_chromium(window=(1100, 900)) as driver:
        yield driver


@pytest.fixture
def served(db: Database, acme: Tenant, globex: Tenant) -> Iterator[str]:
    with ServedApp(create_app(db, signing_secret=b"s" * 32), name="gateway") as gateway:
        yield gateway.url


def test_an_agents_sessions_filtered_and_opened(browser: Any, served: str, db: Database, acme: Tenant,
                                                globex: Tenant, db_url: str) -> None:
    from selenium.webdriver.common.by import By

    engine = "postgresql" if db_url.startswith("postgresql") else "sqlite"
    with db.transaction() as tx:
        agent = agents.create_agent(tx, acme.scope, agent_key="support")
        theirs = agents.create_agent(tx, globex.scope, agent_key="support")
        for key, scope, channel, texts in (
                ("telegram:dm:4242", "user-ada", "telegram", ("Where is my parcel?", "It left the depot today.")),
                ("api:onboarding", "", None, ("Summarise the handbook.",)),
                ("telegram:-100123", GROUP, "telegram", ("Who is on call?", "Grace is.", "Thanks!"))):
            sessions.open_session(tx, acme.scope, key, agent.id, scope, channel=channel)
            for number, text in enumerate(texts):
                sessions.append_message(tx, acme.scope, key, "user" if number % 2 == 0 else "assistant", text)
        sessions.complete_session(tx, acme.scope, "api:onboarding")
        sessions.open_session(tx, globex.scope, "globex-secret", theirs.id, "")

    browser.get(f"{served}/console/sign-in")
    browser.find_element(By.ID, "api_key").send_keys(acme.keys["owner"])
    browser.find_element(By.ID, "sign-in").find_element(By.TAG_NAME, "button").click()
    wait_for(lambda: browser.current_url.endswith("/console/agents"), "the agents screen")
    browser.get(f"{served}/console/agents/{agent.id}")
    browser.find_element(By.LINK_TEXT, "Sessions").click()
    rows = wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "#sessions tbody tr"), "the sessions")
    assert [row.text.split(" ")[0] for row in rows] == ["telegram:-100123", "api:onboarding", "telegram:dm:4242"]
    assert "globex-secret" not in browser.page_source
    screenshot(browser, f"console-{engine}-sessions")

    browser.find_element(By.ID, "scope").send_keys(GROUP)
    browser.find_element(By.CSS_SELECTOR, "form.filter button").click()
    wait_for(lambda: "scope=group" in browser.current_url, "the filtered list")
    rows = browser.find_elements(By.CSS_SELECTOR, "#sessions tbody tr")
    assert len(rows) == 1 and "3" in rows[0].text
    rows[0].find_element(By.TAG_NAME, "a").click()
    wait_for(lambda: browser.find_elements(By.ID, "messages"), "the session's messages")
    assert "Grace is." in browser.find_element(By.ID, "messages").text
