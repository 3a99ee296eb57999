"""The Conversations screen: send a message through the chat route and see the reply in its session; tool
calls and their results shown as such; another organization's or person's session never shown; the API's
refusals shown; the streamed reply relayed as the API sends it (its deltas, its reply or its error event), a
refusal before the stream as one error event, a revoked key signed out; on both engines."""

from __future__ import annotations

import asyncio
import re

import httpx
from fastapi.testclient import TestClient

from agentfy.gateway.app import create_app
from agentfy.gateway.console.stream import open_stream
from agentfy.runtime.model import ModelRequest, ModelResponse, TextSink
from agentfy.store.db import Database
from agentfy.store.repos import agents, api_keys, sessions
from tests.gateway.console.conftest import SignedIn
from tests.gateway.console.helpers import csrf_of, post_form
from tests.helpers.tenants import Tenant
from tests.runtime.helpers import FailingProvider
from tests.runtime.test_chat_streams import TIMEOUT, events_of


def test_a_person_sends_a_message_and_sees_the_reply(signed_in: SignedIn, db: Database, acme: Tenant,
                                                     person: str) -> None:
    with db.transaction() as tx:
        agent = agents.create_agent(tx, acme.scope, agent_key="support")
    client = signed_in("person")
    screen = f"/console/agents/{agent.id}/conversations"
    sent = post_form(client, screen, f"/console/agents/{agent.id}/messages",
                     {"conversation": "launch", "text": "hello <there>"})
    assert sent.status_code == 303
    location = sent.headers["location"]
    assert location.startswith(f"{screen}?session=") and location.endswith("&conversation=launch")
    page = client.get(location).text
    assert re.findall(r'<li class="msg (\w+)"', page) == ["user", "assistant"]
    assert "hello &lt;there&gt;" in page and "@support heard: hello &lt;there&gt;" in page

    fragment = client.post(f"/console/agents/{agent.id}/messages", headers={"hx-request": "true"},
                           data={"conversation": "launch", "text": "again", "csrf": csrf_of(page)})
    assert fragment.status_code == 200 and fragment.text.startswith('<section id="session-view"')
    assert fragment.text.count('class="msg assistant"') == 2 and "<html" not in fragment.text


def test_tool_calls_and_results_are_shown_as_such(signed_in: SignedIn, db: Database, acme: Tenant) -> None:
    with db.transaction() as tx:
        agent = agents.create_agent(tx, acme.scope, agent_key="support")
        sessions.open_session(tx, acme.scope, "s-tools", agent.id, "")
        sessions.append_message(tx, acme.scope, "s-tools", "user", "what is the weather?")
        sessions.append_message(tx, acme.scope, "s-tools", "assistant", "", tool_calls=[
            {"id": "call-1", "name": "weather", "arguments": {"city": "Oslo"}}])
        sessions.append_message(tx, acme.scope, "s-tools", "tool", '{"sky": "clear"}', tool_call_id="call-1")
    page = signed_in("operator").get(f"/console/agents/{agent.id}/conversations", params={"session": "s-tools"})
    assert page.status_code == 200
    text = page.text
    assert re.findall(r'<li class="msg (\w+)"', text) == ["user", "assistant", "tool"]
    assert '<span class="role">Tool call</span><code>weather</code>' in text
    assert "&quot;city&quot;: &quot;Oslo&quot;" in text
    assert "Tool result for <code>call-1</code>" in text and "{&quot;sky&quot;: &quot;clear&quot;}" in text


def test_another_organizations_or_persons_session_is_not_found(signed_in: SignedIn, db: Database, acme: Tenant,
                                                              globex: Tenant, person: str) -> None:
    with db.transaction() as tx:
        mine = agents.create_agent(tx, acme.scope, agent_key="support")
        theirs = agents.create_agent(tx, globex.scope, agent_key="support")
        sessions.open_session(tx, globex.scope, "s-globex", theirs.id, "")
        sessions.append_message(tx, globex.scope, "s-globex", "user", "globex secret plans")
        sessions.open_session(tx, acme.scope, "s-someone", mine.id, "user-someone-else")
        sessions.append_message(tx, acme.scope, "s-someone", "user", "someone's private note")
    owner = signed_in("owner")
    answer = owner.get(f"/console/agents/{mine.id}/conversations", params={"session": "s-globex"})
    assert answer.status_code == 404 and "not_found" in answer.text and "globex secret" not in answer.text
    assert owner.get(f"/console/agents/{theirs.id}/conversations").status_code == 404
    member = signed_in("member")  # a member acts as nobody: another scope's session is not found
    answer = member.get(f"/console/agents/{mine.id}/conversations", params={"session": "s-someone"})
    assert answer.status_code == 404 and "private note" not in answer.text


