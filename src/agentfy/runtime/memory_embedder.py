"""The ``memory.embed`` handler: memory written gets its vectors from the agent's own embeddings model, with
no transaction open during the call.

A staged handler (:mod:`agentfy.events.handlers`) of the event workers, for the events
:mod:`agentfy.events.embedding` publishes with each memory write:

1. ``read`` (a read-only transaction): the agent, its embeddings configuration
   (:class:`~agentfy.runtime.embeddings.EmbeddingsSettings`), the credential's key, and the sources still
   without a current vector of that model — those the event names, or a batch of whatever waits
   (``catch_up``);
2. ``compute`` (no transaction): one ``/embeddings`` call per :data:`~agentfy.runtime.embeddings.BATCH_MAX`
   texts, on the consolidation's own event loop (:class:`~agentfy.runtime.memory_models.ModelCalls`) with the
   process's call policy; a failure raises, so the bus retries the event with its backoff and, after its
   attempts, dead-letters it — the text written long before is never touched;
3. ``write`` (the batch's transaction): the vectors (a source changed meanwhile is skipped: its own event
   embeds the new text), the call's tokens in ``usage_snapshots`` under the agent (``run_id``
   ``embedding-…``, provider ``openai``), and for a full catch-up batch the next catch-up event.

A configuration that cannot be used (a credential not stored, no credentials key) dead-letters the event at
once, naming the problem: retrying cannot fix it, and setting the embeddings again queues a catch-up.  An
agent whose embeddings were removed meanwhile has nothing to do.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from agentfy.events.embedding import publish_embedding_due
from agentfy.events.event import DomainEvent
from agentfy.events.handlers import DeterministicEventError
from agentfy.events.settings import DEFAULT_BUS_SETTINGS, BusSettings
from agentfy.identity import AgentId, Scope, parse_id
from agentfy.runtime.embeddings import BATCH_MAX, Embedded, EmbeddingsSettings, api_key, embed
from agentfy.runtime.memory_models import ModelCalls
from agentfy.runtime.model import Usage
from agentfy.runtime.providers import OPENAI, ModelConfigError
from agentfy.runtime.usage import add
from agentfy.store.db import Tx
from agentfy.store.repos import agents, telemetry, vectors
from agentfy.store.repos.agents import Agent
from agentfy.store.repos.vectors import Source

#: How many source IDs one event may name (a batch upsert writes at most a few hundred documents).
SOURCES_MAX: Final = 1_000


@dataclass(frozen=True, slots=True)
class EmbedInputs:
    """What ``read`` found: the agent, its settings (``None``: embeddings removed), the key, the sources."""

    agent: Agent
    settings: EmbeddingsSettings | None
    key: str | None
    sources: tuple[Source, ...]
    catch_up: bool


class MemoryEmbedder:
    """Handles ``memory.embed`` (see the module docstring); ``calls``: the consolidation's model calls (their
    loop, clients, policy and credentials cipher); ``batch``: how many sources a catch-up event embeds."""

    def __init__(self, calls: ModelCalls, *, bus: BusSettings = DEFAULT_BUS_SETTINGS, batch: int = BATCH_MAX) -> None:
        self.calls = calls
        self.bus = bus
        self.batch = batch

    def read(self, tx: Tx, scope: Scope, event: DomainEvent) -> EmbedInputs:
        agent = agents.get_agent(tx, scope, parse_id(event.agent_id, AgentId, field="agent_id"))
        try:
            settings = EmbeddingsSettings.of(agent)
            if settings is None:
                return EmbedInputs(agent, None, None, (), False)
            key = api_key(tx, scope, self.calls.providers.cipher, agent, settings)
        except ModelConfigError as error:
            raise DeterministicEventError(str(error)) from None
        catch_up = event.payload.get("catch_up") is True
        if catch_up:
            found = vectors.pending_sources(tx, scope, agent.id, model=settings.model, limit=self.batch)
        else:
            named = event.payload.get("sources")
            ids = [s for s in named if isinstance(s, str)][:SOURCES_MAX] if isinstance(named, list) else []
            found = vectors.pending_of(tx, scope, agent.id, model=settings.model, ids=ids)
        return EmbedInputs(agent, settings, key, tuple(found), catch_up)

    def compute(self, inputs: EmbedInputs) -> Embedded | None:
        if inputs.settings is None or not inputs.sources:
            return None
        return self.calls.run(self._embed(inputs.settings, inputs.key, [s.text for s in inputs.sources]))

    async def _embed(self, settings: EmbeddingsSettings, key: str | None, texts: Sequence[str]) -> Embedded:
        providers = self.calls.providers
        found: list[bytes] = []
        used: Usage | None = None
        for start in range(0, len(texts), BATCH_MAX):
            part = await embed(providers.clients, providers.policy, settings, key, texts[start:start + BATCH_MAX])
            found.extend(part.vectors)
            if part.usage is not None:
                used = add(used, part.usage)
        return Embedded(tuple(found), used)

    def write(self, tx: Tx, scope: Scope, event: DomainEvent, inputs: EmbedInputs, result: Embedded | None) -> int:
        if result is None or inputs.settings is None:
            return 0
        settings, agent = inputs.settings, inputs.agent
        written = vectors.store_vectors(tx, scope, agent.id, model=settings.model,
                                        vectors=list(zip(inputs.sources, result.vectors, strict=True)))
        if result.usage is not None:
            telemetry.record_usage(tx, telemetry.UsageRecord(
                model=settings.model, input_tokens=result.usage.prompt_tokens, output_tokens=0,
                tenant_id=agent.tenant_id, agent_id=agent.id, provider=OPENAI,
                run_id=f"embedding-{secrets.token_hex(8)}"))
        if inputs.catch_up and len(inputs.sources) >= self.batch:
            publish_embedding_due(tx, scope, agent, catch_up=True, settings=self.bus)
        return written
