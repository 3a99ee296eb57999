"""A fake OpenAI-compatible chat-completions server behind ``httpx.MockTransport``: whatever the URL, it answers
like one (a plain JSON answer, or server-sent events when the request streams), and records what it was sent."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import httpx


@dataclass
class FakeOpenAI:
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

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self))
