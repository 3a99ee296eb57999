"""The agent router: agent loops by tenant and ``agent_key`` (or ID), cached, and kept correct by the change feed.

Invariants:

1. **One entry per agent**, whichever form the caller used: an entry is stored under ``(tenant_id, agent_key)``
   and ``(tenant_id, agent_id)`` at once, *after* the agent is resolved, so an ID and its key never make two
   entries and ID callers hit the cache too.  The canonical name of an entry is ``{tenant_id}:{agent_key}``.
2. **Every operation is tenant-scoped**: the tenant comes from the request context, and a context without one
   is an error (:class:`MissingTenantError`), never a look-up by bare key.  Another tenant's agent is never
   served (its ``(tenant, id)`` pair is not there) and the store answers "not found".
3. **Invalidation is exact** (a dict removal of the entry's own keys): invalidating ``bot`` cannot touch
   ``robot``, ``my-bot``, or ``bot`` of another tenant.  The change feed drives it: a change made in this
   process drops the entry at once and again after its commit; a change made by another process drops it
   when its notification arrives; a lost feed connection flushes everything and stops caching until it is
   back.  A load that raced with an invalidation of its tenant is returned but not cached (a per-tenant
   generation), so an old row can never be cached after the change that made it old.  Entries also expire
   after a TTL, a backstop only: a timer sweeps them (:meth:`Router.sweep`), so a look-up is one dict access.
   Neither a sweep nor a tenant's invalidation walks the whole cache: entries are kept in the order they were
   cached, which is the order they expire in (the TTL is one constant and the clock monotonic), so a sweep
   stops at the first live entry; and each tenant's entries and loops have an index of their own, so
   deleting an organization costs what it drops, not what the router holds (at a million cached agents a
   walk under the lock stalled every miss and every change notification for seconds).
4. **Run state is not cache state.**  Loops live in their own registry by ``(tenant_id, agent_id)``: dropping,
   expiring or refreshing a cache entry — a rename, an update, a reconnect — keeps the loop (its ``running``
   state, and the one-loop-per-agent rule).  The registry holds loops weakly: a loop stays while a cache
   entry, a run or any caller holds it, so two loops of one agent can never exist at once, and an idle
   agent nobody holds costs nothing.  Deleting or archiving an agent, or deleting its organization, takes
   its loop out of the registry at once.
5. ``is_running`` is tenant-scoped: two tenants with the same key are independent.

The cache serves **reads**.  A write resolves its target in its own transaction, from the database
(:func:`agentfy.store.repos.agents.resolve_agent`), never from here: another process may have renamed or
deleted the agent a moment ago.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Final, NamedTuple

from agentfy.agents.loop import AgentLoop
from agentfy.identity import OrgId, Scope, parse_id
from agentfy.identity.context import MissingTenantError, RequestContext
from agentfy.store.changefeed import Change
from agentfy.store.db import Database
from agentfy.store.errors import NotFoundError
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


class _Entry(NamedTuple):
    """A cached agent's bookkeeping: which keys name it and when it expires."""

    loop: AgentLoop
    tenant_id: str
    agent_id: str
    agent_key: str
    expires_at: float


