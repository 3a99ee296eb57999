"""The offline model's command syntax and answers; the OpenAI-compatible provider against a fake server."""

from __future__ import annotations

import asyncio
import json
import shlex

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentfy.runtime.model import ChatMessage, ModelError, ModelRequest, ModelResponse, ToolCall, ToolSpec
from agentfy.runtime.offline import OfflineProvider, ToolCommandError, answer, parse_tool_command
from agentfy.runtime.openai_compat import OpenAICompatibleProvider

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


def test_openai_compatible_request_and_tool_calls() -> None:
    seen: list[httpx.Request] = []

    def server(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"choices": [{"message": {"content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "write_file",
                                                          "arguments": '{"path": "a.txt", "content": 3}'}}]}}]})

    async def go() -> ModelResponse:
        async with httpx.AsyncClient(transport=httpx.MockTransport(server)) as client:
            provider = OpenAICompatibleProvider(base_url="https://llm.test/v1/", model="m", api_key="sk-secret",
                                                client=client)
            assert "sk-secret" not in repr(provider)
            return await provider.complete(ModelRequest("SYSTEM", [ChatMessage("user", "hi")],
                                                        [ToolSpec("write_file", "w", {"path": "p"}, ("path",))]))

    response = asyncio.run(go())
    assert response == ModelResponse(text=None, tool_calls=(ToolCall("c1", "write_file",
                                                                     {"path": "a.txt", "content": "3"}),))
    (request,) = seen
    assert str(request.url) == "https://llm.test/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-secret"
    body = json.loads(request.content)
    assert body["model"] == "m" and body["messages"][0] == {"role": "system", "content": "SYSTEM"}
    assert body["tools"][0]["function"]["parameters"]["required"] == ["path"]


@pytest.mark.parametrize(("status", "payload", "message"), [
    (401, {"error": {"message": "bad key sk-secret"}}, "answered HTTP 401"),
    (200, {"nope": True}, "not a chat completion"),
])
def test_openai_compatible_failures_name_the_server_never_the_key(status: int, payload: object,
                                                                   message: str) -> None:
    async def go() -> None:
        transport = httpx.MockTransport(lambda _: httpx.Response(status, json=payload))
        async with httpx.AsyncClient(transport=transport) as client:
            provider = OpenAICompatibleProvider(base_url="https://llm.test/v1", model="m", api_key="sk-secret",
                                                client=client)
            await provider.complete(ModelRequest("", [ChatMessage("user", "hi")]))

    with pytest.raises(ModelError, match=message) as raised:
        asyncio.run(go())
    assert "sk-secret" not in str(raised.value) and "https://llm.test/v1" in str(raised.value)
