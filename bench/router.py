"""Benchmark of the agent router's cache.

Run: ``make bench`` (or ``.venv/bin/python -m bench.router``).  In one process, on an embedded SQLite
database with 1,000 agents in one tenant:

* ``Router.get`` by key and by ID on a warm cache vs a plain ``dict`` look-up of the same loops (the floor:
  what any cache in Python costs);
* the same vs an uncached store look-up (``resolve_agent`` in a read transaction), which is what a request
  would pay without the router.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

from agentfy.agents.router import Router
from agentfy.identity import Scope
from agentfy.identity.context import RequestContext
from agentfy.store.db import Database
from agentfy.store.migrate import upgrade
from agentfy.store.repos import agents, orgs
from bench.harness import compare, header
from bench.verdicts import report

AGENTS = 1000


def router_by(router: Router, ctx: RequestContext, values: list[str]) -> Callable[[int], None]:
    """``run(n)``: cached ``Router.get`` of the first ``n`` values."""
    def run(n: int) -> None:
        get = router.get
        for value in values[:n]:
            get(ctx, value)
    return run


def dict_lookup(plain: dict[tuple[str, str], object], tenant: str, keys: list[str]) -> Callable[[int], None]:
    """``run(n)``: the floor the goal sets, an inline ``d[(tenant, value)]`` of the first ``n`` keys."""
    def run(n: int) -> None:
        for key in keys[:n]:
            plain[(tenant, key)]
    return run


def store_by(db: Database, scope: Scope, values: list[str]) -> Callable[[int], None]:
    """``run(n)``: the uncached store look-up (``resolve_agent`` in a read transaction) of the first ``n``."""
    def run(n: int) -> None:
        for value in values[:n]:
            with db.transaction(write=False) as tx:
                agents.resolve_agent(tx, scope, value)
    return run


def main() -> None:
    header("agentfy.agents.Router: cached resolution vs a dict and vs the store")
    with tempfile.TemporaryDirectory() as tmp:
        db = Database(f"sqlite:///{Path(tmp) / 'bench.db'}")
        upgrade(db)
        with db.transaction() as tx:
            scope = Scope(orgs.create_organization(tx, slug="bench", name="Bench").id)
            made = [agents.create_agent(tx, scope, agent_key=f"agent-{i}") for i in range(AGENTS)]
        ctx = RequestContext(tenant_id=scope.tenant_id)
        router = Router(db, ttl=3600)
        for agent in made:
            router.get(ctx, agent.agent_key)
        keys = [a.agent_key for a in made]
        ids = [a.id for a in made]
        plain: dict[tuple[str, str], object] = {(scope.tenant_id, a.agent_key): router.get(ctx, a.id) for a in made}
        tenant = scope.tenant_id
        floor = dict_lookup(plain, tenant, keys)

        results = [
            compare("Router.get by key (cached)", router_by(router, ctx, keys), floor, n=AGENTS, rounds=9,
                    baseline_label="d[(tenant, value)]", goal=0.5),
            compare("Router.get by ID (cached)", router_by(router, ctx, ids), floor, n=AGENTS, rounds=9,
                    baseline_label="d[(tenant, value)]", goal=0.5),
            compare("Router.get by key (cached)", router_by(router, ctx, keys), store_by(db, scope, keys), n=AGENTS,
                    rounds=5, baseline_label="uncached store look-up"),
            compare("Router.get by ID (cached)", router_by(router, ctx, ids), store_by(db, scope, ids), n=AGENTS,
                    rounds=5, baseline_label="uncached store look-up"),
        ]
        for result in results:
            report("router", result)
        db.dispose()


if __name__ == "__main__":
    main()
