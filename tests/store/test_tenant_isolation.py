"""Property: random operations by two tenants that share agent keys never let one tenant read, change or
delete the other's rows (a stateful hypothesis test, on both engines)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test

from agentfy.identity import Scope
from agentfy.store.db import Database
from agentfy.store.errors import ConflictError, NotFoundError
from agentfy.store.repos import agents, orgs

KEYS = st.sampled_from(["bot", "tieu-ho", "helper", "x", "robot", "my-bot"])
TENANTS = st.sampled_from([0, 1])
_slugs = itertools.count()


class TwoTenants(RuleBasedStateMachine):
    db: Database

    def __init__(self) -> None:
        super().__init__()
        self.scopes: list[Scope] = []
        self.model: list[dict[str, str]] = [{}, {}]  # per tenant: agent_key -> agent ID

    @initialize()
    def tenants(self) -> None:
        with self.db.transaction() as tx:
            for _ in range(2):
                org = orgs.create_organization(tx, slug=f"tenant-{next(_slugs)}", name="T")
                self.scopes.append(Scope(org.id))

    @rule(tenant=TENANTS, key=KEYS)
    def create(self, tenant: int, key: str) -> None:
        if key in self.model[tenant]:
            with pytest.raises(ConflictError), self.db.transaction() as tx:
                agents.create_agent(tx, self.scopes[tenant], agent_key=key)
            return
        with self.db.transaction() as tx:
            agent = agents.create_agent(tx, self.scopes[tenant], agent_key=key)
        self.model[tenant][key] = agent.id

    @rule(tenant=TENANTS, key=KEYS, new_key=KEYS)
    def rename(self, tenant: int, key: str, new_key: str) -> None:
        if key not in self.model[tenant] or new_key in self.model[tenant]:
            return
        with self.db.transaction() as tx:
            agents.rename_agent(tx, self.scopes[tenant], self.model[tenant][key], new_key)
        self.model[tenant][new_key] = self.model[tenant].pop(key)

    @rule(tenant=TENANTS, key=KEYS, archive=st.booleans())
    def remove(self, tenant: int, key: str, archive: bool) -> None:
        if key not in self.model[tenant]:
            return
        with self.db.transaction() as tx:
            remove = agents.archive_agent if archive else agents.delete_agent
            remove(tx, self.scopes[tenant], self.model[tenant].pop(key))

    @rule(tenant=TENANTS, key=KEYS, action=st.sampled_from(["get", "resolve", "rename", "update", "archive",
                                                             "delete"]))
    def cross_tenant_attempt(self, tenant: int, key: str, action: str) -> None:
        other = 1 - tenant
        if key not in self.model[other]:
            return
        their_id, scope = self.model[other][key], self.scopes[tenant]
        with pytest.raises(NotFoundError), self.db.transaction() as tx:
            if action == "get":
                agents.get_agent(tx, scope, their_id)
            elif action == "resolve":
                agents.resolve_agent(tx, scope, their_id)
            elif action == "rename":
                agents.rename_agent(tx, scope, their_id, "stolen")
            elif action == "update":
                agents.update_agent(tx, scope, their_id, display_name="stolen")
            elif action == "archive":
                agents.archive_agent(tx, scope, their_id)
            else:
                agents.delete_agent(tx, scope, their_id)

    @invariant()
    def each_tenant_sees_exactly_its_own_agents(self) -> None:
        if not self.scopes:
            return
        with self.db.transaction(write=False) as tx:
            for tenant, scope in enumerate(self.scopes):
                listed = {a.agent_key: a.id for a in agents.list_agents(tx, scope)}
                assert listed == self.model[tenant]
                for key, agent_id in self.model[tenant].items():
                    resolved = agents.resolve_agent(tx, scope, key)
                    assert resolved.id == agent_id and resolved.tenant_id == scope.tenant_id
                    assert resolved.display_name != "stolen"


def test_two_tenants_sharing_agent_keys_never_touch_each_other(db: Database) -> None:
    TwoTenants.db = db
    run_state_machine_as_test(TwoTenants, settings=settings(
        max_examples=20, stateful_step_count=25, deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]))
