"""The agent's model set up and its reply streamed, in headless Chromium against a really served gateway, on both
engines: an admin who acts as a person stores a credential and points the agent at a local OpenAI-compatible
server (which streams slowly), sends a message, sees the reply's first words before it is complete and the
whole reply once it is — the model's tool call and its result shown as such — while the agent page's badge
shows the run and the Live events screen shows that run's events (its start, its tool call, its reply and its
end, by the run's ID) among another agent's, filterable by agent key.  Screens saved as
``build/screenshots/console-<engine>-model.png``, ``-streaming.png`` and ``-run-events.png`` (docs/console.md
shows the SQLite ones).
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from agentfy.gateway.app import create_app
from agentfy.settings import Settings
from agentfy.store.db import Database
from agentfy.store.repos import agents, api_keys, orgs
from tests.helpers.browser import headless_chromium, screenshot, wait_for
from tests.helpers.fake_openai import Completion, FakeOpenAI, FakeToolCall
from tests.helpers.served import ServedApp
from tests.helpers.tenants import Tenant

pytestmark = pytest.mark.slow

SECRET = "sk-browser-0123456789abcdefWXYZ"
REPLY = "Our launch is on Monday at nine, and the press kit is ready for everyone."
#: Spaces the fake model's streamed words: the page must show the first ones well before the last.
PIECE_DELAY = 0.25


@pytest.fixture
def browser() -> Iterator[Any]:
    with headless_chromium(window=(1100, 1000)) as driver:
        yield driver


@pytest.fixture
def admin_person(db: Database, acme: Tenant) -> str:
    """An admin key of acme that acts as a person (setting a model needs an admin, talking a person)."""
    with db.transaction() as tx:
        user_id = orgs.create_user(tx, display_name="Admin").id
        orgs.add_member(tx, acme.scope, user_id, "admin")
        return api_keys.create_api_key(tx, acme.scope, name="admin person", role="admin", user_id=user_id).key


@pytest.fixture
def model_server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def served(db: Database, acme: Tenant) -> Iterator[str]:
    settings = Settings(credentials_key=SecretStr(base64.b64encode(b"b" * 32).decode()))
    with ServedApp(create_app(db, signing_secret=b"s" * 32, settings=settings), name="gateway") as gateway:
        yield gateway.url


def test_an_admin_sets_the_model_and_watches_the_reply_stream_in(browser: Any, served: str, db: Database,
                                                                  acme: Tenant, admin_person: str,
                                                                  model_server: FakeOpenAI, db_url: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    engine = "postgresql" if db_url.startswith("postgresql") else "sqlite"
    shot = lambda name: screenshot(browser, f"console-{engine}-{name}")  # noqa: E731
    by_id = lambda name: browser.find_element(By.ID, name)  # noqa: E731
    with db.transaction() as tx:
        agent_id = agents.create_agent(tx, acme.scope, agent_key="support", display_name="Support").id

    browser.get(f"{served}/console/sign-in")
    by_id("api_key").send_keys(admin_person)
    by_id("sign-in").find_element(By.TAG_NAME, "button").click()
    wait_for(lambda: browser.current_url.endswith("/console/agents"), "the agents screen")

    browser.get(f"{served}/console/agents/{agent_id}")
    Select(by_id("provider")).select_by_value("openai")
    by_id("base_url").send_keys(model_server.url)
    by_id("model").send_keys("gpt-browser")
    by_id("new_credential").send_keys("llm")
    by_id("secret").send_keys(SECRET)
    by_id("model-form").find_element(By.TAG_NAME, "button").click()
    saved = wait_for(lambda: browser.find_elements(By.ID, "notice"), "the saved model")[0]
    assert saved.text == "Credential stored and model saved."
    assert Select(by_id("credential")).first_selected_option.text == "llm"
    assert by_id("secret").get_attribute("value") == "" and SECRET not in browser.page_source
    assert "openai: gpt-browser" in browser.page_source
    badge = by_id("run-state")
    wait_for(lambda: badge.get_attribute("data-live") == "true", "the live badge")
    assert badge.text == "Idle"
    shot("model")
    agent_tab = browser.current_window_handle

    browser.switch_to.new_window("tab")  # Live events, subscribed before the run
    browser.get(f"{served}/console/events")
    wait_for(lambda: by_id("events-status").get_attribute("data-state") == "subscribed", "the subscription")
    events_tab = browser.current_window_handle
    assert httpx.post(f"{served}/v1/agents", json={"agent_key": "other"},
                      headers=acme.headers("owner")).status_code == 201  # another agent's event, to filter out

    model_server.script(Completion(tool_calls=[FakeToolCall("call_1", "search_memory", {"query": "launch"})]),
                        Completion(text=REPLY, piece_delay=PIECE_DELAY))
    browser.switch_to.new_window("tab")
    browser.get(f"{served}/console/agents/{agent_id}/conversations")
    by_id("text").send_keys("when is the launch?")
    by_id("send").click()
    partial = wait_for(lambda: [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#streaming-reply .text")
                                if len(e.text.split()) >= 3], "the first words of the reply")[0]
    assert REPLY.startswith(partial) and len(partial) < len(REPLY)  # shown before the reply is complete
    assert by_id("stream-status").text == "The agent is answering…"
    shot("streaming")

    browser.switch_to.window(agent_tab)  # the agent page heard the run start
    wait_for(lambda: by_id("run-state").get_attribute("data-state") == "running", "the running badge")
    assert by_id("run-state").text == "Running"
    wait_for(lambda: by_id("run-state").get_attribute("data-state") == "idle", "the badge after the run", 30)

    browser.switch_to.window(browser.window_handles[-1])
    replies = wait_for(lambda: [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#messages .msg.assistant")
                                if not browser.find_elements(By.ID, "streaming-reply")], "the whole reply")
    assert len(replies) == 2 and REPLY in replies[-1]
    assert "?session=" in browser.current_url and by_id("stream-status").text == "Answered."
    assert [e.get_attribute("class") for e in browser.find_elements(By.CSS_SELECTOR, "#messages .msg")] == [
        "msg user", "msg assistant", "msg tool", "msg assistant"]  # the tool call and its result as such
    call = browser.find_element(By.CSS_SELECTOR, "#messages .tool-call").text
    assert "search_memory" in call and "launch" in call

    browser.switch_to.window(events_tab)
    shown = lambda: [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#events .event")  # noqa: E731
                     if e.is_displayed()]
    wait_for(lambda: any("agent.run.finished" in row for row in shown()), "the run's end on Live events", 30)
    assert any("agent.created other" in row for row in shown())
    by_id("agent-filter").send_keys("support")
    rows = wait_for(lambda: shown() if not any(" other " in row for row in shown()) else None, "the filter")
    assert rows and all(" support " in row for row in rows), rows
    oldest_first = list(reversed(rows))
    [started] = [row for row in oldest_first if "agent.run.started" in row]
    run_id = started.split("id: ", 1)[1].split()[0]  # the run's ID, as the run's events carry it
    run_rows = [row for row in oldest_first if f"id: {run_id}" in row]
    assert run_rows[0] == started and "agent.run.finished" in run_rows[-1], rows
    assert any("agent.tool.called" in row and "search_memory" in row for row in rows), rows
    shot("run-events")
    request = model_server.requests[-1]
    assert request.body["stream"] is True and request.headers["authorization"] == f"Bearer {SECRET}"
