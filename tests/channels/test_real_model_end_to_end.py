"""A real model's behaviour reaches the person on every surface: the gateway's real endpoints (the Telegram
webhook, Discord's interactions, ``POST /v1/agents/{agent}/messages`` plain and streamed, the WebSocket's
``agents.send``) and the terminal chat, with an agent whose model is a real local OpenAI-compatible server
(:class:`~tests.helpers.fake_openai.FakeOpenAI`), set up as an admin does it: the credential by ``PUT
/v1/credentials/{name}``, the model by ``PUT /v1/agents/{agent}/model`` (SQLite and PostgreSQL).

What is shown: a second turn replays the first turn's tool call and its result to the model; a 429 with
``Retry-After`` is waited out and the answer arrives; a model that answers 503 every time gets the person the
failure note (no secret, no stack) and nothing half-written stays, neither in the chat nor in the session;
streamed pieces join to the final text; every model call's usage row carries the agent's ID.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from fastapi.testclient import TestClient
from pydantic import SecretStr

from agentfy.channels.settings import ChannelSettings, DiscordSettings, TelegramSettings
from agentfy.gateway.app import create_app
from agentfy.identity.roles import ROLES
from agentfy.runtime import terminal
from agentfy.runtime.model import Usage
from agentfy.runtime.openai_compat import CallPolicy
from agentfy.runtime.providers import Providers
from agentfy.settings import Settings
from agentfy.store import schema
from agentfy.store.db import Database
from agentfy.store.repos import agents, sessions
from agentfy.store.repos.credentials import CredentialCipher
from tests.channels.helpers import DISCORD_API, TELEGRAM_API, FakePlatforms
from tests.channels.test_discord import APP, command, public_hex, signed
from tests.helpers.fake_openai import Completion, Failure, FakeOpenAI, FakeToolCall
from tests.helpers.tenants import Tenant, make_tenant
from tests.runtime.test_chat_streams import events_of
from tests.runtime.test_http_chat import Person

API_KEY = "sk-live-e2e-0123456789abcdefWXYZ"  # the organization's model credential: never shown to anyone
MODEL = "gpt-e2e"
BOT, BOT_TOKEN, SECRET = "SupportBot", "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw", "e2e-secret-0123456789-abcdefgh"
ALICE = 1001
#: The least time between two Telegram edits in a chat here (the setting's minimum: the tests stay fast).
EDIT_INTERVAL = 0.1
#: Spaces the fake's streamed pieces so that the Telegram reply is edited while it streams.
PIECE_DELAY = 0.12


@pytest.fixture(scope="module")
def fake_server() -> Iterator[FakeOpenAI]:
    """One model server for the module (each test takes it clean through :func:`model`)."""
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def model(fake_server: FakeOpenAI) -> Iterator[FakeOpenAI]:
    """The module's model server with no requests recorded; the test must use every answer it scripts."""
    fake_server.reset()
    yield fake_server
    left = fake_server.pending
    fake_server.reset()  # the next test starts with an empty script, whatever this one left
    assert left == 0, f"{left} scripted answers were never asked for"


def note(server: FakeOpenAI, what: str = "answered HTTP 503") -> str:
    """The failure note every surface gives the person when the model at ``server`` fails."""
    return (f"The agent's model could not answer (the model at {server.url} {what}). Please try again in a "
            "minute; if it keeps failing, ask an admin to check the agent's model settings (`agentfy agents "
            "model check support`).")


