"""Checking an agent's model: one tiny call through the runtime's own :class:`~agentfy.runtime.providers.Providers`,
so a check passes exactly when a run would reach the model (the same configuration, credential and key).

Why a module of its own: ``POST /v1/agents/{agent}/model/check`` and ``agentfy agents model check`` both call
:func:`check_model`, so the two cannot differ in what they test.  Nothing is stored: no session, no usage.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Final

import httpx

from agentfy.identity import Scope
from agentfy.runtime.model import ChatMessage, ModelError, ModelProvider, ModelRequest
from agentfy.runtime.providers import OFFLINE, ModelSettings, Providers
from agentfy.store.db import Database
from agentfy.store.repos.agents import Agent

#: The prompt of a check: as small as a model accepts, so a check costs a few tokens.
CHECK_PROMPT: Final = "Reply with the word ok."
#: A check waits this long for the model (a run may wait longer; a check should answer quickly).
CHECK_TIMEOUT_SECONDS: Final = 30.0


@dataclass(frozen=True, slots=True)
class ModelCheck:
    """A check that passed: the model named by the configuration and how long its answer took."""

    model: str
    latency_ms: int


async def check_model(db: Database, providers: Providers, agent: Agent, *,
                      timeout: float = CHECK_TIMEOUT_SECONDS) -> ModelCheck:
    """Call ``agent``'s model once with :data:`CHECK_PROMPT`.  A configuration that cannot be used is
    :class:`~agentfy.runtime.providers.ModelConfigError`; a model that does not answer,
    :class:`~agentfy.runtime.model.ModelError` (``timed_out`` past ``timeout`` seconds).  Its messages never
    carry the credential."""
    settings = ModelSettings.of(agent)
    scope = Scope(agent.tenant_id)

    provider = await asyncio.to_thread(providers_for, db, providers, scope, agent, settings)
    request = ModelRequest("", [ChatMessage("user", CHECK_PROMPT)], agent_key=agent.agent_key)
    started = time.monotonic()
    try:
        await asyncio.wait_for(provider.complete(request), timeout)
    except TimeoutError:
        raise ModelError(f"the model did not answer within {timeout:g} seconds", timed_out=True) from None
    except httpx.InvalidURL:
        raise ModelError(f"no request can be sent to the model at {settings.base_url!r:.200}") from None
    latency_ms = round((time.monotonic() - started) * 1000)
    return ModelCheck(model=settings.model or OFFLINE, latency_ms=latency_ms)


def providers_for(db: Database, providers: Providers, scope: Scope, agent: Agent,
                  settings: ModelSettings) -> ModelProvider:
    """Worker thread: the agent's provider, its credential read in a transaction of the agent's tenant."""
    with db.transaction(write=False) as tx:
        return providers.for_agent(tx, scope, agent, settings)
