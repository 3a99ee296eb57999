"""An OpenAI-compatible chat-completions provider with tool calling (``POST {base_url}/chat/completions``).

Any server that speaks that API (OpenAI, Azure's compatible endpoint, vLLM, Ollama, LiteLLM, …) fits.  Tools
are declared as functions whose parameters are all strings; the model's JSON arguments come back as a
``dict[str, str]`` (a non-string value is kept as its JSON text).

Failures become :class:`~agentfy.runtime.model.ModelError` with a message fit for the person: the base URL
and the HTTP status or the transport error's type, never the request (it carries the API key) or a response
body (it may echo it).
"""

from __future__ import annotations

import json
from typing import Any, Final

import httpx

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

DEFAULT_TIMEOUT_SECONDS: Final = 60.0


class OpenAICompatibleProvider:
    """Chat completions at ``base_url`` with ``model``; ``client`` may be shared (and is then not closed)."""

    def __init__(self, *, base_url: str, model: str, api_key: str | None,
                 client: httpx.AsyncClient | None = None, timeout: float = DEFAULT_TIMEOUT_SECONDS) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self._api_key = api_key
        self._client = client
        self._timeout = timeout

    def __repr__(self) -> str:  # never the key
        return f"OpenAICompatibleProvider(base_url={self.base_url!r}, model={self.model!r})"

    async def complete(self, request: ModelRequest, *, on_text: TextSink | None = None) -> ModelResponse:
        body = request_body(self.model, request)
        headers = {"authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        url = f"{self.base_url}/chat/completions"
        try:
            if self._client is not None:
                response = await self._client.post(url, json=body, headers=headers, timeout=self._timeout)
            else:
                async with httpx.AsyncClient() as client:
                    response = await client.post(url, json=body, headers=headers, timeout=self._timeout)
        except httpx.TimeoutException as error:
            raise ModelError(f"the model at {self.base_url} did not answer in time ({type(error).__name__})",
                             timed_out=True) from None
        except httpx.HTTPError as error:
            raise ModelError(f"the model at {self.base_url} is unreachable ({type(error).__name__})") from None
        if response.status_code != 200:
            raise ModelError(f"the model at {self.base_url} answered HTTP {response.status_code}")
        try:
            answer = parse_response(response.json())
        except (ValueError, KeyError, IndexError, TypeError):
            raise ModelError(f"the model at {self.base_url} sent an answer that is not a chat completion") from None
        if on_text is not None and answer.text:
            await on_text(answer.text)
        return answer


def _tool(spec: ToolSpec) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": spec.name, "description": spec.description,
        "parameters": {"type": "object",
                       "properties": {name: {"type": "string", "description": text}
                                      for name, text in spec.parameters.items()},
                       "required": list(spec.required)}}}


def _message(message: ChatMessage) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = [{"id": call.id, "type": "function",
                              "function": {"name": call.name, "arguments": json.dumps(dict(call.arguments))}}
                             for call in message.tool_calls]
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    return out


def request_body(model: str, request: ModelRequest) -> dict[str, Any]:
    """The chat-completions body of ``request``: the system prompt first, then the history, then the tools."""
    body: dict[str, Any] = {"model": model,
                            "messages": [{"role": "system", "content": request.system_prompt},
                                         *(_message(m) for m in request.messages)]}
    if request.tools:
        body["tools"] = [_tool(spec) for spec in request.tools]
    return body


def _arguments(text: Any) -> dict[str, str]:
    parsed = json.loads(text) if isinstance(text, str) and text.strip() else {}
    if not isinstance(parsed, dict):
        raise ValueError("tool arguments must be a JSON object")
    return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in parsed.items()}


def parse_response(document: Any) -> ModelResponse:
    """A chat-completions answer as a :class:`ModelResponse` (raises ``ValueError``/``KeyError`` when it is
    not one)."""
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
