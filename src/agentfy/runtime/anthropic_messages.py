"""Anthropic's Messages API as a provider, on the official SDK (``anthropic.AsyncAnthropic``).

The request (:func:`request_body`):

* the system prompt is the ``system`` parameter, split at the cache boundary
  (:func:`agentfy.agents.prompt.split_system_prompt`): the stable prefix is a text block marked
  ``cache_control: ephemeral`` (the API caches the tools and that prefix across turns), the runtime section a
  second block.  System messages of the history (compaction summaries) follow as further blocks: the API has
  no system role in ``messages``;
* the history as content blocks: an assistant's tool calls are ``tool_use`` blocks (``input`` the typed
  arguments), each tool result a ``tool_result`` block of a user message; consecutive messages of one role are
  merged into one (the API wants user and assistant to alternate, and all results of a turn's calls in the one
  user message after it); empty text is left out (the API refuses an empty text block);
* tools as ``{name, description, input_schema}``; ``max_tokens`` from the agent's settings (the API requires
  it).

One call (:meth:`AnthropicMessagesProvider.complete`) without ``on_text`` is a plain request; with it a
streamed one (``stream: true``): each ``text_delta`` goes to ``on_text`` in order, each ``tool_use`` block's
input is assembled from its ``input_json_delta`` pieces, and the usage is the ``message_start`` counts updated
by ``message_delta`` — the same :class:`~agentfy.runtime.model.ModelResponse` a plain call returns.  Usage is
read as the runtime counts it (:func:`parse_usage`): the prompt is every input token, cached or not; the cached
part is what the API read from its cache.  Stop reasons: ``max_tokens`` (or a full context window) in the
middle of a tool call is a :class:`~agentfy.runtime.model.ModelError` naming the setting to raise, a cut text
is returned as it is (and logged); a ``refusal`` with no text is a ModelError saying so.

Tries, timeouts and cancellation are :mod:`agentfy.runtime.call_policy`'s (the SDK's own retries are off);
HTTP 408, 409, 429, 5xx (529: overloaded), an ``overloaded_error`` or ``api_error`` event in a stream before
any text was shown, a connection error and a timeout are tried again.  Failures become
:class:`~agentfy.runtime.model.ModelError` (:func:`model_error`, the one mapping of the SDK's exceptions): the
base URL, the HTTP status and the error's type when it is a plain word (``invalid_request_error``), never the key
or a response's message.

The client is always given the key explicitly (a placeholder when the agent names no credential), so the SDK
never falls back to ``$ANTHROPIC_API_KEY`` or a profile on the server's disk: an agent uses its organization's
credential or none.  The SDK's own OpenTelemetry spans are off (they could carry the conversation).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import anthropic

from agentfy.agents.prompt import CACHE_BOUNDARY_MARKER, split_system_prompt
from agentfy.runtime.call_policy import CallPolicy, Progress, SdkErrors, call_with_policy, retry_after
from agentfy.runtime.model import ChatMessage, ModelError, ModelRequest, ModelResponse, TextSink, ToolCall, Usage
from agentfy.runtime.sdk_clients import SdkClients

logger: Final = logging.getLogger("agentfy.runtime.anthropic_messages")

#: The key sent when the agent names no credential (a local proxy that checks none); never the environment's.
PLACEHOLDER_KEY: Final = "no-key"
#: HTTP statuses worth another try besides 5xx: a timeout, a conflict (a lock), a rate limit.
RETRIED_STATUSES: Final = frozenset({408, 409, 429})
#: Error types of a stream's ``error`` event worth another try (the HTTP status of a stream is 200).
RETRIED_TYPES: Final = frozenset({"overloaded_error", "api_error", "rate_limit_error", "timeout_error"})
#: Stop reasons that cut the answer short.
CUT_SHORT: Final = frozenset({"max_tokens", "model_context_window_exceeded"})
_ERROR_TYPE: Final = re.compile(r"[a-z_]{1,40}")


def make_client(base_url: str, api_key: str | None) -> anthropic.AsyncAnthropic:
    """An SDK client for ``base_url`` with the SDK's retries and spans off, the key always explicit."""
    return anthropic.AsyncAnthropic(base_url=base_url, api_key=api_key or PLACEHOLDER_KEY, max_retries=0,
                                    open_telemetry=False)


