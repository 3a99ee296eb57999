"""The Operations screen in headless Chromium against a really served gateway, on both engines: an owner sees its
organization's bus and dead letters (never another organization's), runs the orphan scan, requeues a dead
letter and sees it leave the list; a
member signed in has no Operations link and gets the API's 403 page when opening the screen directly.  The bus
section is saved as ``build/screenshots/console-<engine>-operations-bus.png`` (docs/console.md shows the
SQLite one).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from agentfy.events import admin
from agentfy.gateway.app import create_app
from agentfy.store.db import Database
from tests.helpers.browser import headless_chromium, screenshot, wait_for
from tests.helpers.dead_letters import dead_letter
from tests.helpers.served import ServedApp
from tests.helpers.tenants import Tenant

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Served:
    url: str
    mine: str  # acme's dead letter
    theirs: str  # globex's


@pytest.fixture
def browser() -> Iterator[Any]:
    with headless_chromium(window=(1100, 900)) as driver:
        yield driver


@pytest.fixture
def served(db: Database, acme: Tenant, globex: Tenant) -> Iterator[Served]:
    mine = dead_letter(db, acme.scope, "invoice-7")  # dead before the gateway's own worker starts
    theirs = dead_letter(db, globex.scope, "globex-secret-order")
    with ServedApp(create_app(db, signing_secret=b"s" * 32), name="gateway") as gateway:
        yield Served(gateway.url, mine, theirs)


def _sign_in(browser: Any, url: str, key: str) -> None:
    from selenium.webdriver.common.by import By

    browser.get(f"{url}/console/sign-in")
    browser.find_element(By.ID, "api_key").send_keys(key)
    browser.find_element(By.ID, "sign-in").find_element(By.TAG_NAME, "button").click()
    wait_for(lambda: browser.current_url.endswith("/console/agents"), "the agents screen")


def test_an_owner_requeues_its_dead_letter_and_a_member_is_refused_the_screen(
        browser: Any, served: Served, db: Database, acme: Tenant, db_url: str) -> None:
    from selenium.webdriver.common.by import By

    engine = "postgresql" if db_url.startswith("postgresql") else "sqlite"
    by_id = lambda name: browser.find_element(By.ID, name)  # noqa: E731

    _sign_in(browser, served.url, acme.keys["owner"])
    wait_for(lambda: browser.find_elements(By.LINK_TEXT, "Operations"), "the owner's navigation")[0].click()
    letters = wait_for(lambda: browser.find_elements(By.ID, "dead-letters"), "the dead letters")[0]
    assert served.mine in letters.text and "invoice-7" in letters.text and "the handler refuses it" in letters.text
    assert served.theirs not in browser.page_source and "globex-secret-order" not in browser.page_source
    assert by_id("bus-dead").text == "1"
    by_id("scan-orphans").find_element(By.TAG_NAME, "button").click()
    scanned = wait_for(lambda: browser.find_elements(By.ID, "orphans"), "the orphan scan")[0]
    assert "No problems in the" in scanned.text
    letters = by_id("dead-letters")
    browser.execute_script("arguments[0].scrollIntoView()", by_id("bus-heading"))
    screenshot(browser, f"console-{engine}-operations-bus")

    letters.find_element(By.CSS_SELECTOR, "form.requeue button").click()
    said = wait_for(lambda: browser.find_elements(By.ID, "notice"), "the requeue's notice")[0]
    assert "requeued" in said.text
    assert "No dead letters." in browser.page_source and served.mine not in browser.page_source
    assert admin.status_of(db, served.theirs)[0] == "dead"  # type: ignore[index]

    browser.find_element(By.XPATH, "//button[text()='Sign out']").click()
    wait_for(lambda: browser.current_url.endswith("/console/sign-in"), "the sign-in page again")
    _sign_in(browser, served.url, acme.keys["member"])
    assert browser.find_elements(By.LINK_TEXT, "Operations") == []
    browser.get(f"{served.url}/console/operations")
    error = wait_for(lambda: browser.find_elements(By.ID, "error"), "the refusal")[0]
    assert "HTTP 403" in error.text and "role is member" in error.text
    assert "Requeue" not in browser.page_source
