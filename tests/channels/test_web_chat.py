"""The web chat page in headless Chromium (Debian's ``chromium`` and ``chromium-driver``): sign in with an API
key, see the organization's agents, talk to one, see live agent events over the WebSocket API; a real model
server's streamed reply and its failures reach the page.

The gateway runs for real (:class:`~tests.helpers.served.ServedApp`: uvicorn on a free port, in a thread),
the agent answers through the real runtime with the offline model; the page's contract with the chat endpoint
is the one constant ``MESSAGES_PATH`` in ``chat.js``.  Without the browser the test is skipped with the reason, except
under ``CI=true``, where a missing browser is an error (``make pytest`` installs it when run as root).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from agentfy.gateway.app import create_app
from agentfy.identity.roles import ROLES
from agentfy.runtime.openai_compat import CallPolicy
from agentfy.store.db import Database
from agentfy.store.repos import agents, api_keys, orgs
from tests.helpers.browser import headless_chromium, wait_for
from tests.helpers.fake_openai import Completion, Failure, FakeOpenAI
from tests.helpers.served import ServedApp
from tests.helpers.tenants import Tenant, make_tenant
from tests.runtime.helpers import FailingProvider

pytestmark = pytest.mark.slow


@pytest.fixture
def browser() -> Iterator[Any]:
    with headless_chromium() as driver:
        yield driver


@pytest.fixture
def served(sqlite_db: Database) -> Iterator[tuple[str, Tenant, FastAPI]]:
    tenant = make_tenant(sqlite_db, "acme", keys=ROLES)
    with sqlite_db.transaction() as tx:
        agents.create_agent(tx, tenant.scope, agent_key="support", display_name="Support")
        user_id = orgs.create_user(tx, display_name="Operator").id
        orgs.add_member(tx, tenant.scope, user_id, "operator")
        tenant.keys["person"] = api_keys.create_api_key(tx, tenant.scope, name="operator person", role="operator",
                                                        user_id=user_id).key
    app = create_app(sqlite_db, signing_secret=b"s" * 32)
    with ServedApp(app, name="gateway") as gateway:
        yield gateway.url, tenant, app


_wait = wait_for


def _signed_in(browser: Any, base: str, tenant: Tenant) -> Any:
    """Sign in as the operator person and open the chat with ``support``; returns its button."""
    from selenium.webdriver.common.by import By

    browser.get(f"{base}/chat/")
    browser.find_element(By.ID, "api-key").send_keys(tenant.keys["person"])
    browser.find_element(By.ID, "sign-in-button").click()
    button = _wait(lambda: browser.find_elements(By.CSS_SELECTOR, "#agents button[data-agent='support']"),
                   "the agent list")[0]
    button.click()
    return button


def test_sign_in_list_agents_talk_and_see_live_events(browser: Any, served: tuple[str, Tenant, FastAPI],
                                                     sqlite_db: Database) -> None:
    from selenium.webdriver.common.by import By

    base, tenant, _ = served
    browser.get(f"{base}/chat/")
    by_id = lambda name: browser.find_element(By.ID, name)  # noqa: E731

    by_id("api-key").send_keys("agfy_ok_not-a-key")
    by_id("sign-in-button").click()
    _wait(lambda: "Sign-in failed: 401" in by_id("status").text, "the refusal of a bad key")

    by_id("api-key").clear()
    by_id("api-key").send_keys(tenant.keys["person"])  # chat needs a key that acts as a person
    by_id("sign-in-button").click()
    button = _wait(lambda: browser.find_elements(By.CSS_SELECTOR, "#agents button[data-agent='support']"),
                   "the agent list")[0]
    assert button.text == "support (Support)"
    _wait(lambda: by_id("events").get_attribute("data-subscribed") == "true", "the event subscription")

    button.click()
    by_id("message-text").send_keys("hello there")
    by_id("send").click()
    replies = _wait(lambda: [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#messages .msg.agent")],
                    "the agent's reply")
    assert replies == ["@support heard: hello there"]  # the offline model's answer, through the real runtime
    # it was rendered as the pieces arrived (the offline model streams word by word), then made the reply
    (reply,) = browser.find_elements(By.CSS_SELECTOR, "#messages .msg.agent")
    assert int(reply.get_attribute("data-pieces")) > 1 and "streaming" not in reply.get_attribute("class")

    with sqlite_db.transaction() as tx:  # another client's change reaches the page live
        agents.create_agent(tx, tenant.scope, agent_key="newcomer")
    # The page already lists the turn's run events, so wait for this one, not for any.
    events = lambda: [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#events .event")]  # noqa: E731
    _wait(lambda: "agent.created newcomer" in events(), "the live event of the new agent")


def test_a_run_that_fails_mid_reply_shows_the_failure_note_instead(browser: Any,
                                                                  served: tuple[str, Tenant, FastAPI]) -> None:
    from selenium.webdriver.common.by import By

    base, tenant, app = served
    app.state.gateway.runtime.providers.offline = FailingProvider(pieces=["half of ", "an answer"])
    _signed_in(browser, base, tenant)
    browser.find_element(By.ID, "message-text").send_keys("hello")
    browser.find_element(By.ID, "send").click()
    errors = _wait(lambda: [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#messages .msg.error")],
                   "the failure note")
    assert errors == ["502 The agent's model could not answer (the model at http://model.test/v1 answered HTTP "
                      "503). Please try again in a minute; if it keeps failing, ask an admin to check the agent's "
                      "model settings (`agentfy agents model check support`)."]
    assert browser.find_elements(By.CSS_SELECTOR, "#messages .msg.agent") == []  # nothing half-written stays


@pytest.fixture(scope="module")
def fake_model() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def test_a_real_models_stream_and_its_503s_reach_the_page(browser: Any, served: tuple[str, Tenant, FastAPI],
                                                          fake_model: FakeOpenAI) -> None:
    """The agent's model is a real OpenAI-compatible server (set as an admin does, over the API): its streamed
    pieces are rendered as they come and join to the reply; three 503s in a row give the failure note, and no
    partial reply stays."""
    from selenium.webdriver.common.by import By

    base, tenant, app = served
    app.state.gateway.runtime.providers.policy = CallPolicy(backoff_seconds=0.01, backoff_max_seconds=0.02)
    admin = tenant.headers("admin")
    assert httpx.put(f"{base}/v1/credentials/llm", json={"secret": "sk-page-0123456789abcdef"},
                     headers=admin).status_code == 200
    assert httpx.put(f"{base}/v1/agents/support/model", headers=admin, json={
        "provider": "openai", "base_url": fake_model.url, "model": "gpt-page", "credential": "llm"}).status_code == 200
    fake_model.reset()
    fake_model.script(Completion(text="The launch moves to Friday.", piece_delay=0.05),
                      *[Failure(503)] * 3)
    _signed_in(browser, base, tenant)
    by_id = lambda name: browser.find_element(By.ID, name)  # noqa: E731
    by_id("message-text").send_keys("when is the launch?")
    by_id("send").click()
    done = "#messages .msg.agent:not(.streaming)"
    (reply,) = _wait(lambda: browser.find_elements(By.CSS_SELECTOR, done), "the streamed reply")
    assert reply.text == "The launch moves to Friday." and int(reply.get_attribute("data-pieces")) == 5

    by_id("message-text").send_keys("and now?")
    by_id("send").click()
    errors = _wait(lambda: [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#messages .msg.error")],
                   "the failure note")
    assert errors == [f"502 The agent's model could not answer (the model at {fake_model.url} answered HTTP 503). "
                      "Please try again in a minute; if it keeps failing, ask an admin to check the agent's model "
                      "settings (`agentfy agents model check support`)."]
    assert [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#messages .msg.agent")] == [reply.text]
    assert len(fake_model.requests) == 4 and fake_model.pending == 0