def test_a_key_that_is_no_person_is_shown_the_chat_routes_refusal(signed_in: SignedIn, db: Database,
                                                                 acme: Tenant) -> None:
    with db.transaction() as tx:
        agent = agents.create_agent(tx, acme.scope, agent_key="support")
    client = signed_in("owner")
    screen = f"/console/agents/{agent.id}/conversations"
    answer = post_form(client, screen, f"/console/agents/{agent.id}/messages", {"text": "hi"})
    assert answer.status_code == 403 and "needs a key that acts as a person" in answer.text
    empty = post_form(client, screen, f"/console/agents/{agent.id}/messages", {"text": "   "})
    assert empty.status_code in (403, 422) and 'role="alert"' in empty.text


# -- the streamed reply: the console's relay of the chat route's stream ----------------------------------------
def _stream(client: TestClient, agent_id: str, text: str, **form: str) -> httpx.Response:
    page = client.get(f"/console/agents/{agent_id}/conversations")
    assert page.status_code == 200, page.text
    return client.post(f"/console/agents/{agent_id}/messages/stream", follow_redirects=False,
                       data={"text": text, "csrf": csrf_of(page.text), **form})


def test_the_page_streams_through_the_relay_and_works_without_a_script(signed_in: SignedIn, db: Database,
                                                                        acme: Tenant, person: str) -> None:
    with db.transaction() as tx:
        agent = agents.create_agent(tx, acme.scope, agent_key="support")
    page = signed_in("person").get(f"/console/agents/{agent.id}/conversations").text
    form = re.search(r'<form method="post" action="([^"]+)" id="send-form" data-stream="([^"]+)"', page)
    assert form is not None  # a plain POST without the script, the relay with it
    assert form.groups() == (f"/console/agents/{agent.id}/messages", f"/console/agents/{agent.id}/messages/stream")
    assert '<script src="/console/static/conversation.js" defer></script>' in page and "hx-post" not in page


def test_the_relay_answers_the_apis_deltas_then_its_reply(signed_in: SignedIn, db: Database, acme: Tenant,
                                                          person: str) -> None:
    with db.transaction() as tx:
        agent = agents.create_agent(tx, acme.scope, agent_key="support")
    client = signed_in("person")
    answer = _stream(client, agent.id, "hello <there>", conversation="launch")
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/event-stream")
    assert answer.headers["cache-control"] == "no-store"
    events = events_of(answer.text)
    deltas = [data["text"] for name, data in events if name == "delta"]
    reply = events[-1][1]
    assert len(deltas) > 1 and [n for n, _ in events] == ["delta"] * len(deltas) + ["reply"]
    assert "".join(deltas) == reply["reply"] == "@support heard: hello <there>"
    assert reply["conversation"] == "launch"
    shown = client.get(f"/console/agents/{agent.id}/conversations", params={"session": reply["session_key"]}).text
    assert re.findall(r'<li class="msg (\w+)"', shown) == ["user", "assistant"]


def test_a_run_that_fails_mid_stream_ends_with_the_apis_error_event(signed_in: SignedIn, db: Database,
                                                                    acme: Tenant, person: str) -> None:
    with db.transaction() as tx:
        agent = agents.create_agent(tx, acme.scope, agent_key="support")
    client = signed_in("person")
    gateway = client.app.state.gateway  # type: ignore[attr-defined]
    gateway.runtime.providers.offline = FailingProvider(TIMEOUT, pieces=["half ", "an answer"])
    answer = _stream(client, agent.id, "hi")
    assert answer.status_code == 200
    events = events_of(answer.text)
    assert events[:2] == [("delta", {"text": "half "}), ("delta", {"text": "an answer"})] and len(events) == 3
    name, body = events[-1]
    assert name == "error" and body["error"]["code"] == "model_error" and body["error"]["status"] == 504
    assert body["error"]["message"].startswith("The agent's model did not answer in time")


def test_a_refusal_before_the_stream_is_one_error_event_with_the_apis_status(
        signed_in: SignedIn, db: Database, acme: Tenant, globex: Tenant, person: str) -> None:
    with db.transaction() as tx:
        agent = agents.create_agent(tx, acme.scope, agent_key="support")
        theirs = agents.create_agent(tx, globex.scope, agent_key="support")
    owner = signed_in("owner")  # acts as no person: the chat route refuses it
    refused = _stream(owner, agent.id, "hi")
    assert refused.status_code == 403 and refused.headers["content-type"].startswith("text/event-stream")
    [(name, body)] = events_of(refused.text)
    assert name == "error" and body["error"]["status"] == 403 and "acts as a person" in body["error"]["message"]
    client = signed_in("person")
    empty = _stream(client, agent.id, "   ")
    [(name, body)] = events_of(empty.text)
    assert empty.status_code == 422 and body["error"]["code"] == "invalid_input" and body["error"]["field"]
    page = client.get(f"/console/agents/{agent.id}/conversations")
    missing = client.post(f"/console/agents/{theirs.id}/messages/stream", follow_redirects=False,
                          data={"text": "hi", "csrf": csrf_of(page.text)})
    assert missing.status_code == 404 and "globex" not in missing.text
    assert events_of(missing.text)[0][1]["error"]["code"] == "not_found"
    forged = client.post(f"/console/agents/{agent.id}/messages/stream", data={"text": "hi", "csrf": "forged"},
                         follow_redirects=False)
    assert forged.status_code == 403 and "csrf_token_invalid" in forged.text