@dataclass
class World:
    """The gateway (real runtime, fake platforms' APIs), the organization ``acme`` with its agent ``support``
    whose model is the fake server, and a person who may chat over the API."""

    db: Database
    client: TestClient
    platforms: FakePlatforms
    model: FakeOpenAI
    acme: Tenant
    person: Person
    agent_id: str
    cipher: CredentialCipher
    discord_key: Ed25519PrivateKey

    # -- the surfaces -------------------------------------------------------------------------------------------
    def telegram(self, text: str, *, chat: int = ALICE) -> list[dict[str, Any]]:
        """Alice writes to the bot in a DM; returns every request the Bot API got for this turn (the webhook
        returns once the turn and its reply are done)."""
        before = len(self.platforms.requests)
        update = {"update_id": 7, "message": {"message_id": 42, "chat": {"id": chat, "type": "private"},
                                              "text": text, "from": {"id": ALICE, "is_bot": False,
                                                                     "first_name": "Alice"}}}
        answer = self.client.post(f"/v1/channels/telegram/{BOT}/webhook", json=update,
                                  headers={"X-Telegram-Bot-Api-Secret-Token": SECRET})
        assert answer.status_code == 200 and answer.json() == {"ok": True}, answer.text
        return [body for _, _, body in self.platforms.requests[before:]]

    def shown(self, since: int = 0) -> list[str]:
        """The Telegram messages as the chat shows them in the end (each at its last edit)."""
        return [m["text"] for m in self.platforms.shown(since)]

    def discord(self, text: str) -> list[tuple[str, str, Any]]:
        """A slash command in a guild; returns the requests Discord's API got for this turn."""
        before = len(self.platforms.requests)
        body = json.dumps(command(text)).encode()
        answer = self.client.post(f"/v1/channels/discord/{APP}/interactions", content=body,
                                  headers=signed(self.discord_key, body))
        assert answer.status_code == 200 and answer.json()["type"] == 5, answer.text  # "thinking…"
        return self.platforms.requests[before:]

    def http(self, text: str, **body: Any) -> httpx.Response:
        return self.client.post("/v1/agents/support/messages", json={"text": text, **body},
                                headers=self.person.headers)

    # -- what is stored -------------------------------------------------------------------------------------------
    def stored(self) -> list[tuple[str, str]]:
        """``(role, content)`` of every message of the agent's sessions, oldest session first."""
        table = schema.sessions
        with self.db.transaction(write=False) as tx:
            keys = tx.all(sa.select(table.c.session_key).where(
                table.c.tenant_id == self.acme.scope.tenant_id, table.c.agent_id == self.agent_id)
                .order_by(table.c.created_at, table.c.session_key))
            return [(m.role, m.content) for (key,) in keys for m in sessions.list_messages(tx, self.acme.scope, key)]

    def usage(self) -> list[dict[str, Any]]:
        answer = self.client.get("/v1/usage", params={"agent": "support"}, headers=self.acme.headers("admin"))
        assert answer.status_code == 200, answer.text
        rows: list[dict[str, Any]] = answer.json()["rows"]
        return rows


@pytest.fixture
def world(db: Database, tmp_path: Path, model: FakeOpenAI) -> Iterator[World]:
    key = os.urandom(32)
    settings = Settings(credentials_key=SecretStr(base64.b64encode(key).decode()))
    app = create_app(db, signing_secret=b"s" * 32, settings=settings, workspace_root=tmp_path / "workspaces")
    # retries as in production, only faster when the server gives no Retry-After (a 503)
    app.state.gateway.runtime.providers.policy = CallPolicy(attempts=3, timeout_seconds=10, backoff_seconds=0.01,
                                                            backoff_max_seconds=0.02)
    platforms = FakePlatforms()
    channels = app.state.channels
    channels.transport = httpx.MockTransport(platforms.handle)
    channels.settings = ChannelSettings(telegram=TelegramSettings(api_base=TELEGRAM_API,
                                                                  edit_interval_seconds=EDIT_INTERVAL),
                                        discord=DiscordSettings(api_base=DISCORD_API))
    acme = make_tenant(db, "acme", keys=ROLES)
    with db.transaction() as tx:
        agent_id = agents.create_agent(tx, acme.scope, agent_key="support").id
    person = Person(db, acme.scope, "member")
    discord_key = Ed25519PrivateKey.generate()
    with TestClient(app) as client:
        admin = acme.headers("admin")
        assert client.put("/v1/credentials/llm", json={"secret": API_KEY}, headers=admin).status_code == 200
        configured = client.put("/v1/agents/support/model", headers=admin, json={
            "provider": "openai", "base_url": model.url, "model": MODEL, "credential": "llm"})
        assert configured.status_code == 200, configured.text
        assert client.put("/v1/agents/support/channels/telegram", headers=admin, json={
            "bot_username": f"@{BOT}", "bot_token": BOT_TOKEN, "secret_token": SECRET}).status_code == 201
        assert client.put("/v1/agents/support/channels/discord", headers=admin, json={
            "application_id": APP, "public_key": public_hex(discord_key)}).status_code == 201
        yield World(db, client, platforms, model, acme, person, agent_id, CredentialCipher(key), discord_key)


def _no_secret_no_stack(text: str) -> None:
    assert API_KEY not in text and BOT_TOKEN not in text
    assert "Traceback" not in text and "File \"" not in text