class AnthropicClients(SdkClients[anthropic.AsyncAnthropic]):
    """The ``anthropic`` SDK's clients of a process (:class:`~agentfy.runtime.sdk_clients.SdkClients`)."""

    def __init__(self, size: int = 32, *,
                 factory: Callable[[str, str | None], anthropic.AsyncAnthropic] = make_client) -> None:
        super().__init__(size, factory=factory)


class AnthropicMessagesProvider:
    """The Messages API at ``base_url`` with ``model``, answers of at most ``max_tokens`` (see the module
    docstring).  ``clients``: the shared clients (:class:`AnthropicClients`); without it the provider has its
    own, closed by :meth:`aclose`.  ``sleep`` waits between tries (tests pass a recorder)."""

    def __init__(self, *, base_url: str, model: str, max_tokens: int, api_key: str | None,
                 clients: AnthropicClients | None = None, policy: CallPolicy | None = None,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.max_tokens = max_tokens
        self.policy = policy if policy is not None else CallPolicy()
        self._api_key = api_key
        self._clients = clients if clients is not None else AnthropicClients(1)
        self._sleep = sleep

    def __repr__(self) -> str:  # never the key
        return f"AnthropicMessagesProvider(base_url={self.base_url!r}, model={self.model!r})"

    async def aclose(self) -> None:
        await self._clients.aclose()

    async def complete(self, request: ModelRequest, *, on_text: TextSink | None = None) -> ModelResponse:
        arguments = request_body(self.model, self.max_tokens, request)
        progress = Progress(on_text)

        async def attempt() -> ModelResponse:
            async with self._clients.lease(self.base_url, self._api_key) as client:
                if on_text is None:
                    return await self._plain(client, arguments)
                return await self._streamed(client, arguments, progress)

        return await call_with_policy(self.policy, ERRORS, self.base_url, attempt, progress=progress,
                                      sleep=self._sleep)

    async def _plain(self, client: anthropic.AsyncAnthropic, arguments: dict[str, Any]) -> ModelResponse:
        message = await client.messages.create(**arguments, timeout=self.policy.timeout_seconds)
        try:
            document = message.to_dict(warnings=False)
            assembly = _Assembly(usage=parse_usage(document.get("usage")))
            for index, block in enumerate(document["content"]):
                assembly.start(index, block)
            assembly.stop_reason = document.get("stop_reason")
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            raise self._malformed() from None
        return self._finished(assembly)

    async def _streamed(self, client: anthropic.AsyncAnthropic, arguments: dict[str, Any],
                        progress: Progress) -> ModelResponse:
        stream = await client.messages.create(**arguments, stream=True, timeout=self.policy.timeout_seconds)
        assembly = _Assembly()
        async with stream:
            async for event in stream:
                try:
                    piece = assembly.add(event.to_dict(warnings=False))
                except (ValueError, KeyError, IndexError, TypeError, AttributeError):
                    raise self._malformed() from None
                if piece:
                    await progress.show(piece)
        return self._finished(assembly)

    def _finished(self, assembly: _Assembly) -> ModelResponse:
        """The response, or a ModelError for an answer the stop reason left unusable."""
        reason = assembly.stop_reason
        if reason in CUT_SHORT and assembly.calls:
            raise ModelError(f"the model at {self.base_url} stopped ({reason}) in the middle of a tool call; "
                             f"raise the agent's max_tokens (now {self.max_tokens})")
        try:
            response = assembly.response()
        except (ValueError, TypeError):
            raise self._malformed() from None
        if reason in CUT_SHORT:
            logger.warning("runtime.model_answer_cut", extra={"base_url": self.base_url, "stop_reason": reason,
                                                               "max_tokens": self.max_tokens})
        if reason == "refusal" and response.text is None and not response.tool_calls:
            raise ModelError(f"the model at {self.base_url} declined to answer (stop reason refusal)")
        return response

    def _malformed(self) -> ModelError:
        return ModelError(f"the model at {self.base_url} sent an answer that is not a Messages API message")


@dataclass(slots=True)
class _Block:
    kind: str
    id: str = ""
    name: str = ""
    text: list[str] = field(default_factory=list)
    input: Mapping[str, Any] | None = None


@dataclass(slots=True)
class _Assembly:
    """A message put back together: its content blocks by ``index`` (text, tool_use; others, such as thinking,
    are not the answer), the stop reason, the usage."""

    blocks: dict[int, _Block] = field(default_factory=dict)
    stop_reason: str | None = None
    usage: Usage | None = None
    _counts: dict[str, Any] = field(default_factory=dict)

    @property
    def calls(self) -> list[_Block]:
        return [block for _, block in sorted(self.blocks.items()) if block.kind == "tool_use"]

    def start(self, index: int, block: Mapping[str, Any]) -> str:
        """A content block (of a ``content_block_start``, or of a whole message); returns its text."""
        kind = str(block["type"])
        if kind == "text":
            text = block.get("text") or ""
            if not isinstance(text, str):
                raise TypeError("a text block's text must be a string")
            self.blocks[index] = _Block(kind, text=[text] if text else [])
            return text
        if kind == "tool_use":
            given = block.get("input")
            if given is not None and not isinstance(given, dict):
                raise TypeError("a tool_use block's input must be an object")
            self.blocks[index] = _Block(kind, id=str(block["id"]), name=str(block["name"]),
                                        input=given or None)
        return ""

    def add(self, event: Mapping[str, Any]) -> str:
        """Take one stream event; returns its text (to stream)."""
        kind = event.get("type")
        if kind == "message_start":
            self._count(event["message"].get("usage"))
        elif kind == "content_block_start":
            return self.start(int(event["index"]), event["content_block"])
        elif kind == "content_block_delta":
            block, delta = self.blocks.get(int(event["index"])), event["delta"]
            if block is None:
                return ""
            if delta.get("type") == "text_delta" and block.kind == "text":
                text = delta["text"]
                if not isinstance(text, str):
                    raise TypeError("a text delta must be a string")
                block.text.append(text)
                return text
            if delta.get("type") == "input_json_delta" and block.kind == "tool_use":
                block.text.append(str(delta["partial_json"]))
        elif kind == "message_delta":
            self.stop_reason = (event.get("delta") or {}).get("stop_reason") or self.stop_reason
            self._count(event.get("usage"))
        return ""

    def _count(self, counts: Any) -> None:
        """The stream's usage so far: ``message_start``'s counts, each one a later event states replacing it."""
        if isinstance(counts, dict):
            self._counts.update({name: value for name, value in counts.items() if value is not None})
            self.usage = parse_usage(self._counts)

    def response(self) -> ModelResponse:
        text = "".join(piece for _, block in sorted(self.blocks.items()) if block.kind == "text"
                       for piece in block.text)
        calls = tuple(ToolCall(block.id, block.name, dict(block.input) if block.input is not None
                               else _arguments("".join(block.text))) for block in self.calls)
        if any(not call.name for call in calls):
            raise ValueError("a tool_use block has no name")
        return ModelResponse(text=text or None, tool_calls=calls, usage=self.usage)


def _arguments(text: str) -> dict[str, Any]:
    parsed = json.loads(text) if text.strip() else {}
    if not isinstance(parsed, dict):
        raise ValueError("a tool_use input must be a JSON object")
    return {str(k): v for k, v in parsed.items()}


# -- failures --------------------------------------------------------------------------------------------------

def _stream_error_type(error: anthropic.APIStatusError) -> str | None:
    """The ``error.type`` of an ``error`` event in a stream (its HTTP status is the stream's 200), when it is a
    plain word (it comes from the response body)."""
    kind = error.type if isinstance(error.type, str) else None
    return kind if kind is not None and _ERROR_TYPE.fullmatch(kind) else None


def retryable(error: BaseException) -> bool:
    """Whether another try may succeed: a timeout, a connection error, HTTP 408, 409, 429 or 5xx (529 is
    overloaded), or a stream's overloaded or server error event."""
    if isinstance(error, anthropic.APIStatusError):
        if error.status_code < 400:
            return _stream_error_type(error) in RETRIED_TYPES
        return error.status_code in RETRIED_STATUSES or error.status_code >= 500
    return isinstance(error, TimeoutError | anthropic.APIConnectionError)


def model_error(base_url: str, error: BaseException, *, timeout: float) -> ModelError:
    """The person's message for an SDK failure (the one mapping of its exception classes): the base URL and the
    status (with the error's type word) or the transport error's type; never the key, never a response's
    message (it may echo the key)."""
    where = f"the model at {base_url}"
    if isinstance(error, TimeoutError | anthropic.APITimeoutError):
        return ModelError(f"{where} did not answer within {timeout:g} s", timed_out=True)
    if isinstance(error, anthropic.AuthenticationError | anthropic.PermissionDeniedError):
        return ModelError(f"{where} refused the credential (HTTP {error.status_code}); check the agent's "
                          "credential")
    if isinstance(error, anthropic.RateLimitError):
        return ModelError(f"{where} answered HTTP 429 (rate limited)")
    if isinstance(error, anthropic.NotFoundError):
        return ModelError(f"{where} answered HTTP 404; check the agent's model name and base_url (the API root, "
                          "e.g. https://api.anthropic.com)")
    if isinstance(error, anthropic.APIStatusError):
        if error.status_code == 529:
            return ModelError(f"{where} answered HTTP 529 (overloaded)")
        if error.status_code < 400:
            return ModelError(f"{where} failed in the middle of its answer ({_stream_error_type(error) or 'error'})")
        kind = _stream_error_type(error)
        return ModelError(f"{where} answered HTTP {error.status_code}" + (f" ({kind})" if kind else ""))
    if isinstance(error, anthropic.APIConnectionError):
        cause = error.__cause__ or error
        return ModelError(f"{where} is unreachable ({type(cause).__name__})")
    if isinstance(error, anthropic.APIResponseValidationError):
        return ModelError(f"{where} sent an answer that is not a Messages API message")
    return ModelError(f"{where} failed ({type(error).__name__})")


def _asked_wait(error: BaseException) -> float | None:
    return retry_after(error.response.headers) if isinstance(error, anthropic.APIStatusError) else None


#: The ``anthropic`` SDK's failures, for :func:`~agentfy.runtime.call_policy.call_with_policy`.
ERRORS: Final = SdkErrors((anthropic.APIError, TimeoutError), lambda base_url, error, timeout: model_error(
    base_url, error, timeout=timeout), retryable, _asked_wait)


# -- the wire format -------------------------------------------------------------------------------------------

def _text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def system_blocks(system_prompt: str, history: Sequence[ChatMessage] = ()) -> list[dict[str, Any]]:
    """The ``system`` parameter: the prompt's stable prefix (marked cacheable) and runtime section, then the
    history's system messages; empty parts left out."""
    if CACHE_BOUNDARY_MARKER + "\n" in system_prompt:
        prefix, runtime = split_system_prompt(system_prompt)
        blocks = [{**_text_block(prefix), "cache_control": {"type": "ephemeral"}}] if prefix.strip() else []
        blocks += [_text_block(runtime)] if runtime.strip() else []
    else:
        blocks = [_text_block(system_prompt)] if system_prompt.strip() else []
    return blocks + [_text_block(m.content) for m in history if m.role == "system" and m.content.strip()]


def _blocks(message: ChatMessage) -> list[dict[str, Any]]:
    if message.role == "tool":
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id or ""}
        return [{**result, "content": message.content} if message.content else result]
    blocks = [_text_block(message.content)] if message.content.strip() else []
    return blocks + [{"type": "tool_use", "id": call.id, "name": call.name, "input": dict(call.arguments)}
                     for call in message.tool_calls]


