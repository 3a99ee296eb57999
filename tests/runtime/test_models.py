"""The offline model's command syntax and answers; typed tool arguments; the OpenAI-compatible provider on
the official SDK against a real local server (:mod:`tests.helpers.fake_openai`)."""

from __future__ import annotations

import asyncio
import json
import logging
import shlex
import socket
import time
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any, cast

import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentfy.runtime.model import (
    ChatMessage,
    ModelError,
    ModelRequest,
    ModelResponse,
    TextSink,
    ToolCall,
    Usage,
    coerce_arguments,
    estimate_usage,
)
from agentfy.runtime.offline import OfflineProvider, ToolCommandError, answer, parse_tool_command
from agentfy.runtime.openai_compat import (
    PLACEHOLDER_KEY,
    CallPolicy,
    OpenAIClients,
    OpenAICompatibleProvider,
    make_client,
    request_json,
    retry_after,
)
from agentfy.runtime.toolbox import TOOLS, run_tool
from agentfy.runtime.tools import ToolEnv
from agentfy.runtime.tools.records import SEARCH_MEMORY
from tests.helpers.fake_openai import Completion, Failure, FakeOpenAI, FakeToolCall, Raw
from tests.runtime.helpers import Sleeps

KEYS = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True)
VALUES = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=30)


@given(name=KEYS, arguments=st.dictionaries(KEYS, VALUES, max_size=4))
def test_a_quoted_command_parses_back_to_its_name_and_arguments(name: str, arguments: dict[str, str]) -> None:
    text = "/tool " + " ".join([name, *(f"{k}={shlex.quote(v)}" for k, v in arguments.items())])
    assert parse_tool_command(text) == (name, arguments)


@pytest.mark.parametrize(("text", "message"), [
    ("/tool", "names no tool"),
    ("/tool Write", "not a tool name"),
    ("/tool write_file path", "not key=value"),
    ("/tool write_file Path=x", "not key=value"),
    ("/tool write_file path=a path=b", "given twice"),
    ('/tool write_file content="unterminated', "cannot split"),
    ("hello", "not a tool command"),
])
def test_a_bad_command_says_what_is_wrong_and_the_expected_form(text: str, message: str) -> None:
    with pytest.raises(ToolCommandError, match=message) as raised:
        parse_tool_command(text)
    assert "/tool NAME" in str(raised.value) or "given twice" in message


def test_offline_answers() -> None:
    def ask(*messages: ChatMessage) -> ModelResponse:
        return answer(ModelRequest("", list(messages), agent_key="bot"))

    assert ask(ChatMessage("user", "hi")) == ModelResponse(text="@bot heard: hi")
    call = ask(ChatMessage("user", "/tool read_file path=a.txt")).tool_calls[0]
    assert (call.name, dict(call.arguments)) == ("read_file", {"path": "a.txt"})
    assert "not key=value" in (ask(ChatMessage("user", "/tool read_file a.txt")).text or "")
    after = ask(ChatMessage("user", "/tool read_file path=a.txt"), ChatMessage("assistant", "", (call,)),
                ChatMessage("tool", "contents", tool_call_id=call.id))
    assert after == ModelResponse(text="read_file: contents")
    scripted = OfflineProvider([ModelResponse(text="scripted")])
    assert asyncio.run(scripted.complete(ModelRequest("", []))).text == "scripted"
    assert asyncio.run(scripted.complete(ModelRequest("", [], agent_key="bot"))).text == "@bot is listening."


# -- typed tool arguments ------------------------------------------------------------------------------------

