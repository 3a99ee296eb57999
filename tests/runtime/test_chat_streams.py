"""The API's chat answers streamed and failed: ``stream: true`` on ``POST /v1/agents/{agent}/messages`` (server-sent
events whose deltas join to the reply), ``model_error`` 502 and 504 over HTTP, SSE and the WebSocket, and run
deltas that reach only the person whose conversation it is (SQLite and PostgreSQL)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from agentfy.gateway.app import create_app
from agentfy.runtime.model import ModelError
from agentfy.store.db import Database
from tests.helpers.tenants import make_tenant
from tests.runtime.helpers import FailingProvider
from tests.runtime.test_http_chat import Person

TIMEOUT = ModelError("the model at http://model.test/v1 did not answer in time (ReadTimeout)", timed_out=True)


@pytest.fixture
def client(db: Database, tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(db, signing_secret=b"s" * 32, workspace_root=tmp_path / "ws")) as test_client:
        yield test_client


@pytest.fixture
def people(db: Database) -> dict[str, Person]:
    tenant = make_tenant(db, "acme", agent_key="bot")
    return {role: Person(db, tenant.scope, role) for role in ("member", "admin")}


def fail_with(client: TestClient, provider: FailingProvider) -> None:
    client.app.state.gateway.runtime.providers.offline = provider  # type: ignore[attr-defined]


def events_of(text: str) -> list[tuple[str, Any]]:
    """The server-sent events of a response body, as (event, data)."""
    found = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        found.append((fields["event"], json.loads(fields["data"])))
    return found


def test_a_streamed_answer_is_deltas_that_join_to_the_reply(client: TestClient, people: dict[str, Person]) -> None:
    ann = people["member"]
    plain = client.post("/v1/agents/bot/messages", json={"text": "hello there"}, headers=ann.headers).json()
    answer = client.post("/v1/agents/bot/messages", json={"text": "hello there", "stream": True}, headers=ann.headers)
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/event-stream")
    events = events_of(answer.text)
    deltas = [data["text"] for name, data in events if name == "delta"]
    assert len(deltas) > 1  # word by word
    assert [name for name, _ in events] == ["delta"] * len(deltas) + ["reply"]
    reply = events[-1][1]
    assert "".join(deltas) == reply["reply"] == "@bot heard: hello there"
    assert reply.keys() == plain.keys() and reply["session_key"] == plain["session_key"]


def test_errors_before_the_stream_are_ordinary_http_errors(client: TestClient, people: dict[str, Person]) -> None:
    ann = people["member"]
    missing = client.post("/v1/agents/ghost/messages", json={"text": "hi", "stream": True}, headers=ann.headers)
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    invalid = client.post("/v1/agents/bot/messages", json={"text": " ", "stream": True}, headers=ann.headers)
    assert invalid.status_code == 422
    fail_with(client, FailingProvider())  # fails before saying anything: the ordinary 502
    failed = client.post("/v1/agents/bot/messages", json={"text": "hi", "stream": True}, headers=ann.headers)
    assert failed.status_code == 502 and failed.json()["error"]["code"] == "model_error"


def test_a_model_that_fails_is_502_and_one_that_times_out_504(client: TestClient, people: dict[str, Person]) -> None:
    ann = people["member"]
    fail_with(client, FailingProvider())
    failed = client.post("/v1/agents/bot/messages", json={"text": "hi"}, headers=ann.headers)
    assert failed.status_code == 502
    error = failed.json()["error"]
    assert error["code"] == "model_error"  # the message is the note every channel gives the person
    assert error["message"].startswith("The agent's model could not answer (the model at http://model.test/v1 "
                                       "answered HTTP 503). Please try again in a minute")
    fail_with(client, FailingProvider(TIMEOUT))
    timed_out = client.post("/v1/agents/bot/messages", json={"text": "hi"}, headers=ann.headers)
    assert timed_out.status_code == 504 and timed_out.json()["error"]["code"] == "model_error"
    with client.websocket_connect("/v1/ws", headers=ann.headers) as ws:
        ws.send_json({"id": 1, "method": "agents.send", "params": {"agent": "bot", "text": "hi"}})
        while (message := ws.receive_json()).get("id") != 1:
            pass
    assert message["error"]["status"] == 504 and message["error"]["code"] == "model_error"


def test_a_run_that_fails_mid_stream_ends_with_an_error_event(client: TestClient, people: dict[str, Person]) -> None:
    ann = people["member"]
    fail_with(client, FailingProvider(TIMEOUT, pieces=["half ", "an answer"]))
    answer = client.post("/v1/agents/bot/messages", json={"text": "hi", "stream": True}, headers=ann.headers)
    assert answer.status_code == 200
    events = events_of(answer.text)
    assert events[:2] == [("delta", {"text": "half "}), ("delta", {"text": "an answer"})]
    name, body = events[-1]
    assert name == "error" and len(events) == 3
    assert body["error"]["code"] == "model_error" and body["error"]["status"] == 504
    assert body["error"]["message"].startswith("The agent's model did not answer in time (the model at")


def test_deltas_reach_the_sender_and_no_other_member(client: TestClient, people: dict[str, Person]) -> None:
    """An admin subscribed to the same tenant sees the run's progress, never another person's text."""
    ann, admin = people["member"], people["admin"]
    with client.websocket_connect("/v1/ws", headers=ann.headers) as mine, \
            client.websocket_connect("/v1/ws", headers=admin.headers) as theirs:
        for ws in (mine, theirs):
            ws.send_json({"id": 1, "method": "subscribe"})
            assert ws.receive_json()["id"] == 1
        mine.send_json({"id": 2, "method": "agents.send", "params": {"agent": "bot", "text": "private words"}})
        own: list[dict[str, Any]] = []
        while (message := mine.receive_json()).get("id") != 2:
            own.append(message)
        # the admin's connection: every run event up to the end of the run, then nothing more is queued
        seen: list[dict[str, Any]] = []
        while not seen or seen[-1].get("event") != "agent.run.finished":
            seen.append(theirs.receive_json())
    own_names = [m["event"] for m in own]
    assert "agent.run.delta" in own_names
    assert "".join(m["run"]["text"] for m in own if m["event"] == "agent.run.delta") == message["result"]["reply"]
    assert [m["event"] for m in seen] == ["agent.run.started", "agent.replied", "agent.run.finished"]
    assert all("private words" not in json.dumps(m) for m in seen)
    assert {m["agent"]["agent_key"] for m in own + seen} == {"bot"}
    assert {m["agent"]["tenant_slug"] for m in own + seen} == {"acme"}