def messages(history: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """The history as the API's alternating user and assistant messages of content blocks (system messages
    go to :func:`system_blocks`; a tool result is a user message's block; one role's consecutive messages are
    one message)."""
    merged: list[dict[str, Any]] = []
    for message in history:
        if message.role == "system":
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        if not blocks:
            continue
        if merged and merged[-1]["role"] == role:
            merged[-1]["content"].extend(blocks)
        else:
            merged.append({"role": role, "content": blocks})
    return merged


def request_body(model: str, max_tokens: int, request: ModelRequest) -> dict[str, Any]:
    """The Messages API arguments of ``request`` (see the module docstring)."""
    body: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "messages": messages(request.messages)}
    system = system_blocks(request.system_prompt, request.messages)
    if system:
        body["system"] = system
    if request.tools:
        body["tools"] = [{"name": spec.name, "description": spec.description,
                          "input_schema": dict(spec.parameters)} for spec in request.tools]
    return body


def _tokens(value: Any) -> int | None:
    return value if type(value) is int and value >= 0 else None


def parse_usage(usage: Any) -> Usage | None:
    """The message's ``usage`` as the runtime counts it: the prompt is ``input_tokens`` plus the tokens read
    from and written to the cache (the API counts those apart), the completion ``output_tokens``, the cached
    part ``cache_read_input_tokens`` (``None`` when not reported).  ``None`` when the counts are not counts."""
    if not isinstance(usage, dict):
        return None
    prompt, completion = _tokens(usage.get("input_tokens")), _tokens(usage.get("output_tokens"))
    if prompt is None or completion is None:
        return None
    cached = _tokens(usage.get("cache_read_input_tokens"))
    written = _tokens(usage.get("cache_creation_input_tokens")) or 0
    return Usage(prompt + (cached or 0) + written, completion, cached)