def test_offline_tool_commands_are_typed_by_the_tools_schema() -> None:
    specs = [SEARCH_MEMORY.spec]

    def call(text: str) -> ToolCall:
        return answer(ModelRequest("", [ChatMessage("user", text)], specs)).tool_calls[0]

    assert dict(call("/tool search_memory query=launch limit=3").arguments) == {"query": "launch", "limit": 3}
    assert dict(call("/tool search_memory query=7").arguments) == {"query": "7"}  # a string parameter stays one
    assert dict(call("/tool search_memory query=x limit=many").arguments) == {"query": "x", "limit": "many"}
    schema = {"properties": {"n": {"type": "integer"}, "on": {"type": "boolean"}, "x": {"type": "number"},
                             "tags": {"type": "array", "items": {"type": "integer"}}}}
    assert coerce_arguments(schema, {"n": "-4", "on": "yes", "x": "1.5", "tags": "1, 2", "other": "5"}) == {
        "n": -4, "on": True, "x": 1.5, "tags": [1, 2], "other": "5"}
    assert coerce_arguments(schema, {"tags": '["a"]', "on": "maybe"}) == {"tags": ["a"], "on": "maybe"}


@pytest.mark.parametrize(("arguments", "message"), [
    ({"query": 3}, "search_memory: argument 'query' must be a string, got 3"),
    ({"query": "x", "limit": "many"}, "search_memory: argument 'limit' must be an integer, got 'many'"),
    ({"query": "x", "limit": True}, "argument 'limit' must be an integer, got True"),
    ({"query": "x", "limit": 99}, "argument 'limit' must be between 1 and 20, got 99"),
    ({"query": ""}, "argument 'query' must be a non-empty string"),
    ({"limit": 2}, "search_memory needs the argument 'query'"),
    ({"query": "x", "lmit": 2}, "unknown argument 'lmit'"),
])
def test_a_wrongly_typed_call_is_the_tools_answer_not_a_crash(arguments: dict[str, object], message: str) -> None:
    env = cast(ToolEnv, object())  # the call is refused before the tool (which would need an environment) runs
    result = asyncio.run(run_tool(env, ToolCall("c1", "search_memory", arguments)))
    assert result.startswith("error: ") and message in result


def test_every_tool_declares_a_json_schema_object() -> None:
    for tool in TOOLS.values():
        schema = tool.spec.parameters
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert set(schema["required"]) <= set(schema["properties"])
        assert all(p["type"] in {"string", "integer"} and p["description"] for p in schema["properties"].values())
    assert TOOLS["search_memory"].spec.parameters["properties"]["limit"]["type"] == "integer"


def test_estimated_usage_counts_schemas_and_typed_arguments() -> None:
    request = ModelRequest("", [ChatMessage("user", "hi")], [SEARCH_MEMORY.spec])
    response = ModelResponse(tool_calls=(ToolCall("c", "search_memory", {"query": "x", "limit": 3}),))
    estimate = estimate_usage(request, response)
    assert estimate.prompt_tokens > len(json.dumps(SEARCH_MEMORY.spec.parameters)) // 4
    assert estimate.completion_tokens == (len("search_memory") + len('{"query": "x", "limit": 3}') + 3) // 4
    spec = SEARCH_MEMORY.spec  # the tool's size is counted once, when it is defined, and is what it says
    assert spec.prompt_chars == len(spec.name) + len(spec.description) + len(
        json.dumps(spec.parameters, ensure_ascii=False))


# -- the OpenAI-compatible provider against a local fake server -----------------------------------------------

KEY = "sk-secret-do-not-show"
REQUEST = ModelRequest("SYSTEM", [ChatMessage("user", "hi")], [SEARCH_MEMORY.spec])


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def _provider(fake: FakeOpenAI, *, sleep: Callable[[float], Awaitable[None]] | None = None,
              **policy: Any) -> OpenAICompatibleProvider:
    return OpenAICompatibleProvider(base_url=fake.url + "/", model="m", api_key=KEY, policy=CallPolicy(**policy),
                                    **({"sleep": sleep} if sleep is not None else {}))


async def _complete(provider: OpenAICompatibleProvider, request: ModelRequest = REQUEST,
                    on_text: TextSink | None = None) -> ModelResponse:
    try:
        return await provider.complete(request, on_text=on_text)
    finally:
        await provider.aclose()


