"""``memory.embed``: memory that waits for its vectors, published in the transaction that wrote it.

A memory document written (``remember``, the memory flush, the API's batch upsert, dreaming) or an episodic
summary created is embedded afterwards, by the ``memory.embed`` handler of the event workers
(:mod:`agentfy.runtime.memory_embedder`): the embeddings call is a network call, and none may hold the write's
transaction.  The event commits with the write, so nothing written is forgotten, and a write never waits for
or fails with the embeddings model: a failing call is retried with the bus's backoff and, after its
attempts, dead-lettered (``agentfy events dead-letters --type memory.embed``).

Published only for an agent whose configuration names an embeddings model (``config.embeddings``); the
payload lists the sources written (``{"sources": [id, …]}``), or says ``{"catch_up": true}``: embed whatever
of the agent's memory has no current vector of its model (after the embeddings are configured or changed),
a batch per event, each batch publishing the next.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Final

from agentfy.events.outbox import publish
from agentfy.events.settings import DEFAULT_BUS_SETTINGS, BusSettings
from agentfy.identity import Scope
from agentfy.store.db import Tx
from agentfy.store.errors import NotFoundError
from agentfy.store.repos import agents
from agentfy.store.repos.agents import Agent

MEMORY_EMBED: Final = "memory.embed"
#: The agent configuration's key that names the embeddings model (:mod:`agentfy.runtime.embeddings` reads it).
EMBEDDINGS_KEY: Final = "embeddings"


def embeddings_configured(agent: Agent) -> bool:
    """Whether the agent's configuration names an embeddings model (checked when it is used, not here)."""
    return isinstance(agent.config, dict) and agent.config.get(EMBEDDINGS_KEY) is not None


def publish_embedding_due(tx: Tx, scope: Scope, agent: Agent | str, sources: Sequence[str] = (), *,
                          catch_up: bool = False, settings: BusSettings = DEFAULT_BUS_SETTINGS) -> bool:
    """In the writing transaction: queue the embedding of ``sources`` (or, with ``catch_up``, of whatever
    waits) when the agent (an :class:`Agent`, or its ID: read in ``tx``) has embeddings configured; returns
    whether an event was published."""
    try:
        found = agent if isinstance(agent, Agent) else agents.get_agent(tx, scope, agent)
    except NotFoundError:
        return False  # the writer's own check reports a missing agent; no vector is due for it
    if not embeddings_configured(found) or not (sources or catch_up):
        return False
    payload: dict[str, object] = {"catch_up": True} if catch_up else {"sources": list(sources)}
    return publish(tx, type=MEMORY_EMBED, tenant_id=scope.tenant_id, source_id=f"embed-{secrets.token_hex(10)}",
                   agent_id=found.id, payload=payload, settings=settings) is not None
