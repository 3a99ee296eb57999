"""The Memory and knowledge screen in headless Chromium against a really served gateway, on both engines: sign in,
open an agent's memory from its page, find a fact written through the API with the search box (the agent's own
search, in the fact's scope), see an entity ingested through the API in the graph's picture, and never
another organization's memory.  Saved as ``build/screenshots/console-<engine>-memory.png`` (docs/console.md
shows the SQLite one).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from agentfy.gateway.app import create_app
from agentfy.store.db import Database
from agentfy.store.repos import memory
from tests.helpers.browser import headless_chromium, screenshot, wait_for
from tests.helpers.served import ServedApp
from tests.helpers.tenants import Tenant

pytestmark = pytest.mark.slow

GROUP = "group:telegram:1001"


@pytest.fixture
def browser() -> Iterator[Any]:
    with headless_chromium(window=(1100, 1900)) as driver:
        yield driver


@pytest.fixture
def served(db: Database, acme: Tenant, globex: Tenant) -> Iterator[str]:
    with ServedApp(create_app(db, signing_secret=b"s" * 32), name="gateway") as gateway:
        yield gateway.url


def _post(url: str, tenant: Tenant, body: Any, status: int = 200) -> Any:
    answer = httpx.post(url, json=body, headers=tenant.headers("operator"))
    assert answer.status_code == status, answer.text
    return answer.json()


def _agent_with_memory(served: str, tenant: Tenant, fact: str, names: list[str]) -> str:
    """An agent of ``tenant`` with ``fact`` in the group's memory and ``names`` in its graph, each knowing the
    next, all through the API; returns its ID."""
    agent_id: str = _post(f"{served}/v1/agents", tenant, {"agent_key": "helper"}, 201)["id"]
    _post(f"{served}/v1/agents/{agent_id}/memory/documents:batch-upsert", tenant, {"documents": [
        {"user_id": GROUP, "path": "remembered/plant.md", "content": fact},
        {"path": "MEMORY.md", "content": "Answer briefly; the office is on floor three."}]})
    _post(f"{served}/v1/knowledge/ingest", tenant, {
        "entities": [{"agent": agent_id, "user_id": GROUP, "name": name, "entity_type": "thing"} for name in names],
        "relations": [{"agent": agent_id, "source": i, "target": i + 1, "relation": "looks after"}
                      for i in range(len(names) - 1)]}, 201)
    return agent_id


def test_search_a_fact_and_see_the_graph_of_an_agent(browser: Any, served: str, db: Database, acme: Tenant,
                                                     globex: Tenant, db_url: str) -> None:
    from selenium.webdriver.common.by import By

    engine = "postgresql" if db_url.startswith("postgresql") else "sqlite"
    by_id = lambda name: browser.find_element(By.ID, name)  # noqa: E731
    agent_id = _agent_with_memory(served, acme, "The office plant is a ficus called Fern; water it on Fridays.",
                                  ["Ada", "Fern", "Friday watering", "Office"])
    _agent_with_memory(served, globex, "Globex keeps its ficus secret.", ["Globex Vault"])
    with db.transaction() as tx:
        memory.create_episodic_summary(tx, acme.scope, agent_id=agent_id, user_id=GROUP, session_key="tg-1001",
                                       compaction_count=0, summary="The group agreed Ada waters the ficus.")

    browser.get(f"{served}/console/sign-in")
    by_id("api_key").send_keys(acme.keys["operator"])
    by_id("sign-in").find_element(By.TAG_NAME, "button").click()
    wait_for(lambda: browser.current_url.endswith("/console/agents"), "the agents screen")
    browser.get(f"{served}/console/agents/{agent_id}")
    browser.find_element(By.LINK_TEXT, "Memory and knowledge").click()
    wait_for(lambda: browser.current_url.endswith(f"/console/agents/{agent_id}/memory"), "the memory screen")
    assert "remembered/plant.md" in by_id("documents").text and "tg-1001" in by_id("episodes").text

    by_id("q").send_keys("ficus Fridays")
    by_id("scope").send_keys(GROUP)
    by_id("search").click()
    hits = wait_for(lambda: browser.find_elements(By.ID, "hits"), "the matches")[0]
    assert "remembered/plant.md" in hits.text and "Globex" not in hits.text
    assert by_id("q").get_attribute("value") == "ficus Fridays" and by_id("scope").get_attribute("value") == GROUP

    labels = [node.text for node in browser.find_elements(By.CSS_SELECTOR, "#graph .node text")]
    assert labels == ["Ada", "Fern", "Friday watering", "Office"]  # by name, round the circle
    assert len(browser.find_elements(By.CSS_SELECTOR, "#graph .edge")) == 3
    assert "Ada" in by_id("relations").text and "looks after" in by_id("relations").text
    assert "Globex" not in browser.page_source and "globex" not in by_id("tenant-slug").text
    screenshot(browser, f"console-{engine}-memory")

    by_id("q").clear()
    by_id("q").send_keys("ficus")
    by_id("scope").clear()  # the agent's own memory: the group's fact is not in it
    by_id("search").click()
    wait_for(lambda: "Nothing in this scope" in browser.page_source, "the empty answer")