def test_a_plain_call_sends_the_history_and_schemas_and_reads_typed_tool_calls(fake: FakeOpenAI) -> None:
    fake.script(Completion(tool_calls=[FakeToolCall("c1", "search_memory", {"query": "a", "limit": 3})],
                           usage=Usage(50, 3, 32)))
    provider = _provider(fake)
    assert KEY not in repr(provider)
    response = asyncio.run(_complete(provider))
    assert response == ModelResponse(text=None, tool_calls=(ToolCall("c1", "search_memory",
                                                                     {"query": "a", "limit": 3}),),
                                     usage=Usage(50, 3, 32))
    (request,) = fake.requests
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["content-type"] == "application/json"
    body = request.body
    assert body["model"] == "m" and "stream" not in body
    assert body["messages"] == [{"role": "system", "content": "SYSTEM"}, {"role": "user", "content": "hi"}]
    assert body["tools"][0]["function"]["parameters"] == SEARCH_MEMORY.spec.parameters


@given(system=st.text(), texts=st.lists(st.text(), max_size=4), stream=st.booleans(),
       tools=st.lists(st.sampled_from(sorted(TOOLS)), max_size=4))
def test_the_request_is_the_json_of_its_parts_whatever_the_text(system: str, texts: list[str], stream: bool,
                                                                tools: list[str]) -> None:
    """The body is encoded by hand (each tool's JSON once, spliced in): it must parse back to exactly the
    object the API defines, for any text (quotes, braces, control characters, any script)."""
    specs = [TOOLS[name].spec for name in tools]
    request = ModelRequest(system, [ChatMessage("user", text) for text in texts], specs)
    sent = json.loads(request_json("m", request, stream=stream))
    expected: dict[str, Any] = {"model": "m", "messages": [{"role": "system", "content": system},
                                                           *({"role": "user", "content": t} for t in texts)]}
    if stream:
        expected |= {"stream": True, "stream_options": {"include_usage": True}}
    if specs:
        expected["tools"] = [{"type": "function", "function": {"name": spec.name, "description": spec.description,
                                                               "parameters": spec.parameters}} for spec in specs]
    assert sent == expected


def test_a_history_with_typed_tool_calls_is_sent_as_json_arguments(fake: FakeOpenAI) -> None:
    fake.script(Completion(text="done"))
    call = ToolCall("c1", "search_memory", {"query": "a", "limit": 2})
    history = [ChatMessage("user", "hi"), ChatMessage("assistant", "", (call,)),
               ChatMessage("tool", "nothing", tool_call_id="c1")]
    assert asyncio.run(_complete(_provider(fake), ModelRequest("S", history))).text == "done"
    sent = fake.requests[0].body["messages"]
    assert json.loads(sent[2]["tool_calls"][0]["function"]["arguments"]) == {"query": "a", "limit": 2}
    assert sent[3] == {"role": "tool", "content": "nothing", "tool_call_id": "c1"}


def test_a_streamed_answer_sends_its_pieces_in_order_and_joins_them(fake: FakeOpenAI) -> None:
    fake.script(Completion(text="Hello there, friend.", pieces=["Hel", "lo there", ", ", "friend."],
                           usage=Usage(12, 4, cached_tokens=8)))
    pieces: list[str] = []

    async def sink(piece: str) -> None:
        pieces.append(piece)

    response = asyncio.run(_complete(_provider(fake), on_text=sink))
    assert pieces == ["Hel", "lo there", ", ", "friend."]
    assert response == ModelResponse(text="Hello there, friend.", usage=Usage(12, 4, 8))
    body = fake.requests[0].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


def test_streamed_tool_calls_are_assembled_from_their_fragments(fake: FakeOpenAI) -> None:
    calls = [FakeToolCall("c1", "search_memory", {"query": "launch plan", "limit": 4}),
             FakeToolCall("c2", "write_file", {"path": "a.txt", "content": "x"})]
    fake.script(Completion(text="Looking.", tool_calls=calls, usage=Usage(20, 9)))
    pieces: list[str] = []

    async def sink(piece: str) -> None:
        pieces.append(piece)

    response = asyncio.run(_complete(_provider(fake), on_text=sink))
    assert "".join(pieces) == response.text == "Looking."
    assert response.tool_calls == (ToolCall("c1", "search_memory", {"query": "launch plan", "limit": 4}),
                                   ToolCall("c2", "write_file", {"path": "a.txt", "content": "x"}))
    assert response.usage == Usage(20, 9, None)
    # the same answer unstreamed is the same response
    fake.script(Completion(text="Looking.", tool_calls=calls, usage=Usage(20, 9)))
    assert asyncio.run(_complete(_provider(fake))) == response


