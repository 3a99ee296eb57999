"""The Anthropic Messages provider on the official SDK against a real local server
(:mod:`tests.helpers.fake_anthropic`, shared by the module): the request's shape, streaming, usage, retries,
timeouts, failures; a whole run with a tool call replayed on the second turn (both engines); the model checked
from the command line."""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentfy.agents.prompt import CACHE_BOUNDARY_MARKER
from agentfy.agents.router import Router
from agentfy.cli import app
from agentfy.permissions.channels import telegram_context
from agentfy.runtime.anthropic_messages import PLACEHOLDER_KEY, AnthropicClients, AnthropicMessagesProvider
from agentfy.runtime.call_policy import CallPolicy
from agentfy.runtime.inbound import Reply
from agentfy.runtime.model import ChatMessage, ModelError, ModelRequest, ModelResponse, TextSink, ToolCall, Usage
from agentfy.runtime.providers import Providers
from agentfy.runtime.runner import Runtime
from agentfy.runtime.tools.records import SEARCH_MEMORY
from agentfy.store.db import Database
from agentfy.store.repos import credentials, telemetry
from agentfy.store.repos.credentials import CredentialCipher
from tests.helpers.fake_anthropic import Failure, FakeAnthropic, FakeToolCall, Message, Raw, StreamError, Tokens
from tests.helpers.local_server import Recorded
from tests.helpers.tenants import make_tenant
from tests.runtime.helpers import Sleeps, inbound, run

KEY = "sk-ant-secret-do-not-show"
PROMPT = f"You are bot.\n{CACHE_BOUNDARY_MARKER}\nIt is noon."
REQUEST = ModelRequest(PROMPT, [ChatMessage("user", "hi")], [SEARCH_MEMORY.spec])


@pytest.fixture(scope="module")
def server() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as fake:
        yield fake


@pytest.fixture
def fake(server: FakeAnthropic) -> FakeAnthropic:
    server.reset()
    return server


def _provider(fake: FakeAnthropic, *, sleep: Callable[[float], Awaitable[None]] | None = None,
              api_key: str | None = KEY, **policy: Any) -> AnthropicMessagesProvider:
    return AnthropicMessagesProvider(base_url=fake.url + "/", model="claude-test", max_tokens=512, api_key=api_key,
                                     policy=CallPolicy(**policy), **({"sleep": sleep} if sleep is not None else {}))


async def _complete(provider: AnthropicMessagesProvider, request: ModelRequest = REQUEST,
                    on_text: TextSink | None = None) -> ModelResponse:
    try:
        return await provider.complete(request, on_text=on_text)
    finally:
        await provider.aclose()


def _key(request: Recorded) -> str:
    """The API key a request carried (the SDK sends it as a bearer token)."""
    scheme, _, key = request.headers["authorization"].partition(" ")
    assert scheme == "Bearer"
    return key


class Pieces:
    def __init__(self) -> None:
        self.pieces: list[str] = []

    async def __call__(self, piece: str) -> None:
        self.pieces.append(piece)


# -- the request and the answer --------------------------------------------------------------------------------

def test_a_plain_call_sends_system_blocks_tools_and_max_tokens_and_reads_typed_tool_calls(
        fake: FakeAnthropic) -> None:
    fake.script(Message(tool_calls=[FakeToolCall("toolu_1", "search_memory", {"query": "a", "limit": 3})],
                        usage=Tokens(50, 3, cache_read=32, cache_creation=10)))
    provider = _provider(fake)
    assert KEY not in repr(provider)
    response = asyncio.run(_complete(provider))
    # The prompt counts every input token, cached or not; the cached part is what the cache served.
    assert response == ModelResponse(tool_calls=(ToolCall("toolu_1", "search_memory", {"query": "a", "limit": 3}),),
                                     usage=Usage(92, 3, 32))
    (request,) = fake.requests
    assert _key(request) == KEY
    assert request.headers["anthropic-version"]
    body = request.body
    assert body["model"] == "claude-test" and body["max_tokens"] == 512 and "stream" not in body
    # The stable prefix is a cacheable block of its own; the runtime section follows.
    assert body["system"] == [{"type": "text", "text": "You are bot.\n", "cache_control": {"type": "ephemeral"}},
                              {"type": "text", "text": "It is noon."}]
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    assert body["tools"] == [{"name": "search_memory", "description": SEARCH_MEMORY.spec.description,
                              "input_schema": SEARCH_MEMORY.spec.parameters}]


