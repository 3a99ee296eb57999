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
        plain = {(scope.tenant_id, a.agent_key): router.get(ctx, a.id) for a in made}
        tenant = scope.tenant_id

        def router_by(values: list[str]):  # type: ignore[no-untyped-def]
            def run(n: int) -> None:
                get = router.get
                for value in values[:n]:
                    get(ctx, value)
            return run

        def dict_lookup(n: int) -> None:  # the floor the issue sets: an inline d[(tenant, value)]
            for key in keys[:n]:
                plain[(tenant, key)]

        def store_by(values: list[str]):  # type: ignore[no-untyped-def]
            def run(n: int) -> None:
                for value in values[:n]:
                    with db.transaction(write=False) as tx:
                        agents.resolve_agent(tx, scope, value)
            return run

        results = [
            compare("Router.get by key (cached)", router_by(keys), dict_lookup, n=AGENTS, rounds=9,
                    baseline_label="d[(tenant, value)]", goal=0.5),
            compare("Router.get by ID (cached)", router_by(ids), dict_lookup, n=AGENTS, rounds=9,
                    baseline_label="d[(tenant, value)]", goal=0.5),
            compare("Router.get by key (cached)", router_by(keys), store_by(keys), n=AGENTS, rounds=5,
                    baseline_label="uncached store look-up"),
            compare("Router.get by ID (cached)", router_by(ids), store_by(ids), n=AGENTS, rounds=5,
                    baseline_label="uncached store look-up"),
        ]
        for result in results:
            report("router", result)
        db.dispose()


if __name__ == "__main__":
    main()
