"""How the OpenAI-compatible endpoint reports a model that fails (both engines): before it said anything, an
error response (504 when it timed out, else 502); after the stream began, an ``error`` event ending it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from agentfy.agents.router import Router
from agentfy.gateway.app import create_app
from agentfy.identity import Scope
from agentfy.runtime.model import ModelError, ModelRequest, ModelResponse, TextSink
from agentfy.runtime.providers import Providers
from agentfy.runtime.runner import Runtime
from agentfy.store.db import Database
from agentfy.store.repos import agents, api_keys, orgs


class Failing:
    """A model that says ``said`` (if anything) and then fails."""

    def __init__(self) -> None:
        self.said: str | None = None
        self.timed_out = False

    async def complete(self, request: ModelRequest, *, on_text: TextSink | None = None) -> ModelResponse:
        if self.said is not None and on_text is not None:
            await on_text(self.said)
        raise ModelError("the model at http://model.example is unreachable", timed_out=self.timed_out)


@pytest.fixture
def failing(db: Database, tmp_path: Path) -> Iterator[tuple[TestClient, Failing, str]]:
    with db.transaction() as tx:
        scope = Scope(orgs.create_organization(tx, slug="acme", name="Acme").id)
        person = orgs.create_user(tx, display_name="Ann", email="ann@acme.example")
        orgs.add_member(tx, scope, person.id, "member")
        key = api_keys.create_api_key(tx, scope, name="ann", role="member", user_id=person.id).key
        agents.create_agent(tx, scope, agent_key="bot")
    model = Failing()
    runtime = Runtime(db, Router(db), workspace_root=tmp_path / "workspaces", providers=Providers(offline=model))
    with TestClient(create_app(db, signing_secret=b"s" * 32, runtime=runtime)) as client:
        yield client, model, key


BODY = {"model": "bot", "messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.parametrize("stream", [False, True])
def test_a_model_failing_before_it_said_anything_is_502_or_504(failing: tuple[TestClient, Failing, str],
                                                               stream: bool) -> None:
    client, model, key = failing
    for timed_out, status, code in ((False, 502, "model_error"), (True, 504, "timeout")):
        model.timed_out = timed_out
        answer = client.post("/v1/chat/completions", json={**BODY, "stream": stream},
                             headers={"Authorization": f"Bearer {key}"})
        assert answer.status_code == status
        assert answer.json() == {"error": {"message": "the model at http://model.example is unreachable",
                                           "type": "api_error", "param": None, "code": code}}


def test_a_model_failing_mid_stream_ends_it_with_an_error_event(failing: tuple[TestClient, Failing, str]) -> None:
    client, model, key = failing
    model.said = "Partly"
    with client.stream("POST", "/v1/chat/completions", json={**BODY, "stream": True},
                       headers={"Authorization": f"Bearer {key}"}) as answer:
        assert answer.status_code == 200
        events = [line.removeprefix("data: ") for line in answer.iter_lines() if line]
    assert json.loads(events[0])["choices"][0]["delta"] == {"role": "assistant", "content": "Partly"}
    assert json.loads(events[-1]) == {"error": {"message": "the model at http://model.example is unreachable",
                                                "type": "api_error", "param": None, "code": "model_error"}}
    assert "[DONE]" not in events
