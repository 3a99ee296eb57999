"""The orphan scan finds every kind of bad ID value, on both engines, and the CLI exits 1 on findings."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from agentfy.cli import app
from agentfy.ids import NIL_UUID, format_id
from agentfy.store.db import Database
from agentfy.store.orphans import id_columns, scan
from tests.helpers.tenants import make_tenant
from tests.store.helpers import new_agent

runner = CliRunner()


def _span(db: Database, agent_id: str, tenant_id: str | None = None) -> None:
    with db.transaction() as tx:
        tx.execute("INSERT INTO spans (span_id, trace_id, tenant_id, agent_id, name, started_at, duration_ms, "
                   "attributes) VALUES (:span, 't', :tenant, :agent, 'x', 'now', 1.0, '{}')",
                   {"span": format_id("skill")[-12:] + agent_id[-4:], "tenant": tenant_id, "agent": agent_id})


def test_a_clean_database_has_no_findings(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    agent = new_agent(db, acme, "bot")
    _span(db, agent.id, acme.tenant_id)
    assert scan(db) == []


def test_nil_uuid_invalid_ids_and_dangling_soft_references_are_found(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    ghost = format_id("agent")
    _span(db, NIL_UUID)
    _span(db, "goctech-leader")
    _span(db, "team-calm-rivers-k8m4p2d7n9x3")
    _span(db, ghost)
    with db.transaction() as tx:
        tx.execute("UPDATE organizations SET default_agent_id = :ghost WHERE id = :org",
                   {"ghost": ghost, "org": acme.tenant_id})
    found = {(f.table, f.column, f.problem): f for f in scan(db)}
    assert found[("spans", "agent_id", "nil UUID")].count == 1
    invalid = found[("spans", "agent_id", "not a valid agent ID")]
    assert invalid.count == 2 and "'goctech-leader'" in invalid.examples
    assert found[("spans", "agent_id", "points at nothing in agents.id")].count == 4  # every value above
    assert found[("organizations", "default_agent_id", "points at nothing in agents.id")].examples == [repr(ghost)]


def test_one_organizations_scan_sees_only_its_rows_and_leaves_out_shared_tables(db: Database) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    acmes = new_agent(db, acme, "bot")
    _span(db, "goctech-leader", globex.tenant_id)
    _span(db, acmes.id, globex.tenant_id)  # globex's span naming acme's agent: wrong for globex
    with db.transaction() as tx:  # organizations is shared: no organization's scan reads it
        tx.execute("UPDATE organizations SET default_agent_id = :ghost WHERE id = :org",
                   {"ghost": format_id("agent"), "org": acme.tenant_id})
    assert scan(db, tenant_id=acme.tenant_id) == []
    theirs = {(f.table, f.column, f.problem): f.examples for f in scan(db, tenant_id=globex.tenant_id)}
    assert theirs[("spans", "agent_id", "not a valid agent ID")] == ["'goctech-leader'"]
    assert repr(acmes.id) in theirs[("spans", "agent_id", "points at nothing in agents.id")]
    assert not any(table == "organizations" for table, _, _ in theirs)
    everyone = {(f.table, f.column, f.problem): f.examples for f in scan(db)}
    assert repr(acmes.id) not in everyone[("spans", "agent_id", "points at nothing in agents.id")]


def test_foreign_key_columns_are_checked_too_when_enforcement_was_off(sqlite_db: Database) -> None:
    acme = make_tenant(sqlite_db, "acme").scope
    new_agent(sqlite_db, acme, "bot")
    with sqlite_db.engine.connect() as connection:  # a file written by a client that forgot the pragma
        connection.exec_driver_sql("PRAGMA foreign_keys = OFF")
        connection.exec_driver_sql("DELETE FROM organizations")
        connection.commit()
    problems = {(f.table, f.column, f.problem) for f in scan(sqlite_db)}
    assert ("agents", "tenant_id", "points at nothing in organizations.id") in problems


def test_every_id_column_of_the_schema_is_scanned() -> None:
    columns = {(c.table, c.column) for c in id_columns()}
    assert {("agents", "id"), ("agents", "tenant_id"), ("spans", "agent_id"), ("organizations", "default_agent_id"),
            ("team_tasks", "created_by_agent_id"), ("kg_relations", "source_entity_id")} <= columns
    assert not any(table == "org_audit" for table, _ in columns)  # history is not scanned


def test_cli_exits_1_with_a_table_or_json_when_it_finds_orphans(db_url: str) -> None:
    db = Database(db_url)
    try:
        assert runner.invoke(app, ["db", "scan-orphans", "--database-url", db_url]).exit_code == 0
        _span(db, NIL_UUID)
    finally:
        db.dispose()
    result = runner.invoke(app, ["db", "scan-orphans", "--database-url", db_url])
    assert result.exit_code == 1 and "nil UUID" in result.stdout
    result = runner.invoke(app, ["db", "scan-orphans", "--database-url", db_url, "--json"])
    assert result.exit_code == 1
    assert {"table": "spans", "column": "agent_id", "problem": "nil UUID", "count": 1,
            "examples": [repr(NIL_UUID)]} in json.loads(result.stdout)
