"""An OpenAI-compatible chat-completions provider with tool calling, on the official SDK (``openai.AsyncOpenAI``).

Any server that speaks that API (OpenAI, Azure's compatible endpoint, vLLM, Ollama, LiteLLM, …) fits.  Tools
are declared as functions with their JSON-schema parameters; the model's JSON arguments come back as JSON values
(the toolbox checks them against the schema before a tool runs).

One call (:meth:`OpenAICompatibleProvider.complete`):

* without ``on_text`` a plain request; with it a streamed one (``stream_options.include_usage``): each content
  delta goes to ``on_text`` in order, tool calls are assembled from their fragments (by ``index``: the id and
  name, then the argument pieces), and the usage comes from the final chunk — the same
  :class:`~agentfy.runtime.model.ModelResponse` a plain call returns;
* tried as :mod:`agentfy.runtime.call_policy` says (:class:`~agentfy.runtime.call_policy.CallPolicy`: up to 3
  tries on HTTP 408, 429 and 5xx, a connection error and a timeout, waiting what ``Retry-After`` asks, at most
  60 s, else a jittered backoff; each try bounded, the stream included; a stream that has shown text is not
  tried again).  The SDK's own retries are off (``max_retries=0``): that loop is the one place that decides;
* a cancelled run cancels the request: the HTTP connection is closed, so the server sees the disconnect.

Failures become :class:`~agentfy.runtime.model.ModelError` (:func:`model_error`, the one mapping of the SDK's
exceptions) with a message fit for the person: the base URL and the HTTP status or the transport error's type,
never the key or a response body (it may echo the key).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import openai

from agentfy.runtime.call_policy import CallPolicy, Progress, SdkErrors, call_with_policy, retry_after
from agentfy.runtime.model import (
    ChatMessage,
    ModelError,
    ModelRequest,
    ModelResponse,
    TextSink,
    ToolCall,
    ToolSpec,
    Usage,
)
from agentfy.runtime.sdk_clients import SdkClients

__all__ = ["PLACEHOLDER_KEY", "CallPolicy", "OpenAIClients", "OpenAICompatibleProvider", "make_client",
           "model_error", "parse_response", "parse_usage", "request_json", "retry_after", "retryable"]

#: The key sent when the agent names no credential (a local server that checks none); the SDK needs one.
PLACEHOLDER_KEY: Final = "no-key"
#: The calls go through the SDK's own ``post`` with the JSON body this module encodes (:func:`request_json`,
#: bytes the SDK sends as they are) and the answers read as sent (``cast_to=object``): the SDK still does the
#: HTTP, the streaming, the authentication and the error classes, but neither re-validates our body against its
#: typed parameters nor builds a model object per chunk that would only be turned back into a dict — about a
#: millisecond per call before the first token (measured by ``make bench-openai-latency``).
CHAT_COMPLETIONS: Final = "/chat/completions"
#: HTTP statuses worth another try: the server timed out, rate-limited or failed, not the request.
RETRIED_STATUSES: Final = frozenset({408, 429})


def make_client(base_url: str, api_key: str | None) -> openai.AsyncOpenAI:
    """An SDK client for ``base_url`` with the SDK's retries off (:class:`CallPolicy` decides)."""
    return openai.AsyncOpenAI(base_url=base_url, api_key=api_key or PLACEHOLDER_KEY, max_retries=0)


class OpenAIClients(SdkClients[openai.AsyncOpenAI]):
    """The ``openai`` SDK's clients of a process (:class:`~agentfy.runtime.sdk_clients.SdkClients`)."""

    def __init__(self, size: int = 32, *, factory: Callable[[str, str | None], openai.AsyncOpenAI] = make_client
                 ) -> None:
        super().__init__(size, factory=factory)


