"""The agent router: agent loops cached under the canonical key ``{tenant_id}:{agent_key}``.

The seed's section 8 and Trap 4, as invariants:

1. One entry per agent, whichever form the caller used: the canonical key is computed *after* the agent is
   resolved, and an index from ``(tenant_id, agent_id)`` to the canonical key lets callers that pass the ID
   hit the cache too, so an ID and its key never make two entries and ID callers do not pay a store round
   trip per call.
2. Every operation is tenant-scoped: the tenant comes from the request context, and a context without one
   is an error (:class:`MissingTenantError`), never a look-up by bare key.  An agent of another tenant is
   never served from the cache (its ``(tenant, id)`` pair is not there) and the store answers "not found".
3. Invalidation is an exact match on the whole canonical key (a dict removal): invalidating ``bot`` cannot
   touch ``robot``, ``my-bot``, or ``bot`` of another tenant.  Renaming, updating, archiving or deleting an
   agent through the store invalidates its entry (``agents.on_agent_changed``), at once and again after the
   commit.  Entries also expire after a TTL, which bounds staleness from changes made by other processes.
4. ``is_running`` is tenant-scoped: two tenants with the same key are independent.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from agentfy.agents.loop import AgentLoop
from agentfy.identity import AgentId, AgentKey, OrgId, Scope
from agentfy.identity.context import MissingTenantError, RequestContext
from agentfy.store.db import Database
from agentfy.store.repos import agents
from agentfy.store.repos.agents import Agent

DEFAULT_TTL_SECONDS: Final = 300.0
LoopFactory = Callable[[Agent], AgentLoop]


def canonical_key(tenant_id: str, agent_key: str) -> str:
    """``{tenant_id}:{agent_key}``: a tenant ID never contains ``:``, so the key splits back unambiguously."""
    return f"{tenant_id}:{agent_key}"


def _tenant(ctx: RequestContext, operation: str) -> OrgId:
    if ctx.tenant_id is None:
        raise MissingTenantError(operation)
    return ctx.tenant_id


@dataclass(slots=True)
class _Entry:
    loop: AgentLoop
    expires_at: float


class Router:
    """Agent loops by tenant and key, loaded from the store on a miss."""

    def __init__(self, db: Database, *, ttl: float = DEFAULT_TTL_SECONDS,
                 clock: Callable[[], float] = time.monotonic, loop_factory: LoopFactory = AgentLoop) -> None:
        self.db = db
        self.ttl = ttl
        self._clock = clock
        self._loop_factory = loop_factory
        self._entries: dict[str, _Entry] = {}
        self._by_id: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()
        agents.on_agent_changed(self._on_agent_changed)

    # -- look-ups -----------------------------------------------------------------------------------------
    def get_cached(self, ctx: RequestContext, id_or_key: str) -> AgentLoop | None:
        """The cached loop for an ID or key in the context's tenant, or ``None`` (never touches the store)."""
        tenant_id = _tenant(ctx, "Router.get_cached")
        key = self._by_id.get((tenant_id, id_or_key)) or canonical_key(tenant_id, id_or_key)
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry.expires_at <= self._clock():
            self._drop(key, entry)
            return None
        return entry.loop

    def get(self, ctx: RequestContext, id_or_key: str) -> AgentLoop:
        """The loop of the agent named by an ID or a key in the context's tenant (store on a miss).

        Raises what ``resolve_agent`` raises: ``NotFoundError`` (missing, or another tenant's),
        ``InvalidIdError`` / ``InvalidAgentKeyError`` for values that are neither.
        """
        loop = self.get_cached(ctx, id_or_key)
        if loop is not None:
            return loop
        tenant_id = _tenant(ctx, "Router.get")
        with self.db.transaction(write=False) as tx:
            agent = agents.resolve_agent(tx, Scope(tenant_id), id_or_key)
        return self._store(agent)

    def _store(self, agent: Agent) -> AgentLoop:
        key = canonical_key(agent.tenant_id, agent.agent_key)
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry.loop.agent.id == agent.id and entry.expires_at > self._clock():
                return entry.loop  # another thread loaded it meanwhile: keep one loop per agent
            loop = self._loop_factory(agent)
            if entry is not None:
                self._by_id.pop((entry.loop.agent.tenant_id, entry.loop.agent.id), None)
            self._entries[key] = _Entry(loop, self._clock() + self.ttl)
            self._by_id[(agent.tenant_id, agent.id)] = key
            return loop

    def is_running(self, ctx: RequestContext, agent_key: str) -> bool:
        """Whether the agent with this key *in the context's tenant* has a run in progress."""
        loop = self.get_cached(ctx, agent_key)
        return loop is not None and loop.running

    # -- invalidation ---------------------------------------------------------------------------------------
    def invalidate_agent(self, tenant_id: str, agent_key: str) -> bool:
        """Drop exactly the entry ``{tenant_id}:{agent_key}``; ``True`` if there was one."""
        key = canonical_key(tenant_id, agent_key)
        with self._lock:
            entry = self._entries.pop(key, None)
            if entry is None:
                return False
            self._by_id.pop((entry.loop.agent.tenant_id, entry.loop.agent.id), None)
            return True

    def invalidate_tenant(self, tenant_id: str) -> int:
        """Drop every entry of one tenant (compared by the entry's tenant, not by a key prefix)."""
        with self._lock:
            doomed = [k for k, e in self._entries.items() if e.loop.agent.tenant_id == tenant_id]
            for key in doomed:
                entry = self._entries.pop(key)
                self._by_id.pop((entry.loop.agent.tenant_id, entry.loop.agent.id), None)
            return len(doomed)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._by_id.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def _drop(self, key: str, entry: _Entry) -> None:
        with self._lock:
            if self._entries.get(key) is entry:
                del self._entries[key]
                self._by_id.pop((entry.loop.agent.tenant_id, entry.loop.agent.id), None)

    def _on_agent_changed(self, scope: Scope, agent_id: AgentId, agent_key: AgentKey) -> None:
        self.invalidate_agent(scope.tenant_id, agent_key)
        with self._lock:  # the entry may sit under another key if a rename raced with a load
            key = self._by_id.pop((scope.tenant_id, agent_id), None)
            if key is not None:
                self._entries.pop(key, None)


def resolve_agent_id_cached(router: Router, ctx: RequestContext, id_or_key: str) -> AgentId:
    """The hot-path resolver: the router's cache first, the store on a miss (which then fills the cache).

    Accepts an agent ID or an ``agent_key``; tenant-scoped by the context.  The store is the router's own
    (``router.db``), so the cache and its fallback can never disagree about which database they serve.
    """
    return router.get(ctx, id_or_key).agent.id


def resolve_agent_id(db: Database, ctx: RequestContext, id_or_key: str) -> AgentId:
    """The cold-path resolver: straight to the store (no cache).  Accepts an ID or a key; tenant-scoped."""
    tenant_id = _tenant(ctx, "resolve_agent_id")
    with db.transaction(write=False) as tx:
        return agents.resolve_agent(tx, Scope(tenant_id), id_or_key).id