def test_a_key_revoked_since_sign_in_is_signed_out_by_the_relay(signed_in: SignedIn, db: Database, acme: Tenant,
                                                                person: str) -> None:
    with db.transaction() as tx:
        agent = agents.create_agent(tx, acme.scope, agent_key="support")
    client = signed_in("person")
    page = client.get(f"/console/agents/{agent.id}/conversations")
    with db.transaction() as tx:
        (key,) = [k for k in api_keys.list_api_keys(tx, acme.scope) if k.name == "operator person"]
        api_keys.revoke_api_key(tx, acme.scope, key.id)
    answer = client.post(f"/console/agents/{agent.id}/messages/stream", follow_redirects=False,
                         data={"text": "hi", "csrf": csrf_of(page.text)})
    assert answer.status_code == 303 and answer.headers["location"] == "/console/sign-in?refused=1"
    assert 'agentfy_console=""' in answer.headers["set-cookie"]


def test_the_relay_passes_each_piece_on_before_the_run_ends(db: Database, acme: Tenant, person: str) -> None:
    """The relay never buffers: the first piece reaches the console while the model is still holding the
    second back."""
    with db.transaction() as tx:
        agent = agents.create_agent(tx, acme.scope, agent_key="support")
    app = create_app(db, signing_secret=b"s" * 32)

    async def scenario() -> list[bytes]:
        release = asyncio.Event()

        class HeldBack:
            async def complete(self, request: ModelRequest, *, on_text: TextSink | None = None) -> ModelResponse:
                assert on_text is not None
                await on_text("first ")
                await release.wait()
                await on_text("second")
                return ModelResponse(text="first second")

        app.state.gateway.runtime.providers.offline = HeldBack()
        chunks = await open_stream(app, acme.keys["person"], f"/v1/agents/{agent.id}/messages",
                                   {"text": "hi", "stream": True})
        first = await asyncio.wait_for(anext(chunks), timeout=5)  # while the model holds the rest back
        release.set()
        return [first] + [chunk async for chunk in chunks]

    received = asyncio.run(scenario())
    assert events_of(received[0].decode()) == [("delta", {"text": "first "})]
    events = events_of(b"".join(received).decode())
    assert [name for name, _ in events] == ["delta", "delta", "reply"] and events[-1][1]["reply"] == "first second"


def test_a_browser_that_leaves_mid_stream_does_not_stop_the_run(db: Database, acme: Tenant, person: str) -> None:
    """Closing the relay tells the API's request the client left; the run goes on and its reply is stored."""
    with db.transaction() as tx:
        agent = agents.create_agent(tx, acme.scope, agent_key="support")
    app = create_app(db, signing_secret=b"s" * 32)

    async def scenario() -> str:
        release, finished = asyncio.Event(), asyncio.Event()

        class HeldBack:
            async def complete(self, request: ModelRequest, *, on_text: TextSink | None = None) -> ModelResponse:
                assert on_text is not None
                await on_text("first ")
                await release.wait()
                await on_text("and last")  # nobody hears it any more
                finished.set()
                return ModelResponse(text="first and last")

        app.state.gateway.runtime.providers.offline = HeldBack()
        chunks = await open_stream(app, acme.keys["person"], f"/v1/agents/{agent.id}/messages",
                                   {"text": "hi", "stream": True, "conversation": "left"})
        first = await asyncio.wait_for(anext(chunks), timeout=5)
        await chunks.aclose()  # the browser went away
        release.set()
        await asyncio.wait_for(finished.wait(), timeout=5)
        for _ in range(100):  # the run stores its reply just after the model's answer
            with db.transaction(write=False) as tx:
                stored = [(m.role, m.content) for found in sessions.open_conversations(tx, acme.scope, agent.id)
                          for m in sessions.list_messages(tx, acme.scope, found.session_key)]
            if ("assistant", "first and last") in stored:
                return first.decode()
            await asyncio.sleep(0.05)
        raise AssertionError(f"the reply was never stored: {stored}")

    assert events_of(asyncio.run(scenario())) == [("delta", {"text": "first "})]
