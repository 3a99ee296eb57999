"""The offline model: deterministic, no network, the embedded default.

Everything works without a model account: a fresh install answers, tests are exact, and a benchmark
measures the platform rather than a provider.  What it answers, in this order:

1. the next :class:`~agentfy.runtime.model.ModelResponse` of its ``script`` (tests queue exact turns);
2. after tool results: one line per result, ``<tool>: <result>``;
3. a user message that is a tool command calls that tool::

       /tool NAME [key=value ...]

   Values follow shell quoting (``content="two words"``, ``path='a b.txt'``); a key may appear once.  The
   text says only strings, so each value is converted to the type the tool's schema declares
   (:func:`~agentfy.runtime.model.coerce_arguments`: ``limit=3`` is the integer 3 for an integer parameter);
   one that does not convert stays a string and the tool answers that it has the wrong type.
   ``/tool write_file path=notes.txt content=hi`` writes ``notes.txt``.
   A malformed command is answered with what is wrong and the expected form; no tool runs;
4. anything else is echoed: ``@<agent_key> heard: <text>``.

Every answer carries usage: the answer's own ``usage`` when a scripted one has it, else an estimate at four
characters per token (:func:`~agentfy.runtime.model.estimate_usage`), so usage is recorded and summed the same
way as with a real model; it reports no cached tokens.
"""

from __future__ import annotations

import re
import shlex
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Final

from agentfy.runtime.model import (
    ChatMessage,
    ModelRequest,
    ModelResponse,
    TextSink,
    ToolCall,
    coerce_arguments,
    estimate_usage,
)

TOOL_COMMAND: Final = "/tool"
TOOL_SYNTAX: Final = "/tool NAME [key=value ...] (values may be quoted: content=\"two words\")"
_NAME: Final = re.compile(r"[a-z][a-z0-9_]{0,63}")
_KEY: Final = re.compile(r"[a-z][a-z0-9_]{0,63}")


class ToolCommandError(ValueError):
    """A ``/tool`` command that cannot be parsed; the message names the bad part and the expected form."""


def is_tool_command(text: str) -> bool:
    """Whether ``text`` is meant as a tool command (``/tool`` then a space, or ``/tool`` alone)."""
    stripped = text.strip()
    return stripped == TOOL_COMMAND or stripped.startswith(TOOL_COMMAND + " ")


def parse_tool_command(text: str) -> tuple[str, dict[str, str]]:
    """``(name, arguments)`` of a ``/tool NAME key=value …`` command, or :class:`ToolCommandError`."""
    if not is_tool_command(text):
        raise ToolCommandError(f"{text[:80]!r} is not a tool command; expected {TOOL_SYNTAX}")
    try:
        tokens = shlex.split(text.strip()[len(TOOL_COMMAND):], posix=True)
    except ValueError as error:  # an unterminated quote, a trailing escape
        raise ToolCommandError(f"cannot split the tool command ({error}); expected {TOOL_SYNTAX}") from None
    if not tokens:
        raise ToolCommandError(f"the tool command names no tool; expected {TOOL_SYNTAX}")
    name, *pairs = tokens
    if not _NAME.fullmatch(name):
        raise ToolCommandError(f"tool name {name[:80]!r} is not a tool name (lower-case letters, digits and _, "
                               f"starting with a letter); expected {TOOL_SYNTAX}")
    arguments: dict[str, str] = {}
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not equals or not _KEY.fullmatch(key):
            raise ToolCommandError(f"argument {pair[:80]!r} of tool {name} is not key=value (a lower-case key, "
                                   f"then =, then the value); expected {TOOL_SYNTAX}")
        if key in arguments:
            raise ToolCommandError(f"argument {key!r} of tool {name} is given twice; give each key once")
        arguments[key] = value
    return name, arguments


class OfflineProvider:
    """The deterministic model (see the module docstring).  ``script``: responses returned first, in order."""

    def __init__(self, script: Iterable[ModelResponse] = ()) -> None:
        self.script: deque[ModelResponse] = deque(script)
        self.requests: list[ModelRequest] = []  # what it was asked, for tests and debugging
        self.keep_requests = False

    async def complete(self, request: ModelRequest, *, on_text: TextSink | None = None) -> ModelResponse:
        if self.keep_requests:
            self.requests.append(request)
        response = self.script.popleft() if self.script else answer(request)
        if response.usage is None:  # it has no tokenizer: an honest estimate (model.estimate_usage)
            response = replace(response, usage=estimate_usage(request, response))
        if on_text is not None and response.text:
            for piece in stream_pieces(response.text):
                await on_text(piece)
        return response


def stream_pieces(text: str) -> list[str]:
    """``text`` as a stream would bring it: word by word, each piece keeping the white space before the next
    word, so the pieces join back to ``text`` exactly."""
    return re.findall(r"\s*\S+\s*|\s+", text) if text else []


def answer(request: ModelRequest) -> ModelResponse:
    """The offline answer to ``request`` (rules 2 to 4 of the module docstring)."""
    messages = request.messages
    if not messages:
        return ModelResponse(text=f"@{request.agent_key} is listening.")
    last = messages[-1]
    if last.role == "tool":
        return ModelResponse(text="\n".join(f"{_tool_name(messages, m)}: {m.content}"
                                            for m in _trailing_tool_results(messages)))
    if last.role == "user" and is_tool_command(last.content):
        try:
            name, arguments = parse_tool_command(last.content)
        except ToolCommandError as error:
            return ModelResponse(text=str(error))
        spec = next((tool for tool in request.tools if tool.name == name), None)
        typed = coerce_arguments(spec.parameters, arguments) if spec is not None else dict(arguments)
        return ModelResponse(tool_calls=(ToolCall(f"offline-{len(messages)}", name, typed),))
    return ModelResponse(text=f"@{request.agent_key} heard: {last.content}")


def _trailing_tool_results(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    results: list[ChatMessage] = []
    for message in reversed(messages):
        if message.role != "tool":
            break
        results.append(message)
    return results[::-1]


def _tool_name(messages: Sequence[ChatMessage], result: ChatMessage) -> str:
    for message in messages:
        for call in message.tool_calls:
            if call.id == result.tool_call_id:
                return call.name
    return "tool"