class OpenAICompatibleProvider:
    """Chat completions at ``base_url`` with ``model`` (see the module docstring).  ``clients``: the shared
    clients (:class:`OpenAIClients`); without it the provider has its own, closed by :meth:`aclose`.
    ``sleep`` waits between tries (tests pass a recorder)."""

    def __init__(self, *, base_url: str, model: str, api_key: str | None, clients: OpenAIClients | None = None,
                 policy: CallPolicy | None = None, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
                 ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.policy = policy if policy is not None else CallPolicy()
        self._api_key = api_key
        self._clients = clients if clients is not None else OpenAIClients(1)
        self._sleep = sleep

    def __repr__(self) -> str:  # never the key
        return f"OpenAICompatibleProvider(base_url={self.base_url!r}, model={self.model!r})"

    async def aclose(self) -> None:
        await self._clients.aclose()

    async def complete(self, request: ModelRequest, *, on_text: TextSink | None = None) -> ModelResponse:
        body = request_json(self.model, request, stream=on_text is not None)  # bytes the SDK sends as they are
        progress = Progress(on_text)

        async def attempt() -> ModelResponse:
            async with self._clients.lease(self.base_url, self._api_key) as client:
                if on_text is None:
                    return await self._plain(client, body)
                return await self._streamed(client, body, progress)

        return await call_with_policy(self.policy, ERRORS, self.base_url, attempt, progress=progress,
                                      sleep=self._sleep)

    async def _plain(self, client: openai.AsyncOpenAI, body: bytes) -> ModelResponse:
        completion = await client.post(CHAT_COMPLETIONS, content=body, cast_to=object,
                                       options={"timeout": self.policy.timeout_seconds})
        try:
            if not isinstance(completion, Mapping):
                raise TypeError("a chat completion is a JSON object")
            return parse_response(completion)
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            raise self._malformed() from None

    async def _streamed(self, client: openai.AsyncOpenAI, body: bytes, progress: Progress) -> ModelResponse:
        stream = await client.post(CHAT_COMPLETIONS, content=body,
                                   cast_to=object, stream=True, stream_cls=openai.AsyncStream[object],
                                   options={"timeout": self.policy.timeout_seconds})
        assembly = _Assembly()
        async with stream:
            async for chunk in stream:
                try:
                    pieces = assembly.add(chunk)
                except (ValueError, KeyError, IndexError, TypeError, AttributeError):
                    raise self._malformed() from None
                for piece in pieces:
                    await progress.show(piece)
        try:
            return assembly.response()
        except (ValueError, KeyError, TypeError):
            raise self._malformed() from None

    def _malformed(self) -> ModelError:
        return ModelError(f"the model at {self.base_url} sent an answer that is not a chat completion")


@dataclass(slots=True)
class _Fragments:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _Assembly:
    """A streamed completion put back together: the text pieces, the tool calls by ``index``, the usage."""

    text: list[str] = field(default_factory=list)
    calls: dict[int, _Fragments] = field(default_factory=dict)
    usage: Usage | None = None

    def add(self, chunk: object) -> list[str]:
        """Take one chunk (its JSON, as sent); returns its text pieces (to stream)."""
        if not isinstance(chunk, Mapping):
            raise TypeError("a chunk is a JSON object")
        if chunk.get("usage") is not None:
            self.usage = parse_usage(chunk["usage"])
        pieces: list[str] = []
        for choice in chunk.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            content = delta.get("content")
            if content:
                if not isinstance(content, str):
                    raise TypeError("content must be a string")
                pieces.append(content)
            for fragment in delta.get("tool_calls") or ():
                call = self.calls.setdefault(int(fragment.get("index", len(self.calls))), _Fragments())
                call.id = call.id or str(fragment.get("id") or "")
                function = fragment.get("function") or {}
                call.name = call.name or str(function.get("name") or "")
                if function.get("arguments"):
                    call.arguments.append(str(function["arguments"]))
        self.text.extend(pieces)
        return pieces

    def response(self) -> ModelResponse:
        calls = []
        for index, call in sorted(self.calls.items()):
            if not call.name:
                raise ValueError("a streamed tool call has no name")
            calls.append(ToolCall(call.id or f"call-{index}", call.name, _arguments("".join(call.arguments))))
        return ModelResponse(text="".join(self.text) or None, tool_calls=tuple(calls), usage=self.usage)


# -- failures --------------------------------------------------------------------------------------------------

def retryable(error: BaseException) -> bool:
    """Whether another try may succeed: a timeout, a connection error, HTTP 408, 429 or 5xx."""
    if isinstance(error, openai.APIStatusError):
        return error.status_code in RETRIED_STATUSES or error.status_code >= 500
    return isinstance(error, TimeoutError | openai.APIConnectionError)


def model_error(base_url: str, error: BaseException, *, timeout: float) -> ModelError:
    """The person's message for an SDK failure (the one mapping of its exception classes): the base URL and the
    status or the transport error's type; never the key, never a response body."""
    where = f"the model at {base_url}"
    if isinstance(error, TimeoutError | openai.APITimeoutError):
        return ModelError(f"{where} did not answer within {timeout:g} s", timed_out=True)
    if isinstance(error, openai.AuthenticationError | openai.PermissionDeniedError):
        return ModelError(f"{where} refused the credential (HTTP {error.status_code}); check the agent's "
                          "credential")
    if isinstance(error, openai.RateLimitError):
        return ModelError(f"{where} answered HTTP 429 (rate limited)")
    if isinstance(error, openai.APIStatusError):
        return ModelError(f"{where} answered HTTP {error.status_code}")
    if isinstance(error, openai.APIConnectionError):
        cause = error.__cause__ or error
        return ModelError(f"{where} is unreachable ({type(cause).__name__})")
    if isinstance(error, openai.APIResponseValidationError):
        return ModelError(f"{where} sent an answer that is not a chat completion")
    return ModelError(f"{where} failed ({type(error).__name__})")


def _asked_wait(error: BaseException) -> float | None:
    return retry_after(error.response.headers) if isinstance(error, openai.APIStatusError) else None


#: The ``openai`` SDK's failures, for :func:`~agentfy.runtime.call_policy.call_with_policy`.
ERRORS: Final = SdkErrors((openai.APIError, TimeoutError), lambda base_url, error, timeout: model_error(
    base_url, error, timeout=timeout), retryable, _asked_wait)


# -- the wire format -------------------------------------------------------------------------------------------

def _tool(spec: ToolSpec) -> dict[str, Any]:
    return {"type": "function", "function": {"name": spec.name, "description": spec.description,
                                             "parameters": dict(spec.parameters)}}


def _message(message: ChatMessage) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = [{"id": call.id, "type": "function",
                              "function": {"name": call.name, "arguments": json.dumps(dict(call.arguments))}}
                             for call in message.tool_calls]
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    return out


#: Each tool's JSON as sent, by the spec's identity (the entry keeps its spec alive, so no other object can take
#: its ID): a tool is defined once and offered on every call, and encoding the 21 built-in tools' schemas
#: (11 kB) was 0.1 ms of every call, nine tenths of the request's encoding.  Bounded, for tools made per run
#: (an MCP server's): past the bound it starts over.
_TOOL_JSON: dict[int, tuple[ToolSpec, str]] = {}
_TOOL_JSON_KEPT: Final = 4096


def _json(value: Any) -> str:
    """JSON as the SDK would send it (compact, UTF-8 kept, no NaN)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _tool_json(spec: ToolSpec) -> str:
    kept = _TOOL_JSON.get(id(spec))
    if kept is not None:
        return kept[1]
    if len(_TOOL_JSON) >= _TOOL_JSON_KEPT:
        _TOOL_JSON.clear()
    text = _json(_tool(spec))
    _TOOL_JSON[id(spec)] = (spec, text)
    return text


def request_json(model: str, request: ModelRequest, *, stream: bool) -> bytes:
    """The chat-completions request of ``request`` as the bytes sent: the system prompt first, then the history,
    then the tools (each encoded once, :data:`_TOOL_JSON`); ``stream``: streamed, with the usage at the end."""
    body: dict[str, Any] = {"model": model,
                            "messages": [{"role": "system", "content": request.system_prompt},
                                         *(_message(m) for m in request.messages)]}
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    text = _json(body)
    if request.tools:  # spliced in before the object's closing brace
        text = f'{text[:-1]},"tools":[{",".join(_tool_json(spec) for spec in request.tools)}]}}'
    return text.encode()


def _arguments(text: Any) -> dict[str, Any]:
    parsed = json.loads(text) if isinstance(text, str) and text.strip() else {}
    if not isinstance(parsed, dict):
        raise ValueError("tool arguments must be a JSON object")
    return {str(k): v for k, v in parsed.items()}


def parse_response(document: Any) -> ModelResponse:
    """A chat-completions answer as a :class:`ModelResponse` (raises ``ValueError``/``KeyError`` when it is
    not one).  Tool arguments keep their JSON types."""
    message = document["choices"][0]["message"]
    calls = tuple(ToolCall(str(call["id"]), str(call["function"]["name"]),
                           _arguments(call["function"].get("arguments")))
                  for call in message.get("tool_calls") or ())
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise ValueError("content must be a string")
    return ModelResponse(text=content or None, tool_calls=calls, usage=parse_usage(document.get("usage")))


def _tokens(value: Any) -> int | None:
    return value if type(value) is int and value >= 0 else None


def parse_usage(usage: Any) -> Usage | None:
    """The answer's ``usage`` (``prompt_tokens``, ``completion_tokens``, and
    ``prompt_tokens_details.cached_tokens`` where the server reports it), or ``None`` when it has none or its
    counts are not counts (a server that does not count must not fail the run)."""
    if not isinstance(usage, dict):
        return None
    prompt, completion = _tokens(usage.get("prompt_tokens")), _tokens(usage.get("completion_tokens"))
    if prompt is None or completion is None:
        return None
    details = usage.get("prompt_tokens_details")
    cached = _tokens(details.get("cached_tokens")) if isinstance(details, dict) else None
    return Usage(prompt, completion, cached)
