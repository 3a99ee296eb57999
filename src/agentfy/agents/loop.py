"""The agent loop's run state: what the router caches for one agent of one tenant.

The router keeps one per agent: the agent record (both identities), and whether a run is in progress.
``id()`` is the display identity (the key): logs and the UI use it, storage and events use ``agent.id``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from agentfy.identity import AgentKey
from agentfy.store.repos.agents import Agent


class AgentLoop:
    """One agent's loop in one tenant; ``running`` while at least one run is active."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self._runs = 0
        self._lock = threading.Lock()

    def id(self) -> AgentKey:
        """The display identity (``agent_key``); never use it for storage (a key changes on rename and is unique
        only within a tenant)."""
        return self.agent.agent_key

    @property
    def running(self) -> bool:
        return self._runs > 0

    @contextmanager
    def run(self) -> Iterator[AgentLoop]:
        """Mark a run in progress for the enclosed block."""
        with self._lock:
            self._runs += 1
        try:
            yield self
        finally:
            with self._lock:
                self._runs -= 1

    def __repr__(self) -> str:
        return f"AgentLoop(tenant={self.agent.tenant_id!r}, agent={self.agent.agent_key!r}, running={self.running})"