def test_the_history_becomes_alternating_messages_of_tool_use_and_tool_result_blocks(fake: FakeAnthropic) -> None:
    fake.script(Message(text="done"))
    first, second = (ToolCall("toolu_1", "search_memory", {"query": "a", "limit": 2}),
                     ToolCall("toolu_2", "read_file", {"path": "x.txt"}))
    history = [ChatMessage("system", "[compacted] earlier: they said hello"), ChatMessage("user", "hi"),
               ChatMessage("user", "are you there?"), ChatMessage("assistant", "", (first, second)),
               ChatMessage("tool", "nothing", tool_call_id="toolu_1"), ChatMessage("tool", "", tool_call_id="toolu_2"),
               ChatMessage("assistant", "Nothing found."), ChatMessage("user", "thanks")]
    assert asyncio.run(_complete(_provider(fake), ModelRequest("plain prompt", history))).text == "done"
    body = fake.requests[0].body
    assert body["system"] == [{"type": "text", "text": "plain prompt"},
                              {"type": "text", "text": "[compacted] earlier: they said hello"}]
    assert "tools" not in body
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "text", "text": "are you there?"}]},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "search_memory", "input": {"query": "a", "limit": 2}},
            {"type": "tool_use", "id": "toolu_2", "name": "read_file", "input": {"path": "x.txt"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "nothing"},
                                     {"type": "tool_result", "tool_use_id": "toolu_2"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Nothing found."}]},
        {"role": "user", "content": [{"type": "text", "text": "thanks"}]}]


def test_a_streamed_answer_sends_its_pieces_in_order_and_joins_them(fake: FakeAnthropic) -> None:
    fake.script(Message(text="Hello there, friend.", pieces=["Hel", "lo there", ", ", "friend."],
                        usage=Tokens(12, 4, cache_read=8)))
    sink = Pieces()
    response = asyncio.run(_complete(_provider(fake), on_text=sink))
    assert sink.pieces == ["Hel", "lo there", ", ", "friend."]
    # message_start's input counts, message_delta's output count
    assert response == ModelResponse(text="Hello there, friend.", usage=Usage(20, 4, 8))
    assert fake.requests[0].body["stream"] is True


def test_streamed_tool_calls_are_assembled_from_their_input_json_deltas(fake: FakeAnthropic) -> None:
    calls = [FakeToolCall("toolu_1", "search_memory", {"query": "launch plan", "limit": 4}),
             FakeToolCall("toolu_2", "write_file", {"path": "a.txt", "content": "x"})]
    fake.script(Message(text="Looking.", tool_calls=calls, usage=Tokens(20, 9)))
    sink = Pieces()
    response = asyncio.run(_complete(_provider(fake), on_text=sink))
    assert "".join(sink.pieces) == response.text == "Looking."
    assert response.tool_calls == (ToolCall("toolu_1", "search_memory", {"query": "launch plan", "limit": 4}),
                                   ToolCall("toolu_2", "write_file", {"path": "a.txt", "content": "x"}))
    assert response.usage == Usage(20, 9, None)
    fake.script(Message(text="Looking.", tool_calls=calls, usage=Tokens(20, 9)))
    assert asyncio.run(_complete(_provider(fake))) == response  # the same answer unstreamed


def test_stop_reasons_a_cut_tool_call_names_max_tokens_a_cut_text_is_kept_a_bare_refusal_says_so(
        fake: FakeAnthropic, caplog: pytest.LogCaptureFixture) -> None:
    fake.script(Message(tool_calls=[FakeToolCall("toolu_1", "search_memory", {"query": "q"})],
                        stop_reason="max_tokens"))
    with pytest.raises(ModelError, match=r"stopped \(max_tokens\) in the middle of a tool call; raise the "
                                         r"agent's max_tokens \(now 512\)"):
        asyncio.run(_complete(_provider(fake), on_text=Pieces()))
    fake.script(Message(text="The beginning of a long", stop_reason="max_tokens"))
    assert asyncio.run(_complete(_provider(fake))).text == "The beginning of a long"
    assert "runtime.model_answer_cut" in caplog.text
    fake.script(Message(stop_reason="refusal"))
    with pytest.raises(ModelError, match=r"declined to answer \(stop reason refusal\)"):
        asyncio.run(_complete(_provider(fake)))


def test_an_answer_that_is_not_a_message(fake: FakeAnthropic) -> None:
    fake.script(Raw({"nope": True}))
    with pytest.raises(ModelError, match="not a Messages API message"):
        asyncio.run(_complete(_provider(fake)))
    fake.script(Raw({"id": "m", "type": "message", "role": "assistant", "model": "m", "stop_reason": "tool_use",
                     "content": [{"type": "tool_use", "id": "t", "name": "x", "input": [1]}],
                     "usage": {"input_tokens": 1, "output_tokens": 1}}))
    with pytest.raises(ModelError, match="not a Messages API message"):
        asyncio.run(_complete(_provider(fake)))


# -- retries, timeouts, failures -------------------------------------------------------------------------------

def test_429_with_retry_after_is_waited_for_then_answered(fake: FakeAnthropic) -> None:
    fake.script(Failure(429, headers={"retry-after": "1"}), Message(text="ok"))
    started = time.monotonic()
    assert asyncio.run(_complete(_provider(fake))).text == "ok"
    first, second = fake.requests
    assert 0.9 <= second.at - first.at < 3.0 and time.monotonic() - started < 5.0


def test_overloaded_529_and_a_streams_overloaded_event_are_tried_again(fake: FakeAnthropic) -> None:
    sleeps = Sleeps()
    fake.script(Failure(529), StreamError(), Message(text="ok"))
    assert asyncio.run(_complete(_provider(fake, sleep=sleeps), on_text=Pieces())).text == "ok"
    assert len(fake.requests) == 3 and len(sleeps.waits) == 2


def test_503_every_time_fails_after_the_attempts_naming_the_status(fake: FakeAnthropic) -> None:
    fake.script(*[Failure(503)] * 3)
    sleeps = Sleeps()
    with pytest.raises(ModelError, match=r"answered HTTP 503") as raised:
        asyncio.run(_complete(_provider(fake, sleep=sleeps, attempts=3, backoff_seconds=0.5)))
    assert len(fake.requests) == 3 and not raised.value.timed_out
    assert str(raised.value) == f"the model at {fake.url} answered HTTP 503 (api_error)"
    first, second = sleeps.waits  # exponential backoff, less up to a quarter of jitter
    assert 0.375 <= first <= 0.5 and 0.75 <= second <= 1.0


def test_a_refused_credential_is_not_retried_and_never_shown(fake: FakeAnthropic,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    fake.script(Failure(401, message=f"invalid x-api-key: {KEY}"))
    provider = _provider(fake, sleep=Sleeps())
    with pytest.raises(ModelError, match=r"refused the credential \(HTTP 401\); check the agent's credential"
                       ) as raised:
        asyncio.run(_complete(provider))
    assert len(fake.requests) == 1
    fake.script(*[Failure(429, message=KEY)] * 3)
    with pytest.raises(ModelError, match=r"HTTP 429 \(rate limited\)") as limited:
        asyncio.run(_complete(_provider(fake, sleep=Sleeps())))
    for shown in (str(raised.value), str(limited.value), repr(provider), caplog.text):
        assert KEY not in shown
    assert "runtime.model_retry" in caplog.text


def test_a_wrong_model_name_says_what_to_check(fake: FakeAnthropic) -> None:
    fake.script(Failure(404, message="model: claude-nope"))
    with pytest.raises(ModelError, match=r"HTTP 404; check the agent's model name and base_url"):
        asyncio.run(_complete(_provider(fake)))
    assert len(fake.requests) == 1


def test_a_slow_answer_times_out_and_a_stalled_stream_is_tried_again(fake: FakeAnthropic) -> None:
    fake.script(Message(text="late", delay=3))
    started = time.monotonic()
    with pytest.raises(ModelError, match=r"did not answer within 0.3 s") as raised:
        asyncio.run(_complete(_provider(fake, attempts=1, timeout_seconds=0.3)))
    assert raised.value.timed_out and time.monotonic() - started < 2.0
    # message_start comes first and shows no text: a stream stalled before its text is tried again
    fake.script(Message(text="a b c", piece_delay=1), Message(text="fast"))
    response = asyncio.run(_complete(_provider(fake, attempts=2, timeout_seconds=0.5, sleep=Sleeps()),
                                     on_text=Pieces()))
    assert response.text == "fast"


def test_a_stream_that_showed_text_is_not_tried_again(fake: FakeAnthropic) -> None:
    fake.script(StreamError(pieces=["Half an "]), Message(text="again"))
    sink = Pieces()
    with pytest.raises(ModelError, match=r"failed in the middle of its answer \(overloaded_error\)"):
        asyncio.run(_complete(_provider(fake, sleep=Sleeps()), on_text=sink))
    assert sink.pieces == ["Half an "] and len(fake.requests) == 1


def test_a_cancelled_run_closes_the_request(fake: FakeAnthropic) -> None:
    fake.script(Message(text=" ".join(["word"] * 50), piece_delay=0.2))

    async def go() -> float:
        first = asyncio.Event()

        async def sink(piece: str) -> None:
            first.set()

        provider = _provider(fake)
        task = asyncio.create_task(provider.complete(REQUEST, on_text=sink))
        await asyncio.wait_for(first.wait(), 5)
        task.cancel()
        started = time.monotonic()
        with pytest.raises(asyncio.CancelledError):
            await task
        took = time.monotonic() - started
        await provider.aclose()
        return took

    assert asyncio.run(go()) < 1.0
    deadline = time.monotonic() + 5
    while fake.disconnects == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert fake.disconnects == 1


def test_without_a_credential_the_placeholder_is_sent_never_the_servers_environment(
        fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-the-servers-own")
    fake.script(Message(text="ok"))
    assert asyncio.run(_complete(_provider(fake, api_key=None))).text == "ok"
    assert _key(fake.requests[0]) == PLACEHOLDER_KEY


def test_providers_share_one_client_per_base_url_and_key_and_close_them(fake: FakeAnthropic) -> None:
    clients = AnthropicClients(2)
    providers = Providers(anthropic_clients=clients)
    assert "sk-" not in repr(clients)

    async def go() -> None:
        for key in ("sk-a", "sk-a", "sk-b"):
            fake.script(Message(text="ok"))
            provider = AnthropicMessagesProvider(base_url=fake.url, model="m", max_tokens=8, api_key=key,
                                                 clients=clients)
            assert (await provider.complete(REQUEST)).text == "ok"
        assert len(clients) == 2
        await providers.aclose()  # shutdown closes these with the openai SDK's
        assert len(clients) == 0

    asyncio.run(go())
    assert [_key(r) for r in fake.requests] == ["sk-a", "sk-a", "sk-b"]


# -- a whole run, and the model check --------------------------------------------------------------------------

def test_a_run_streams_a_tool_call_replays_it_with_its_result_and_records_usage(
        db: Database, tmp_path: Path, fake: FakeAnthropic) -> None:
    cipher = CredentialCipher(os.urandom(32))
    acme = make_tenant(db, "acme", agent_key="bot", config={"model": {
        "provider": "anthropic", "base_url": fake.url, "model": "claude-test", "credential": "llm",
        "max_tokens": 256}})
    with db.transaction() as tx:
        credentials.put_credential(tx, acme.scope, cipher, "llm", KEY.encode())
    fake.script(Message(text="Let me look.", tool_calls=[FakeToolCall("toolu_1", "search_memory",
                                                                     {"query": "launch", "limit": 2})],
                        usage=Tokens(100, 10, cache_read=64, cache_creation=0)),
                Message(text="Nothing about the launch yet.", usage=Tokens(30, 8, cache_read=100)))
    providers = Providers(cipher=cipher)
    runtime = Runtime(db, Router(db), workspace_root=tmp_path, providers=providers)
    sink = Pieces()

    async def go() -> Reply:
        try:
            return await runtime(inbound(acme, telegram_context(555, 1001, is_group=False, tenant_id=acme.id),
                                         "what about the launch?"), on_text=sink)
        finally:
            await providers.aclose()

    reply = run(go())
    assert reply.text == "Let me look.\n\nNothing about the launch yet." == "".join(sink.pieces)
    assert sink.pieces[:3] == ["Let ", "me ", "look."]  # streamed as the model wrote it
    assert reply.usage == Usage(294, 18, 164)
    first, second = fake.requests
    assert _key(first) == KEY and first.body["stream"] is True and first.body["max_tokens"] == 256
    assert first.body["system"][0]["cache_control"] == {"type": "ephemeral"}
    user, called, answered = second.body["messages"]
    assert user == {"role": "user", "content": [{"type": "text", "text": "what about the launch?"}]}
    assert called == {"role": "assistant", "content": [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_1", "name": "search_memory", "input": {"query": "launch", "limit": 2}}]}
    assert answered == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "no memory matches 'launch'"}]}
    assert acme.bot is not None
    with db.transaction(write=False) as tx:
        [row] = telemetry.usage_by_agent_day(tx, acme.scope)
    assert (row.agent_id, row.model, row.calls, row.input_tokens, row.output_tokens, row.cached_tokens) == (
        acme.bot.id, "claude-test", 2, 294, 18, 164)
    assert runtime.tokens.snapshot()[("anthropic", "prompt")] == 294
    runtime.close()


def test_the_command_line_sets_shows_and_checks_an_anthropic_model(
        db: Database, db_url: str, fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTFY_CREDENTIALS_KEY", base64.b64encode(b"c" * 32).decode())
    make_tenant(db, "acme", agent_key="bot")
    cli = CliRunner()
    where = ["--org", "acme", "--database-url", db_url]
    assert cli.invoke(app, ["credentials", "set", "anthropic", *where], input=KEY).exit_code == 0
    model = ["agents", "model", "set", "bot", "--provider", "anthropic", "--model", "claude-test",
             "--credential", "anthropic", *where]
    defaults = cli.invoke(app, model)
    assert defaults.exit_code == 0, defaults.output
    assert "https://api.anthropic.com" in defaults.output and "4096" in defaults.output
    refused = cli.invoke(app, [*model, "--max-tokens", "0"])
    assert refused.exit_code == 2 and "max_tokens 0 must be an integer from 1" in " ".join(refused.output.split())
    set_ = cli.invoke(app, [*model, "--base-url", fake.url, "--max-tokens", "64"])
    assert set_.exit_code == 0, set_.output
    fake.script(Message(text="ok", usage=Tokens(5, 1)))
    checked = cli.invoke(app, ["agents", "model", "check", "bot", *where])
    assert checked.exit_code == 0, checked.output
    assert "ok: claude-test answered" in checked.output
    (request,) = fake.requests
    assert _key(request) == KEY and request.body["max_tokens"] == 64
    assert "system" not in request.body  # a check sends no system prompt (the API refuses an empty block)
    fake.script(Failure(401, message=KEY))
    failed = cli.invoke(app, ["agents", "model", "check", "bot", *where])
    assert failed.exit_code == 1 and "refused the credential" in failed.output
    assert KEY not in checked.output + failed.output