def test_429_with_retry_after_is_waited_for_then_answered(fake: FakeOpenAI) -> None:
    fake.script(Failure(429, headers={"retry-after": "1"}), Completion(text="ok"))
    started = time.monotonic()
    assert asyncio.run(_complete(_provider(fake))).text == "ok"
    first, second = fake.requests
    assert 0.9 <= second.at - first.at < 3.0 and time.monotonic() - started < 5.0


def test_a_long_retry_after_is_capped_and_an_http_date_is_read(fake: FakeOpenAI) -> None:
    fake.script(Failure(429, headers={"retry-after": "3600"}),
                Failure(503, headers={"retry-after": format_datetime(datetime.now(UTC) + timedelta(seconds=30),
                                                                     usegmt=True)}),
                Completion(text="ok"))
    sleeps = Sleeps()
    assert asyncio.run(_complete(_provider(fake, sleep=sleeps, retry_after_max_seconds=60))).text == "ok"
    assert sleeps.waits[0] == 60 and 25 <= sleeps.waits[1] <= 30
    assert retry_after({"retry-after-ms": "1500"}) == 1.5
    assert retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, now=1445412470.0) == 10.0
    assert retry_after({"retry-after": "soon"}) is None and retry_after({}) is None
    assert retry_after({"retry-after": "-5"}) == 0.0


def test_503_every_time_fails_after_the_attempts_naming_the_status(fake: FakeOpenAI) -> None:
    fake.script(*[Failure(503)] * 3)
    sleeps = Sleeps()
    with pytest.raises(ModelError, match=r"answered HTTP 503") as raised:
        asyncio.run(_complete(_provider(fake, sleep=sleeps, attempts=3, backoff_seconds=0.5)))
    assert len(fake.requests) == 3 and not raised.value.timed_out
    assert fake.url in str(raised.value)
    first, second = sleeps.waits  # exponential backoff, less up to a quarter of jitter
    assert 0.375 <= first <= 0.5 and 0.75 <= second <= 1.0


