"""What the runtime says to a model and what comes back: one shape for every provider.

The runtime never speaks a provider's wire format; a provider (:class:`ModelProvider`) translates a
:class:`ModelRequest` into its own API and its answer back into a :class:`ModelResponse`.  That keeps the loop
(:mod:`agentfy.runtime.runner`) testable with the offline provider and lets an agent switch providers by
configuration only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal, Protocol

Role = Literal["system", "user", "assistant", "tool"]

#: Characters per token used to estimate the size of a history (no tokenizer is needed for a threshold).
CHARS_PER_TOKEN: Final = 4


@dataclass(frozen=True, slots=True)
class ToolCall:
    """The model asks for one tool run: ``id`` pairs the call with its result message."""

    id: str
    name: str
    arguments: Mapping[str, str]


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
    """A tool as the model is told about it: every parameter is a string (the offline syntax can say no more,
    and the tools parse what they need)."""

    name: str
    description: str
    parameters: Mapping[str, str]  # name -> description
    required: tuple[str, ...] = ()


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


def estimate_usage(request: ModelRequest, response: ModelResponse) -> Usage:
    """An estimate of a call's tokens at :data:`CHARS_PER_TOKEN` characters per token, for a model that has no
    tokenizer (the offline model): the prompt is the system prompt, the history and the tools' descriptions; the
    completion is the text and the tool calls.  It caches nothing, so ``cached_tokens`` is ``None``."""
    tools = sum(len(t.name) + len(t.description) + sum(len(k) + len(v) for k, v in t.parameters.items())
                for t in request.tools)
    calls = sum(len(c.name) + sum(len(k) + len(v) for k, v in c.arguments.items()) for c in response.tool_calls)
    return Usage(prompt_tokens=estimate_tokens(request.system_prompt, request.messages) + tools // CHARS_PER_TOKEN,
                 completion_tokens=(len(response.text or "") + calls + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN)
