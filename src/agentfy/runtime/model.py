"""What the runtime says to a model and what comes back: one shape for every provider.

The runtime never speaks a provider's wire format; a provider (:class:`ModelProvider`) translates a
:class:`ModelRequest` into its own API and its answer back into a :class:`ModelResponse`.  That keeps the loop
(:mod:`agentfy.runtime.runner`) testable with the offline provider and lets an agent switch providers by
configuration only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Protocol

Role = Literal["system", "user", "assistant", "tool"]

#: Characters per token used to estimate the size of a history (no tokenizer is needed for a threshold).
CHARS_PER_TOKEN: Final = 4


@dataclass(frozen=True, slots=True)
class ToolCall:
    """The model asks for one tool run: ``id`` pairs the call with its result message.  ``arguments``: the
    model's JSON object as JSON values (strings, numbers, booleans, lists, objects), not yet checked against
    the tool's schema (the toolbox does that before the tool runs)."""

    id: str
    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One message of the conversation as the model sees it.

    ``tool_calls`` only on an assistant message that asked for tools; ``tool_call_id`` only on the tool
    message answering one of them.
    """

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as the model is told about it.  ``parameters`` is a JSON schema of an object, sent to the model
    as is: ``{"type": "object", "properties": {name: {"type": "string" | "integer" | "boolean" | "array" …,
    "description": …}}, "required": [...], "additionalProperties": False}`` (see
    :func:`agentfy.runtime.tools.parameters`).

    ``prompt_chars`` is what the tool adds to a prompt's size (its name, its description, its schema as JSON
    text), counted once here: a tool is defined once and offered on every call, and serialising its schema for
    each estimate cost more than the rest of the offline model's answer."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    prompt_chars: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "prompt_chars", len(self.name) + len(self.description)
                           + _json_length(self.parameters))


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One call to the model: the system prompt (with its cache boundary), the history, the tools."""

    system_prompt: str
    messages: Sequence[ChatMessage]
    tools: Sequence[ToolSpec] = ()
    agent_key: str = ""


@dataclass(frozen=True, slots=True)
class Usage:
    """The tokens of one model call, as the provider counted them.  ``cached_tokens``: the part of the prompt
    served from the provider's cache, ``None`` when the provider does not report it (unknown is not zero)."""

    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class ModelResponse:
    """The model's answer: text, tool calls, or both (tools run first, then the model is asked again).
    ``usage``: the call's tokens, ``None`` when the provider reported none (the call is then not recorded)."""

    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = field(default=())
    usage: Usage | None = None


class ModelError(RuntimeError):
    """The model could not answer (unreachable, refused the credential, malformed answer).  Its message is
    shown to the person, so it never carries a secret.  ``timed_out``: the model did not answer in time (the
    API's 504, where every other model failure is a 502)."""

    def __init__(self, message: str, *, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


#: Where a streaming provider sends the answer's text as it arrives: each call one piece, in order, and their
#: concatenation is the response's ``text``.  Awaited, so a slow consumer slows the stream and never loses a
#: piece.  A provider that cannot stream calls it once with the whole text (or not at all when there is none).
TextSink = Callable[[str], Awaitable[None]]


class ModelProvider(Protocol):
    """A chat model behind one method: ``complete`` returns the whole answer and, when ``on_text`` is given,
    streams its text there first."""

    async def complete(self, request: ModelRequest, *, on_text: TextSink | None = None) -> ModelResponse: ...


def estimate_tokens(system_prompt: str, messages: Sequence[ChatMessage]) -> int:
    """A cheap upper-bound-ish estimate of the prompt's size, for deciding when to compact."""
    return (len(system_prompt) + sum(len(m.content) for m in messages)) // CHARS_PER_TOKEN + 1


_INTEGER: Final = re.compile(r"[+-]?[0-9]{1,18}")
_BOOLEANS: Final = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}


def _coerced(schema: Any, text: str) -> Any:
    kind = schema.get("type") if isinstance(schema, Mapping) else None
    if kind == "integer" and _INTEGER.fullmatch(text.strip()):
        return int(text)
    if kind == "number":
        try:
            return int(text) if _INTEGER.fullmatch(text.strip()) else float(text)
        except ValueError:
            return text
    if kind == "boolean" and text.strip().lower() in _BOOLEANS:
        return _BOOLEANS[text.strip().lower()]
    if kind == "array":
        if text.lstrip().startswith("["):
            try:
                return json.loads(text)
            except ValueError:
                return text
        items = schema.get("items")
        return [_coerced(items, part.strip()) for part in text.split(",")] if text.strip() else []
    return text


def coerce_arguments(parameters: Mapping[str, Any], arguments: Mapping[str, str]) -> dict[str, Any]:
    """String arguments (what a text command can say) as the types ``parameters`` (a tool's JSON schema)
    declares: ``"integer"`` ``"42"`` -> 42, ``"number"``, ``"boolean"`` ``true/false/yes/no/1/0``, ``"array"``
    a JSON list or comma-separated items (each coerced by ``items``).  A value that does not convert, or an
    argument the schema does not declare, stays a string: checking is the toolbox's job, and its message then
    names the argument and the expected type."""
    properties = parameters.get("properties")
    declared: Mapping[str, Any] = properties if isinstance(properties, Mapping) else {}
    return {name: _coerced(declared.get(name), value) for name, value in arguments.items()}


def _json_length(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, default=str))


def estimate_usage(request: ModelRequest, response: ModelResponse) -> Usage:
    """An estimate of a call's tokens at :data:`CHARS_PER_TOKEN` characters per token, for a model that has no
    tokenizer (the offline model): the prompt is the system prompt, the history and the tools (names,
    descriptions and schemas as JSON text); the completion is the text and the tool calls (their arguments as
    JSON text).  It caches nothing, so ``cached_tokens`` is ``None``."""
    tools = sum(t.prompt_chars for t in request.tools)
    calls = sum(len(c.name) + _json_length(c.arguments) for c in response.tool_calls)
    return Usage(prompt_tokens=estimate_tokens(request.system_prompt, request.messages) + tools // CHARS_PER_TOKEN,
                 completion_tokens=(len(response.text or "") + calls + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN)