def test_a_refused_credential_is_not_retried_and_never_shown(fake: FakeOpenAI,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    fake.script(Failure(401, message=f"Incorrect API key provided: {KEY}"))
    provider = _provider(fake, sleep=Sleeps())
    with pytest.raises(ModelError, match="refused the credential") as raised:
        asyncio.run(_complete(provider))
    assert len(fake.requests) == 1
    fake.script(Failure(429, message=KEY), Failure(429, message=KEY), Failure(429, message=KEY))
    with pytest.raises(ModelError, match="HTTP 429") as limited:
        asyncio.run(_complete(_provider(fake, sleep=Sleeps())))
    for shown in (str(raised.value), str(limited.value), repr(provider), caplog.text):
        assert KEY not in shown
    assert "runtime.model_retry" in caplog.text


def test_a_slow_answer_times_out(fake: FakeOpenAI) -> None:
    fake.script(Completion(text="late", delay=3))
    started = time.monotonic()
    with pytest.raises(ModelError, match=r"did not answer within 0.3 s") as raised:
        asyncio.run(_complete(_provider(fake, attempts=1, timeout_seconds=0.3)))
    assert raised.value.timed_out and time.monotonic() - started < 2.0
    # a stream that stalls is bounded the same way; a timed-out try is tried again
    fake.script(Completion(text="a b c d e f", piece_delay=1), Completion(text="fast"))

    async def sink(piece: str) -> None:
        pass

    response = asyncio.run(_complete(_provider(fake, attempts=2, timeout_seconds=0.5, sleep=Sleeps()),
                                     on_text=sink))
    assert response.text == "fast"


def test_a_stream_that_showed_text_is_not_tried_again(fake: FakeOpenAI) -> None:
    fake.script(Completion(text="one two three four", piece_delay=0.4), Completion(text="again"))
    pieces: list[str] = []

    async def sink(piece: str) -> None:
        pieces.append(piece)

    with pytest.raises(ModelError, match="did not answer within") as raised:
        asyncio.run(_complete(_provider(fake, attempts=3, timeout_seconds=0.6, sleep=Sleeps()), on_text=sink))
    assert raised.value.timed_out and pieces and len(fake.requests) == 1


def test_an_unreachable_server_names_the_transport_error() -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    provider = OpenAICompatibleProvider(base_url=f"http://127.0.0.1:{port}/v1", model="m", api_key=KEY,
                                        policy=CallPolicy(attempts=2), sleep=Sleeps())
    with pytest.raises(ModelError, match=r"is unreachable \(ConnectError\)") as raised:
        asyncio.run(_complete(provider))
    assert KEY not in str(raised.value) and f"127.0.0.1:{port}" in str(raised.value)


def test_an_answer_that_is_not_a_chat_completion(fake: FakeOpenAI) -> None:
    fake.script(Raw({"nope": True}))
    with pytest.raises(ModelError, match="not a chat completion"):
        asyncio.run(_complete(_provider(fake)))
    fake.script(Raw({"choices": [{"message": {"content": None, "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "x", "arguments": "[1]"}}]}}]}))
    with pytest.raises(ModelError, match="not a chat completion"):
        asyncio.run(_complete(_provider(fake)))


def test_a_cancelled_run_closes_the_request(fake: FakeOpenAI) -> None:
    fake.script(Completion(text=" ".join(["word"] * 50), piece_delay=0.2))

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


# -- the shared SDK clients ------------------------------------------------------------------------------------

def test_providers_share_one_client_per_base_url_and_key_bounded_and_closed(fake: FakeOpenAI) -> None:
    made: list[tuple[str, str | None, openai.AsyncOpenAI]] = []

    def factory(base_url: str, api_key: str | None) -> openai.AsyncOpenAI:
        client = make_client(base_url, api_key)
        made.append((base_url, api_key, client))
        return client

    clients = OpenAIClients(2, factory=factory)
    assert "sk-" not in repr(clients)

    async def go() -> None:
        for key in ("sk-a", "sk-a", "sk-b", "sk-a", "sk-c"):
            fake.script(Completion(text="ok"))
            provider = OpenAICompatibleProvider(base_url=fake.url, model="m", api_key=key, clients=clients)
            assert (await provider.complete(REQUEST)).text == "ok"
        assert [key for _, key, _ in made] == ["sk-a", "sk-b", "sk-c"] and len(clients) == 2
        assert made[1][2].is_closed() and not made[0][2].is_closed()  # sk-b was least recently used
        await clients.aclose()
        assert all(client.is_closed() for _, _, client in made) and len(clients) == 0

    asyncio.run(go())
    assert [r.headers["authorization"] for r in fake.requests] == [f"Bearer sk-{k}" for k in "aabac"]


def test_an_agent_without_a_credential_sends_the_placeholder(fake: FakeOpenAI) -> None:
    fake.script(Completion(text="ok"))
    provider = OpenAICompatibleProvider(base_url=fake.url, model="m", api_key=None)
    assert asyncio.run(_complete(provider)).text == "ok"
    assert fake.requests[0].headers["authorization"] == f"Bearer {PLACEHOLDER_KEY}"


def test_the_call_policy_refuses_unusable_values() -> None:
    with pytest.raises(ValueError, match="attempts 0 must be an integer from 1 to 20"):
        CallPolicy(attempts=0)
    with pytest.raises(ValueError, match="timeout_seconds 0 must be"):
        CallPolicy(timeout_seconds=0)
    with pytest.raises(ValueError, match="size 0 must be at least 1"):
        OpenAIClients(0)
