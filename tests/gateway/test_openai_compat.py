"""The OpenAI-compatible endpoint, through the real ``openai`` SDK against a served gateway (both engines):
completions streamed and not, the conversation ``user`` names, ``GET /v1/models``, and OpenAI's errors.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import openai
import pytest
import sqlalchemy as sa

from agentfy.gateway.app import create_app
from agentfy.gateway.openai.schemas import ChatCompletion
from agentfy.identity import Scope
from agentfy.runtime.conversation import conversation_key
from agentfy.store.db import Database
from agentfy.store.repos import agents, api_keys, orgs, sessions
from agentfy.store.repos.agents import Agent
from agentfy.store.schema import sessions as sessions_table
from tests.helpers.served import ServedApp


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Served:
    base: str
    key: str
    person: str
    scope: Scope
    bot: Agent
    nobody_key: str
    revoked_key: str

    def client(self, key: str | None = None, **options: object) -> openai.OpenAI:
        return openai.OpenAI(base_url=f"{self.base}/v1", api_key=key or self.key, **options)  # type: ignore[arg-type]


@pytest.fixture
def served(db: Database, tmp_path: Path) -> Iterator[Served]:
    closed = _free_port()  # nothing listens here: the broken agent's model is unreachable
    with db.transaction() as tx:
        org = orgs.create_organization(tx, slug="acme", name="Acme")
        scope = Scope(org.id)
        person = orgs.create_user(tx, display_name="Ann", email="ann@acme.example")
        orgs.add_member(tx, scope, person.id, "member")
        key = api_keys.create_api_key(tx, scope, name="ann", role="member", user_id=person.id).key
        nobody = api_keys.create_api_key(tx, scope, name="nobody", role="member").key
        revoked = api_keys.create_api_key(tx, scope, name="old", role="member", user_id=person.id)
        api_keys.revoke_api_key(tx, scope, revoked.record.id)
        bot = agents.create_agent(tx, scope, agent_key="bot")
        agents.create_agent(tx, scope, agent_key="broken", config={"model": {
            "provider": "openai", "base_url": f"http://127.0.0.1:{closed}/v1", "model": "m"}})
        other = orgs.create_organization(tx, slug="globex", name="Globex")
        agents.create_agent(tx, Scope(other.id), agent_key="rival")
    app = create_app(db, signing_secret=b"s" * 32, workspace_root=tmp_path / "workspaces")
    with ServedApp(app, name="gateway") as gateway:
        yield Served(gateway.url, key, person.id, scope, bot, nobody, revoked.key)


def test_a_completion_answers_with_the_agents_reply_and_usage(served: Served) -> None:
    answer = served.client().chat.completions.create(
        model="bot", messages=[{"role": "system", "content": "ignored"}, {"role": "user", "content": "hello"}])
    assert answer.object == "chat.completion"
    assert answer.model == "bot"
    assert answer.choices[0].message.role == "assistant"
    assert answer.choices[0].message.content == "@bot heard: hello"
    assert answer.choices[0].finish_reason == "stop"
    assert answer.usage is not None and answer.usage.total_tokens == (
        answer.usage.prompt_tokens + answer.usage.completion_tokens) > 0
    by_id = served.client().chat.completions.create(model=served.bot.id, messages=[
        {"role": "user", "content": [{"type": "text", "text": "by"}, {"type": "text", "text": "id"}]}])
    assert by_id.choices[0].message.content == "@bot heard: by\nid"


def test_the_raw_completion_is_json_of_the_documented_model_with_text_unescaped(served: Served) -> None:
    answer = httpx.post(f"{served.base}/v1/chat/completions", headers={"Authorization": f"Bearer {served.key}"},
                        json={"model": "bot", "messages": [{"role": "user", "content": "grüß dich 🙂"}]}, timeout=30)
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/json"
    body = answer.json()
    assert ChatCompletion.model_validate(body).model_dump(mode="json") == body  # every field, nothing more
    assert body["choices"][0]["message"]["content"] == "@bot heard: grüß dich 🙂"
    assert "grüß dich 🙂".encode() in answer.content  # UTF-8, as the rest of the API answers


def test_a_stream_sends_the_role_then_the_pieces_then_stop_then_usage(served: Served) -> None:
    chunks = list(served.client().chat.completions.create(
        model="bot", messages=[{"role": "user", "content": "one two three"}], stream=True,
        stream_options={"include_usage": True}))
    assert all(chunk.object == "chat.completion.chunk" for chunk in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)
    assert text == "@bot heard: one two three"
    assert len([chunk for chunk in chunks if chunk.choices and chunk.choices[0].delta.content]) > 1  # streamed
    assert [chunk.choices[0].finish_reason for chunk in chunks if chunk.choices][-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None and chunks[-1].usage.total_tokens > 0
    without_usage = list(served.client().chat.completions.create(
        model="bot", messages=[{"role": "user", "content": "hi"}], stream=True))
    assert all(chunk.usage is None for chunk in without_usage) and without_usage[-1].choices[0].finish_reason == "stop"


def test_the_raw_stream_ends_with_done(served: Served) -> None:
    with httpx.stream("POST", f"{served.base}/v1/chat/completions", headers={"Authorization": f"Bearer {served.key}"},
                      json={"model": "bot", "stream": True, "messages": [{"role": "user", "content": "hi"}]},
                      timeout=30) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = [line for line in response.iter_lines() if line]
    assert all(line.startswith("data: ") for line in events)
    assert events[-1] == "data: [DONE]"


def test_user_continues_a_conversation_and_without_it_each_one_is_completed(served: Served, db: Database) -> None:
    client = served.client()
    for text in ("first", "second"):
        client.chat.completions.create(model="bot", user="thread-1", messages=[{"role": "user", "content": text}])
    key = conversation_key(served.bot, served.person, "api:thread-1")
    with db.transaction(write=False) as tx:
        stored = [(m.role, m.content) for m in sessions.list_messages(tx, served.scope, key)]
        assert sessions.get_session(tx, served.scope, key).status == "open"
    assert stored == [("user", "first"), ("assistant", "@bot heard: first"), ("user", "second"),
                      ("assistant", "@bot heard: second")]
    client.chat.completions.create(model="bot", messages=[{"role": "user", "content": "once"}])
    client.chat.completions.create(model="bot", messages=[{"role": "user", "content": "once"}], stream=True).close()
    with db.transaction(write=False) as tx:
        rows = tx.all(sa.select(sessions_table.c.session_key, sessions_table.c.status).where(
            sessions_table.c.tenant_id == served.scope.tenant_id))
    one_offs = [status for session_key, status in rows if "openai-" in session_key]
    assert len(one_offs) == 2
    deadline = time.monotonic() + 10  # the stream's run completes its session after the last event
    while "open" in one_offs and time.monotonic() < deadline:
        time.sleep(0.05)
        with db.transaction(write=False) as tx:
            one_offs = [row[1] for row in tx.all(sa.select(sessions_table.c.session_key, sessions_table.c.status)
                                                 .where(sessions_table.c.tenant_id == served.scope.tenant_id))
                        if "openai-" in row[0]]
    assert one_offs == ["completed", "completed"]


def test_models_lists_the_organizations_agents(served: Served) -> None:
    models = served.client().models.list()
    assert [(m.id, m.object, m.owned_by) for m in models.data] == [("bot", "model", "acme"),
                                                                   ("broken", "model", "acme")]
    assert all(abs(m.created - time.time()) < 3600 for m in models.data)


def test_errors_are_openais_classes_and_shape(served: Served) -> None:
    messages = [{"role": "user", "content": "hi"}]
    for bad in ("agfy_ok_not-a-key", served.revoked_key):
        with pytest.raises(openai.AuthenticationError) as refused:
            served.client(bad).chat.completions.create(model="bot", messages=messages)  # type: ignore[arg-type]
        assert refused.value.code == "invalid_api_key" and refused.value.type == "invalid_request_error"
    answers = []
    for model in ("rival", "nobody-here", "agent-calm-rivers-k8m4p2d7n9x3"):
        with pytest.raises(openai.NotFoundError) as missing:
            served.client().chat.completions.create(model=model, messages=messages)  # type: ignore[arg-type]
        assert missing.value.code == "model_not_found" and missing.value.param == "model"
        answers.append(str(missing.value.message).replace(model, "?"))
    assert len(set(answers)) == 1, "another organization's agent answers as a missing one"
    for body_messages, param in (([{"role": "assistant", "content": "hi"}], "messages"),
                                 ([{"role": "user", "content": "   "}], "messages"),
                                 ([], "messages")):
        with pytest.raises(openai.BadRequestError) as bad_body:
            served.client().chat.completions.create(model="bot", messages=body_messages)  # type: ignore[arg-type]
        assert bad_body.value.param == param and bad_body.value.type == "invalid_request_error"
    with pytest.raises(openai.PermissionDeniedError):  # a conversation is a person's
        served.client(served.nobody_key).chat.completions.create(model="bot", messages=messages)  # type: ignore[arg-type]
    for stream in (False, True):
        with pytest.raises(openai.InternalServerError) as failed:
            served.client(max_retries=0).chat.completions.create(model="broken", messages=messages,  # type: ignore[arg-type]
                                                                 stream=stream)
        assert failed.value.status_code == 502 and failed.value.code == "model_error"
        assert "unreachable" in str(failed.value.message)


def test_other_routes_keep_agentfys_error_shape(served: Served) -> None:
    answer = httpx.get(f"{served.base}/v1/agents/rival", headers={"Authorization": f"Bearer {served.key}"},
                       timeout=30)
    assert answer.status_code == 404 and answer.json()["error"]["code"] == "not_found"
    unauthenticated = httpx.get(f"{served.base}/v1/models", timeout=30)
    assert unauthenticated.status_code == 401
    assert unauthenticated.json() == {"error": {"message": unauthenticated.json()["error"]["message"],
                                                "type": "invalid_request_error", "param": None,
                                                "code": "invalid_api_key"}}
