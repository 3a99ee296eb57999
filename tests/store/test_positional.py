"""Statements bound by position: the values reach the right columns on both engines, and a declared order
that differs from the SQL's own is refused before anything runs."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from agentfy.store.db import Database, Positional
from agentfy.store.repos import agents
from agentfy.store.schema import agents as agents_table
from tests.helpers.tenants import make_tenant
from tests.store.helpers import new_agent

_BY_KEY_AND_ID = sa.select(agents_table.c.agent_key).where(agents_table.c.tenant_id == sa.bindparam("tenant_id"),
                                                          agents_table.c.id == sa.bindparam("id"))
IN_ORDER = Positional(_BY_KEY_AND_ID, ("tenant_id", "id"))
SWAPPED = Positional(_BY_KEY_AND_ID, ("id", "tenant_id"))
WITH_OWN_VALUE = Positional(sa.update(agents_table).where(agents_table.c.id == sa.bindparam("id"))
                            .values(display_name="fixed"), ("id",))


def test_positional_values_reach_their_columns(db: Database) -> None:
    tenant = make_tenant(db, "positional").scope
    agent = new_agent(db, tenant, "positional")
    with db.transaction(write=False) as tx:
        assert tx.one(IN_ORDER, (tenant.tenant_id, agent.id)) == ("positional",)
        assert tx.one(IN_ORDER, (agent.id, tenant.tenant_id)) is None  # swapped values match nothing
        assert agents.resolve_agent(tx, tenant, agent.id).agent_key == "positional"


def test_a_declared_order_unlike_the_sql_is_refused_naming_both(db: Database) -> None:
    tenant = make_tenant(db, "positional").scope
    with pytest.raises(ValueError, match=r"order \('tenant_id', 'id'\), not \('id', 'tenant_id'\)"), \
            db.transaction(write=False) as tx:
        tx.one(SWAPPED, (tenant.tenant_id, "agent-x"))


def test_a_positional_statement_may_not_bind_its_own_values(db: Database) -> None:
    with pytest.raises(ValueError, match=r"takes every value as a parameter; it binds \['display_name'\]"), \
            db.transaction() as tx:
        tx.execute(WITH_OWN_VALUE, ("agent-x",))