# -- 1. the conversation replays tool calls ---------------------------------------------------------------------
def test_a_second_turn_replays_the_first_turns_tool_call_and_its_result(world: World) -> None:
    world.model.script(
        Completion(tool_calls=[FakeToolCall("call_1", "search_memory", {"query": "launch", "limit": 2})],
                   usage=Usage(100, 10, 64)),
        Completion(text="Nothing about the launch yet.", usage=Usage(130, 8)),
        Completion(text="Still nothing, sorry.", usage=Usage(160, 6)))
    world.telegram("what about the launch?")
    assert world.shown() == ["Nothing about the launch yet."]
    before = len(world.platforms.requests)
    world.telegram("and now?")
    assert world.shown(before) == ["Still nothing, sorry."]

    first, _, second_turn = world.model.requests
    assert first.headers["authorization"] == f"Bearer {API_KEY}" and first.body["model"] == MODEL
    replayed = second_turn.body["messages"]
    calls = [m for m in replayed if m["role"] == "assistant" and m.get("tool_calls")]
    assert [(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
            for m in calls for c in m["tool_calls"]] == [("call_1", "search_memory", {"query": "launch", "limit": 2})]
    results = [m for m in replayed if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in results] == [("call_1", "no memory matches 'launch'")]
    # in the order the model needs: the call, its result, the first reply, then the new question
    order = [(m["role"], bool(m.get("tool_calls"))) for m in replayed[1:]]
    assert order == [("user", False), ("assistant", True), ("tool", False), ("assistant", False), ("user", False)]
    assert replayed[-1]["content"] == "and now?"

    # -- 5. every call's usage is the agent's, by its ID ------------------------------------------------------
    (row,) = world.usage()
    assert (row["agent_id"], row["agent_key"], row["model"]) == (world.agent_id, "support", MODEL)
    assert (row["calls"], row["prompt_tokens"], row["completion_tokens"]) == (3, 390, 24)


# -- 2. a rate limit is waited out ------------------------------------------------------------------------------
def test_a_429_with_retry_after_is_waited_out_and_the_answer_reaches_the_telegram_chat(world: World) -> None:
    world.model.script(Failure(429, headers={"retry-after-ms": "400"}),
                       Completion(text="Here it is, after the wait.", usage=Usage(50, 7)))
    world.telegram("hello")
    assert world.shown() == ["Here it is, after the wait."]
    limited, answered = world.model.requests
    assert answered.at - limited.at >= 0.4  # the server's Retry-After, not the quick backoff
    (row,) = world.usage()
    assert row["agent_id"] == world.agent_id and row["calls"] == 1 and row["prompt_tokens"] == 50


def test_a_429_with_retry_after_is_waited_out_and_the_answer_reaches_the_http_caller(world: World) -> None:
    world.model.script(Failure(429, headers={"retry-after": "1"}),
                       Completion(text="Here it is, after a second.", usage=Usage(40, 6)))
    answer = world.http("hello")
    assert answer.status_code == 200, answer.text
    assert answer.json()["reply"] == "Here it is, after a second."
    limited, answered = world.model.requests
    assert answered.at - limited.at >= 1.0
    assert world.stored()[-2:] == [("user", "hello"), ("assistant", "Here it is, after a second.")]
    (row,) = world.usage()
    assert row["agent_id"] == world.agent_id and row["calls"] == 1


# -- 3. a model that keeps failing ------------------------------------------------------------------------------
def _fails_three_times(world: World) -> None:
    world.model.script(*[Failure(503, message=f"upstream overloaded; key {API_KEY}")] * 3)


def _nothing_half_written(world: World) -> None:
    """Three tries, and the session holds the person's message and no answer of the agent."""
    assert len(world.model.requests) == 3
    assert world.stored() and all(role == "user" for role, _ in world.stored())
    assert world.usage() == []  # no call answered: nothing to count


def test_503_three_times_gets_the_telegram_person_the_note(world: World) -> None:
    _fails_three_times(world)
    sent = world.telegram("hello")
    assert world.shown() == [note(world.model)]
    assert len(sent) == 1  # one message, the note; nothing streamed before it
    _no_secret_no_stack(json.dumps(sent))
    _nothing_half_written(world)


def test_503_three_times_replaces_discords_thinking_with_the_note(world: World) -> None:
    _fails_three_times(world)
    ((method, url, body),) = world.discord("hello")
    assert method == "PATCH" and url.endswith("/messages/@original")
    assert body["content"] == note(world.model)
    _no_secret_no_stack(json.dumps(body))
    _nothing_half_written(world)


def test_503_three_times_is_a_502_model_error_over_http_plain_and_streamed(world: World) -> None:
    for stream in (False, True):
        _fails_three_times(world)
        answer = world.http("hello", stream=stream)
        assert answer.status_code == 502 and answer.headers["content-type"].startswith("application/json")
        assert answer.json()["error"]["code"] == "model_error"
        assert answer.json()["error"]["message"] == note(world.model)
        _no_secret_no_stack(answer.text)
    assert len(world.model.requests) == 6
    assert [role for role, _ in world.stored()] == ["user", "user"]


def test_a_stream_the_model_stops_ends_in_the_note_on_telegram_and_an_sse_error_event(world: World) -> None:
    """The model starts answering, then stops sending until the call's time is up: the partial message the
    Telegram chat saw becomes the note, the SSE stream ends with an ``error`` event, nothing is stored."""
    world.client.app.state.gateway.runtime.providers.policy = CallPolicy(timeout_seconds=0.7)  # type: ignore[attr-defined]
    timed_out = (f"The agent's model did not answer in time (the model at {world.model.url} did not answer within "
                 "0.7 s). Please try again in a minute; if it keeps failing, ask an admin to check the agent's "
                 "model settings (`agentfy agents model check support`).")
    world.model.script(*[Completion(text="half of an answer that never ends", piece_delay=0.3)] * 2)
    sent = world.telegram("hello")
    assert len(sent) >= 2 and sent[0]["text"] == "half "  # the first piece was shown ...
    assert world.shown() == [timed_out]  # ... and the same message now says why it stopped

    answer = world.http("hello", stream=True)
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/event-stream")
    events = events_of(answer.text)
    assert {name for name, _ in events[:-1]} == {"delta"} and events[0] == ("delta", {"text": "half "})
    name, body = events[-1]
    assert name == "error" and body["error"] == {"code": "model_error", "message": timed_out, "status": 504,
                                                 **{k: v for k, v in body["error"].items()
                                                    if k not in ("code", "message", "status")}}
    _no_secret_no_stack(answer.text)
    assert len(world.model.requests) == 2  # text was shown: not tried again (it would be shown twice)
    assert [role for role, _ in world.stored()] == ["user", "user"]


# -- 4. streamed pieces join to the final text -------------------------------------------------------------------
TEXT = "The launch moves to Friday."


def test_streamed_pieces_join_to_the_final_text_on_every_surface(world: World) -> None:
    # spaced on Telegram, where the edits follow the clock; as fast as the server sends them elsewhere
    world.model.script(Completion(text=TEXT, piece_delay=PIECE_DELAY, usage=Usage(30, 9)),
                       *[Completion(text=TEXT, usage=Usage(30, 9))] * 3)
    pieces = len(TEXT.split())

    # Telegram: sent with the first piece, edited as it grows (each edit a longer start of the reply: how many
    # depends on the pace, so the interval's tests count them), edited to the end
    texts = [body["text"] for body in world.telegram("when is the launch?")]
    assert texts[0] == "The " and texts[-1] == TEXT and world.shown() == [TEXT]
    assert all(TEXT.startswith(text) for text in texts) and texts == sorted(texts, key=len)

    # HTTP: server-sent deltas, then the reply
    events = events_of(world.http("when is the launch?", stream=True).text)
    deltas = [data["text"] for name, data in events if name == "delta"]
    assert len(deltas) == pieces and "".join(deltas) == TEXT
    assert events[-1][0] == "reply" and events[-1][1]["reply"] == TEXT

    # the WebSocket: the sender's agent.run.delta events, then the result
    with world.client.websocket_connect("/v1/ws", headers=world.person.headers) as ws:
        ws.send_json({"id": 1, "method": "subscribe"})
        assert ws.receive_json()["id"] == 1
        ws.send_json({"id": 2, "method": "agents.send", "params": {"agent": "support", "text": "when?"}})
        seen: list[dict[str, Any]] = []
        while (message := ws.receive_json()).get("id") != 2:
            seen.append(message)
    deltas = [m["run"]["text"] for m in seen if m.get("event") == "agent.run.delta"]
    assert len(deltas) == pieces and "".join(deltas) == message["result"]["reply"] == TEXT
    assert {m["agent"]["agent_key"] for m in seen} == {"support"}

    # the terminal (`agentfy chat`): the pieces printed as they come
    lines, printed = iter(["when is the launch?"]), []
    target = terminal.find_target(world.db, "support", "acme", create=False)
    root = world.client.app.state.gateway.runtime.workspace_root  # type: ignore[attr-defined]
    replies = asyncio.run(terminal.chat(world.db, target, workspace_root=root, conversation="default",
                                        read=lambda: next(lines, None), write=lambda _: None,
                                        write_piece=printed.append, providers=Providers(cipher=world.cipher)))
    assert replies == 1 and len(printed) >= pieces and "".join(printed).strip() == TEXT

    # -- 5. each call's usage row is the agent's ---------------------------------------------------------------
    (row,) = world.usage()
    assert (row["agent_id"], row["calls"], row["prompt_tokens"], row["completion_tokens"]) == (
        world.agent_id, 4, 120, 36)
