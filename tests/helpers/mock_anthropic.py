"""An Anthropic Messages answerer behind the SDK's mock transport: whatever the URL, it answers like the API (a
JSON message, or server-sent events when the request streams), and records what it was sent.  For tests where an
agent's model may name any URL (the contract test generates them) and nothing may reach the network;
:mod:`tests.helpers.fake_anthropic` is a real server on a local port, for the protocol itself."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import anthropic
import httpx2 as httpx

from agentfy.runtime.anthropic_messages import AnthropicClients
from tests.helpers.fake_anthropic import Message, Tokens, message_events, message_json


@dataclass
class MockAnthropic:
    """``reply`` is the answer's text."""

    reply: str = "ok"
    requests: list[httpx.Request] = field(default_factory=list)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        body = json.loads(request.content or b"{}")
        answer, model = Message(text=self.reply, usage=Tokens(5, 1)), str(body.get("model", "m"))
        if body.get("stream"):
            events = message_events(answer, model)
            text = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)
            return httpx.Response(200, content=text.encode(), headers={"content-type": "text/event-stream"})
        return httpx.Response(200, json=message_json(answer, model))

    def clients(self) -> AnthropicClients:
        """The SDK clients a :class:`~agentfy.runtime.providers.Providers` uses, every one answered by this mock."""
        return AnthropicClients(factory=lambda base_url, api_key: anthropic.AsyncAnthropic(
            base_url=base_url, api_key=api_key or "none", max_retries=0, open_telemetry=False,
            http_client=httpx.AsyncClient(transport=httpx.MockTransport(self))))
