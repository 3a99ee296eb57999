"""Every screen of the console at a phone's width (390 CSS pixels) in headless Chromium, on both engines: the
page never scrolls sideways (wide tables scroll inside their own box) and its navigation and forms stay
reachable.  Saved as ``build/screenshots/console-<engine>-phone-<screen>.png``."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from agentfy.gateway.app import create_app
from agentfy.store.db import Database
from tests.helpers.browser import headless_chromium, screenshot, wait_for
from tests.helpers.served import ServedApp
from tests.helpers.tenants import Tenant

pytestmark = pytest.mark.slow
PHONE_WIDTH = 390


@pytest.fixture
def served(db: Database, acme: Tenant) -> Iterator[str]:
    with ServedApp(create_app(db, signing_secret=b"s" * 32), name="gateway") as gateway:
        yield gateway.url


def test_every_screen_fits_a_phone_width_window(served: str, acme: Tenant, db_url: str) -> None:
    from selenium.webdriver.common.by import By

    engine = "postgresql" if db_url.startswith("postgresql") else "sqlite"
    agent = httpx.post(f"{served}/v1/agents", json={"agent_key": "a-rather-long-agent-key-for-a-phone"},
                       headers=acme.headers("owner"))
    assert agent.status_code == 201, agent.text
    agent_id = agent.json()["id"]
    screens = {"agents": "/console/agents", "agent": f"/console/agents/{agent_id}",
               "conversations": f"/console/agents/{agent_id}/conversations",
               "sessions": f"/console/agents/{agent_id}/sessions", "cron": f"/console/agents/{agent_id}/cron",
               "memory": f"/console/agents/{agent_id}/memory", "teams": "/console/teams",
               "skills": "/console/skills", "usage": "/console/usage", "events": "/console/events",
               "operations": "/console/operations"}
    with headless_chromium(window=(600, 800)) as browser:
        # Chromium keeps a headless window at least 500 pixels wide: the phone's viewport is emulated instead.
        browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": PHONE_WIDTH, "height": 800, "deviceScaleFactor": 1, "mobile": True})
        browser.get(f"{served}/console/sign-in")
        browser.find_element(By.ID, "api_key").send_keys(acme.keys["owner"])
        browser.find_element(By.ID, "sign-in").find_element(By.TAG_NAME, "button").click()
        wait_for(lambda: browser.current_url.endswith("/console/agents"), "the agents screen")
        wide: dict[str, int] = {}
        for name, path in screens.items():
            browser.get(served + path)
            wait_for(lambda: browser.find_elements(By.TAG_NAME, "main") or browser.find_elements(By.TAG_NAME, "h1"),
                     f"the {name} screen")
            page_width = browser.execute_script("return document.documentElement.scrollWidth")
            window_width = browser.execute_script("return document.documentElement.clientWidth")
            assert "Sign in" not in browser.title, name
            if page_width > window_width + 1:
                wide[name] = page_width
            screenshot(browser, f"console-{engine}-phone-{name}")
        assert wide == {}, f"screens wider than a {PHONE_WIDTH}px window (page widths): {wide}"
