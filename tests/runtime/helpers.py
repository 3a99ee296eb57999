"""What the runtime tests share: running a coroutine, a message from a tenant's chat, and a sink that collects
the run events."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Sequence
from typing import Any, TypeVar

from agentfy.gateway.rpc.broadcast import AgentEvent
from agentfy.identity.context import RequestContext
from agentfy.runtime.inbound import Inbound, Reply
from agentfy.runtime.model import ModelError, ModelRequest, ModelResponse, TextSink
from agentfy.runtime.runner import Runtime
from tests.helpers.tenants import Tenant

T = TypeVar("T")


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coroutine)


def inbound(tenant: Tenant, context: RequestContext, text: str, *, conversation: str = "chat-1",
            channel: str = "test", agent_key: str | None = None) -> Inbound:
    """A message to ``tenant``'s agent (its ``bot`` unless ``agent_key`` names another)."""
    assert agent_key is not None or tenant.bot is not None, "make the tenant with an agent_key"
    key = agent_key or tenant.bot.agent_key  # type: ignore[union-attr]
    return Inbound(tenant.scope.tenant_id, key, context, channel, conversation, text)


def send(runtime: Runtime, message: Inbound) -> Reply:
    return run(runtime(message))


class CollectedEvents:
    def __init__(self) -> None:
        self.events: list[tuple[str, AgentEvent]] = []

    def publish(self, tenant_id: str, event: AgentEvent) -> int:
        self.events.append((tenant_id, event))
        return 1

    def names(self) -> list[str]:
        return [event.name for _, event in self.events]


class FailingProvider:
    """A model that streams ``pieces`` (if any) and then fails with ``error`` (a 503 by default)."""

    def __init__(self, error: ModelError | None = None, *, pieces: Sequence[str] = ()) -> None:
        self.error = error or ModelError("the model at http://model.test/v1 answered HTTP 503")
        self.pieces = tuple(pieces)

    async def complete(self, request: ModelRequest, *, on_text: TextSink | None = None) -> ModelResponse:
        for piece in self.pieces:
            if on_text is not None:
                await on_text(piece)
        raise self.error


class Sleeps:
    """Records the waits between a provider's tries instead of waiting."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