class Router:
    """Agent loops by tenant and key (or ID), loaded from the store on a miss."""

    def __init__(self, db: Database, *, ttl: float = DEFAULT_TTL_SECONDS,
                 clock: Callable[[], float] = time.monotonic, loop_factory: LoopFactory = AgentLoop) -> None:
        self.db = db
        self.ttl = ttl
        #: For ``/metrics``: hits of :meth:`get_cached` (the gateway's reads) and look-ups that went to the
        #: store.  :meth:`get`'s hits are not counted: an increment costs a fifth of that hot path.
        self.hits = 0
        self.misses = 0
        self._clock = clock
        self._loop_factory = loop_factory
        # (tenant, key) and (tenant, id) -> the same entry (the bookkeeping: expiry, exact invalidation)
        self._entries: dict[tuple[str, str], _Entry] = {}
        # the same keys -> the entry's loop, kept in step with _entries under the lock: the hot path's one
        # subscript.  A None tenant is never stored, only looked up (and then missed).
        self._hits: dict[tuple[str | None, str], AgentLoop] = {}
        # (tenant, agent id) -> the agent's entry, in the order cached, which is expiry order (see the module
        # docstring): the sweep's queue and the cache's size
        self._expiry: OrderedDict[tuple[str, str], _Entry] = OrderedDict()
        # tenant -> agent ids of its entries (dropping a tenant costs what it drops)
        self._by_tenant: dict[str, set[str]] = {}
        # tenant -> agent id -> run state, held weakly (see the module docstring)
        self._loops: dict[str, weakref.WeakValueDictionary[str, AgentLoop]] = {}
        self._generations: dict[str, int] = {}  # per tenant, bumped by every invalidation
        self._epoch = 0  # bumped by every flush
        self._lock = threading.Lock()
        self._sweeper: threading.Timer | None = None
        db.changes.on_stale(self._on_change)
        db.changes.on_reset(self._on_reset)

    # -- look-ups -----------------------------------------------------------------------------------------
    def get_cached(self, ctx: RequestContext, id_or_key: str) -> AgentLoop | None:
        """The cached loop for an ID or key in the context's tenant, or ``None`` (never touches the store)."""
        tenant_id = ctx.tenant_id
        if tenant_id is None:
            raise MissingTenantError("Router.get_cached")
        loop = self._hits.get((tenant_id, id_or_key))
        if loop is not None:
            self.hits += 1
        return loop

    def get(self, ctx: RequestContext, id_or_key: str) -> AgentLoop:
        """The loop of the agent named by an ID or a key in the context's tenant (store on a miss).

        Raises what ``resolve_agent`` raises: ``NotFoundError`` (missing, or another tenant's),
        ``InvalidIdError`` / ``InvalidAgentKeyError`` for values that are neither; a context without a tenant
        is :class:`MissingTenantError` (its ``(None, value)`` is never cached, so it always reaches the miss
        path, which checks).  The hot path is one dict look-up: expiry is checked by :meth:`sweep`, a few times
        per TTL, not here.  (A subscript in ``try`` is the cheapest hit in CPython 3.11+; the miss leaves the
        ``except`` before loading so a store error is not chained to a ``KeyError``.)
        """
        try:
            return self._hits[(ctx.tenant_id, id_or_key)]
        except KeyError:
            pass
        return self._load(ctx, id_or_key)

    def _load(self, ctx: RequestContext, id_or_key: str) -> AgentLoop:
        self.misses += 1
        tenant_id = _tenant(ctx, "Router.get")
        stamp = self._stamp(tenant_id)
        with self.db.transaction(write=False) as tx:
            agent = agents.resolve_agent(tx, Scope(tenant_id), id_or_key)
        return self._store(agent, stamp)

    def _stamp(self, tenant_id: str) -> tuple[int, int]:
        return self._epoch, self._generations.get(tenant_id, 0)

    def _store(self, agent: Agent, stamp: tuple[int, int]) -> AgentLoop:
        """The agent's loop (one per agent: an existing one gets the fresher record); cached only if nothing
        invalidated the tenant since ``stamp`` was taken before the load, and the feed is live."""
        tenant_id, agent_id = agent.tenant_id, agent.id
        with self._lock:
            loops = self._loops.get(tenant_id)
            if loops is None:
                loops = self._loops[tenant_id] = weakref.WeakValueDictionary()
            loop = loops.get(agent_id)
            if loop is None:
                loop = loops[agent_id] = self._loop_factory(agent)
            elif agent.updated_at >= loop.agent.updated_at:
                loop.agent = agent
            if stamp != self._stamp(tenant_id) or not self.db.changes.cacheable:
                return loop
            current = self._entries.get((tenant_id, agent_id))
            if current is not None:
                self._drop_keys(current)
            entry = _Entry(loop, tenant_id, agent_id, agent.agent_key, self._clock() + self.ttl)
            for key in ((tenant_id, agent.agent_key), (tenant_id, agent_id)):
                self._entries[key] = entry
                self._hits[key] = loop
            self._expiry[(tenant_id, agent_id)] = entry  # dropped above if it was there: now last in line
            self._by_tenant.setdefault(tenant_id, set()).add(agent_id)
            if self._sweeper is None and self._clock is time.monotonic:
                self._sweeper = _schedule_sweeps(self)
            return loop

    def sweep(self) -> int:
        """Drop the entries past their TTL (the backstop for a change nobody heard of); returns how many.  Runs
        on a timer a few times per TTL; tests with their own clock call it.  Costs what it drops: entries
        expire in the order they were cached, so it stops at the first one still live."""
        now = self._clock()
        dropped = 0
        with self._lock:
            while self._expiry:
                entry = next(iter(self._expiry.values()))
                if entry.expires_at > now:
                    break
                self._drop_keys(entry)
                loops = self._loops.get(entry.tenant_id)
                if loops is not None and not loops:  # an idle tenant's empty registry goes with its last entry
                    del self._loops[entry.tenant_id]
                dropped += 1
        return dropped

    def is_running(self, ctx: RequestContext, agent_key: str) -> bool:
        """Whether the agent with this key (or ID) *in the context's tenant* has a run in progress.  The run
        state outlives cache entries, so an uncached agent is looked up rather than reported idle."""
        try:
            return self.get(ctx, agent_key).running
        except NotFoundError:
            return False

    # -- invalidation ---------------------------------------------------------------------------------------
    def invalidate_agent(self, tenant_id: str, agent_key: str) -> bool:
        """Drop exactly the entry ``{tenant_id}:{agent_key}``; ``True`` if there was one.  ``tenant_id`` must be
        an organization ID (anything else is a caller bug that would silently invalidate nothing)."""
        tenant_id = parse_id(tenant_id, "org", field="tenant_id")
        with self._lock:
            self._bump(tenant_id)
            entry = self._entries.get((tenant_id, agent_key))
            if entry is None:
                return False
            self._drop_keys(entry)
            return True

    def invalidate_tenant(self, tenant_id: str) -> int:
        """Drop every entry *and loop* of one tenant (its organization was deleted); returns the entries
        dropped.  ``tenant_id`` must be an organization ID."""
        tenant_id = parse_id(tenant_id, "org", field="tenant_id")
        with self._lock:
            self._bump(tenant_id)
            doomed = [self._expiry[(tenant_id, agent_id)] for agent_id in self._by_tenant.get(tenant_id, ())]
            for entry in doomed:
                self._drop_keys(entry)
            self._loops.pop(tenant_id, None)
            return len(doomed)

    def clear(self) -> None:
        """Drop every cache entry (run state stays: a loop somebody holds is still the agent's loop)."""
        with self._lock:
            self._epoch += 1
            self._entries.clear()
            self._hits.clear()
            self._expiry.clear()
            self._by_tenant.clear()

    def __len__(self) -> int:
        """The number of cached agents."""
        return len(self._expiry)

    # -- internals (call with the lock held) -----------------------------------------------------------------
    def _bump(self, tenant_id: str) -> None:
        self._generations[tenant_id] = self._generations.get(tenant_id, 0) + 1

    def _drop_keys(self, entry: _Entry) -> None:
        for key in ((entry.tenant_id, entry.agent_key), (entry.tenant_id, entry.agent_id)):
            if self._entries.get(key) is entry:
                del self._entries[key]
                del self._hits[key]
        if self._expiry.get((entry.tenant_id, entry.agent_id)) is entry:
            del self._expiry[(entry.tenant_id, entry.agent_id)]
            ids = self._by_tenant[entry.tenant_id]
            ids.discard(entry.agent_id)
            if not ids:
                del self._by_tenant[entry.tenant_id]

    def _invalidate_agent_change(self, change: Change) -> None:
        tenant_id, agent_id = change.tenant_id or "", change.id or ""
        with self._lock:
            self._bump(tenant_id)
            for name in (agent_id, change.key, change.previous_key):
                if name:
                    entry = self._entries.get((tenant_id, name))
                    if entry is not None:
                        self._drop_keys(entry)
            if change.op in ("archived", "deleted"):
                loops = self._loops.get(tenant_id)
                if loops is not None:
                    loops.pop(agent_id, None)

    # -- the change feed -------------------------------------------------------------------------------------
    def _on_change(self, change: Change) -> None:
        if change.kind == "agent" and change.tenant_id:
            self._invalidate_agent_change(change)
        elif change.kind == "org" and change.op == "deleted" and change.tenant_id:
            self.invalidate_tenant(change.tenant_id)

    def _on_reset(self, _reason: str) -> None:
        self.clear()


def _schedule_sweeps(router: Router) -> threading.Timer:
    """A daemon timer sweeping ``router`` every quarter TTL while it lives (held weakly: a router nobody uses
    any more is collected, and its timer stops)."""
    ref = weakref.ref(router)
    interval = max(router.ttl / 4, 1.0)

    def tick() -> None:
        alive = ref()
        if alive is None:
            return
        alive.sweep()
        alive._sweeper = _schedule_sweeps(alive)

    timer = threading.Timer(interval, tick)
    timer.daemon = True
    timer.start()
    return timer
