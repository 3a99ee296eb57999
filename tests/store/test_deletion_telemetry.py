"""Deletion and the references without an FK: telemetry is anonymised (agent) or removed (tenant)."""

from __future__ import annotations

from agentfy.events.outbox import publish
from agentfy.store.db import Database
from agentfy.store.orphans import scan
from agentfy.store.repos import agents, orgs
from tests.helpers.tenants import make_tenant
from tests.store.helpers import new_agent


def _telemetry(db: Database, tenant_id: str, agent_id: str, n: int) -> None:
    with db.transaction() as tx:
        tx.execute("INSERT INTO traces (trace_id, tenant_id, agent_id, name, started_at) "
                   "VALUES (:t, :tenant, :agent, 'turn', 'now')",
                   {"t": f"t{n}", "tenant": tenant_id, "agent": agent_id})
        tx.execute("INSERT INTO spans (span_id, trace_id, tenant_id, agent_id, name, started_at, duration_ms, "
                   "attributes) VALUES (:s, :t, :tenant, :agent, 'llm', 'now', 1.5, '{}')",
                   {"s": f"s{n}", "t": f"t{n}", "tenant": tenant_id, "agent": agent_id})
        tx.execute("INSERT INTO usage_snapshots (tenant_id, agent_id, model, input_tokens, output_tokens, "
                   "recorded_at) VALUES (:tenant, :agent, 'm', 1, 2, 'now')", {"tenant": tenant_id, "agent": agent_id})


def _agent_ids(db: Database, table: str) -> list[object]:
    with db.transaction(write=False) as tx:
        return [row[0] for row in tx.all(f"SELECT agent_id FROM {table} ORDER BY agent_id")]


def test_deleting_an_agent_anonymises_its_telemetry_and_leaves_no_dangling_reference(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    doomed, kept = new_agent(db, acme, "doomed"), new_agent(db, acme, "kept")
    _telemetry(db, acme.tenant_id, doomed.id, 1)
    _telemetry(db, acme.tenant_id, kept.id, 2)
    with db.transaction() as tx:
        agents.delete_agent(tx, acme, doomed.id)
    for table in ("traces", "spans", "usage_snapshots"):
        assert sorted(_agent_ids(db, table), key=str) == sorted([None, kept.id], key=str)
    assert scan(db) == []


def test_deleting_an_organization_removes_its_telemetry_and_keeps_the_others(db: Database) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    a, g = new_agent(db, acme, "bot"), new_agent(db, globex, "bot")
    _telemetry(db, acme.tenant_id, a.id, 1)
    _telemetry(db, globex.tenant_id, g.id, 2)
    for scope, agent in ((acme, a), (globex, g)):
        with db.transaction() as tx:
            publish(tx, type="session.completed", tenant_id=scope.tenant_id, source_id="s", agent_id=agent.id)
    with db.transaction() as tx:
        orgs.delete_organization(tx, acme.tenant_id)
    for table in ("traces", "spans", "usage_snapshots", "event_outbox"):
        assert _agent_ids(db, table) == [g.id]
    assert scan(db) == []
