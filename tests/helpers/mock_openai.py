"""An OpenAI-compatible chat-completions answerer behind the SDK's mock transport: whatever the URL, it answers
like a server (a plain JSON answer, or server-sent events when the request streams), and records what it was
sent.  For tests where an agent's model may name any URL (the contract test generates them) and nothing may
reach the network; :mod:`tests.helpers.fake_openai` is a real server on a local port, for the protocol itself."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import httpx2 as httpx
import openai

from agentfy.runtime.openai_compat import OpenAIClients


@dataclass
class MockOpenAI:
    """``reply`` is the answer's text; ``status`` other than 200 answers that error instead."""

    reply: str = "ok"
    status: int = 200
    requests: list[httpx.Request] = field(default_factory=list)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.status != 200:
            return httpx.Response(self.status, json={"error": {"message": "invalid api key", "type": "auth"}})
        body = json.loads(request.content or b"{}")
        usage = {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}
        if body.get("stream"):
            chunks = [{"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": [
                {"index": 0, "delta": {"role": "assistant", "content": self.reply}, "finish_reason": None}]},
                {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": [
                    {"index": 0, "delta": {}, "finish_reason": "stop"}]},
                {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": [],
                 "usage": usage}]
            text = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"
            return httpx.Response(200, content=text.encode(), headers={"content-type": "text/event-stream"})
        return httpx.Response(200, json={"id": "c", "object": "chat.completion", "created": 0, "model": "m",
                                         "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                             "role": "assistant", "content": self.reply}}], "usage": usage})

    def authorizations(self) -> list[str]:
        return [request.headers.get("authorization", "") for request in self.requests]

    def clients(self) -> OpenAIClients:
        """The SDK clients a :class:`~agentfy.runtime.providers.Providers` uses, every one answered by this mock."""
        return OpenAIClients(factory=lambda base_url, api_key: openai.AsyncOpenAI(
            base_url=base_url, api_key=api_key or "none", max_retries=0,
            http_client=httpx.AsyncClient(transport=httpx.MockTransport(self))))
