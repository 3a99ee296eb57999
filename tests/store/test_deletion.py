"""Deleting an agent, a team or an organization always succeeds and leaves no dangling row (both engines).

One rich graph per tenant (agents a, b, c; vault and memory documents, knowledge graph, summaries, a team
led by a with tasks, attachments and an API key, links both ways, MCP servers, cron jobs, grants, sessions,
a skill, the organization's default agent, members, policies, credentials), built identically in a second
tenant whose agents have the same keys.  Each deletion is checked three ways: the deleted entity's ID
appears in no column of any table; the database has no reference to a missing row (every foreign key, plus
``organizations.default_agent_id``, which has none); and the other tenant's rows are byte-for-byte as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
import sqlalchemy as sa

from agentfy.identity import Scope
from agentfy.ids import format_id
from agentfy.store.db import Database, Tx, now
from agentfy.store.errors import NotFoundError
from agentfy.store.orphans import scan
from agentfy.store.repos import (
    agents,
    api_keys,
    channel_access,
    channels,
    cron,
    invitations,
    links,
    orgs,
    permissions,
    prices,
    sessions,
    skills,
    tasks,
    teams,
)
from agentfy.store.repos.credentials import CredentialCipher
from agentfy.store.schema import metadata
from tests.helpers.tenants import make_tenant
from tests.store.helpers import new_agent

GROUP = "group:telegram:-100123"
#: Tables keyed by tenant but deliberately without a foreign key (history and telemetry, kept or anonymised
#: rather than cascaded). The audit log keeps what it recorded; telemetry is anonymised or removed, and the event outbox
#: (messages; a delivered event is history) goes with its tenant, which test_deletion_telemetry.py checks.
UNOWNED_TENANT_TABLES = frozenset({"org_audit", "traces", "spans", "usage_snapshots", "event_outbox"})


@dataclass
class Graph:
    scope: Scope
    a: str
    b: str
    c: str
    a_notes: str  # A's vault document
    a_shared: str  # A's vault document at the same path as B's
    b_shared: str
    team: str
    other_team: str
    api_key: str
    task_by_a_for_b: str
    task_for_a: str
    other_task: str
    attachment_of_a_doc: str
    attachment_of_b_doc: str
    link_b_c: str
    b_session: str


def _raw(tx: Tx, table: str, **values: Any) -> None:
    """A row written directly (these repositories belong to other modules)."""
    names = ", ".join(values)
    tx.execute(f"INSERT INTO {table} ({names}) VALUES ({', '.join(':' + n for n in values)})", values)


def _vault(tx: Tx, scope: Scope, agent_id: str, path: str) -> str:
    document_id = tx.db.mint("vault-document")
    _raw(tx, "vault_documents", id=document_id, tenant_id=scope.tenant_id, agent_id=agent_id, path=path,
         content_type="text/markdown", size=5, content=b"hello", created_at=now())
    return document_id


def _memory(tx: Tx, scope: Scope, agent_id: str) -> None:
    stamp = now()
    document_id = tx.db.mint("memory-document")
    _raw(tx, "memory_documents", id=document_id, tenant_id=scope.tenant_id, agent_id=agent_id, user_id=GROUP,
         path="MEMORY.md", content="remember", metadata="{}", created_at=stamp, updated_at=stamp)
    for seq in (1, 2):
        _raw(tx, "memory_chunks", id=tx.db.mint("memory-chunk"), tenant_id=scope.tenant_id, document_id=document_id,
             agent_id=agent_id, seq=seq, content=f"chunk {seq}")
    _vector(tx, scope, agent_id, "memory", document_id, stamp)


def _vector(tx: Tx, scope: Scope, agent_id: str, kind: str, source_id: str, stamp: str) -> None:
    _raw(tx, "memory_embeddings", source_id=source_id, tenant_id=scope.tenant_id, agent_id=agent_id, user_id=GROUP,
         kind=kind, document_id=source_id if kind == "memory" else None,
         summary_id=source_id if kind == "episodic" else None, source_version=stamp, model="embed", dimensions=2,
         vector=b"\x00\x00\x80\x3f" * 2, created_at=stamp)


def _knowledge(tx: Tx, scope: Scope, agent_id: str) -> None:
    stamp = now()
    entities = [tx.db.mint("kg-entity") for _ in range(2)]
    for entity_id, name in zip(entities, ("Alice", "Acme"), strict=True):
        _raw(tx, "kg_entities", id=entity_id, tenant_id=scope.tenant_id, agent_id=agent_id, user_id=GROUP, name=name,
             entity_type="thing", properties="{}", created_at=stamp)
    _raw(tx, "kg_relations", id=tx.db.mint("kg-relation"), tenant_id=scope.tenant_id, agent_id=agent_id,
         source_entity_id=entities[0], target_entity_id=entities[1], relation="works_at", properties="{}",
         created_at=stamp)
    summary_id = tx.db.mint("episodic-summary")
    _raw(tx, "episodic_summaries", id=summary_id, tenant_id=scope.tenant_id, agent_id=agent_id,
         user_id=GROUP, session_key=f"summary-of-{agent_id}", compaction_count=1, summary="we talked",
         created_at=stamp)
    _vector(tx, scope, agent_id, "episodic", summary_id, stamp)


def _agent_owned(tx: Tx, scope: Scope, agent_id: str, session_key: str) -> None:
    """What an agent owns outright: MCP server, cron job, grant, a session with messages, memory, knowledge."""
    links.add_mcp_server(tx, scope, agent_id, name="github", url="https://mcp.example/github")
    job = cron.create_cron_job(tx, scope, agent_id, created_by="1001", user_id_scope=GROUP, schedule="0 9 * * *")
    cron.start_manual_run(tx, scope, job.id)
    permissions.grant(tx, scope, agent_id, chat_scope=GROUP, config_type="file_writer", sender_id="1001", allow=True)
    sessions.open_session(tx, scope, session_key, agent_id, GROUP)
    sessions.append_message(tx, scope, session_key, "user", "hi", sender_id="1001")
    sessions.append_message(tx, scope, session_key, "assistant", "hello")
    _memory(tx, scope, agent_id)
    _knowledge(tx, scope, agent_id)


def build_graph(db: Database, slug: str) -> Graph:
    scope = make_tenant(db, slug).scope
    a, b, c = (new_agent(db, scope, key).id for key in ("a", "b", "c"))
    with db.transaction() as tx:
        a_notes, a_shared = _vault(tx, scope, a, "notes.md"), _vault(tx, scope, a, "shared.md")
        b_shared = _vault(tx, scope, b, "shared.md")
        team = teams.create_team(tx, scope, name="Core", lead_agent_id=a).id
        teams.add_member(tx, scope, team, a, role="lead")
        teams.add_member(tx, scope, team, b)
        api_key = teams.create_team_api_key(tx, scope, team, name="ci").api_key.id
        other_team = teams.create_team(tx, scope, name="Other", lead_agent_id=b).id
        teams.add_member(tx, scope, other_team, b)
        teams.create_team_api_key(tx, scope, other_team, name="ci")
        api_keys.create_api_key(tx, scope, name="gateway", role="admin")
        task_ab = tasks.create_task(tx, scope, team, title="Review", created_by_agent_id=a, assignee_agent_id=b).id
        task_a = tasks.create_task(tx, scope, team, title="Fix", created_by_agent_id=b, assignee_agent_id=a).id
        other_task = tasks.create_task(tx, scope, other_team, title="Other", created_by_agent_id=a).id
        attachment_a = tasks.add_attachment(tx, scope, task_ab, name="notes", created_by_agent_id=a,
                                            vault_document_id=a_notes).id
        attachment_b = tasks.add_attachment(tx, scope, task_ab, name="shared", created_by_agent_id=a,
                                            vault_document_id=b_shared).id
        tasks.add_attachment(tx, scope, other_task, name="x", created_by_agent_id=a, vault_document_id=a_shared)
        links.create_link(tx, scope, a, b)
        links.create_link(tx, scope, b, a)
        link_bc = links.create_link(tx, scope, b, c).id
        _agent_owned(tx, scope, a, "session-a")
        _agent_owned(tx, scope, b, "session-b")
        cron.create_cron_job(tx, scope, a, created_by="1002", schedule="@hourly", enabled=False)
        permissions.grant(tx, scope, a, chat_scope=GROUP, config_type="cron", sender_id="1002", allow=False)
        skills.create_skill(tx, scope, owner_id="1001", name="summarise", content="x")
        orgs.set_default_agent(tx, scope, a)
        user = orgs.create_user(tx, display_name=f"Owner of {slug}")
        orgs.add_member(tx, scope, user.id, "owner")
        invitations.invite(tx, scope, format_id("user"), "member", invited_by=user.id)
        _raw(tx, "org_policies", id=tx.db.mint("org-policy"), org_id=scope.tenant_id, name="default",
             document="{}", created_at=now())
        _raw(tx, "org_credentials", id=tx.db.mint("org-credential"), org_id=scope.tenant_id, name="openai",
             nonce=b"0" * 12, ciphertext=b"secret", created_at=now())
        cipher = CredentialCipher(b"k" * 32)
        channels.bind(tx, scope, cipher, a, "telegram", address=f"{slug}_bot", name=f"{slug}_bot",
                      verifier="0" * 64, token=b"1:token")
        channels.bind(tx, scope, cipher, b, "discord", address=str(len(slug)) * 18, name=str(len(slug)) * 18,
                      verifier="0" * 64, token=None)
        channel_access.set_policy(tx, scope, a, dm_policy="allowlist")
        channel_access.allow(tx, scope, a, "telegram", "1001")
        prices.put_price(tx, scope, provider="openai", model="gpt-x", effective_from="2026-01-01T00:00:00Z",
                         currency="USD", input_micros_per_million=1, output_micros_per_million=2)
    return Graph(scope, a, b, c, a_notes, a_shared, b_shared, team, other_team, api_key, task_ab, task_a,
                 other_task, attachment_a, attachment_b, link_bc, "session-b")


# -- whole-database checks --------------------------------------------------------------------------------
def _text_columns() -> list[tuple[str, str]]:
    return [(table.name, column.name) for table in metadata.sorted_tables for column in table.columns
            if isinstance(column.type, sa.String)]


def references_to(db: Database, value: str) -> list[str]:
    """Every ``table.column`` holding ``value``: an ID that was deleted must appear nowhere."""
    found = []
    with db.transaction(write=False) as tx:
        for table, column in _text_columns():
            if tx.scalar(f'SELECT count(*) FROM "{table}" WHERE "{column}" = :value', {"value": value}):
                found.append(f"{table}.{column}")
    return found


def dangling_references(db: Database) -> list[str]:
    """Every foreign key (and ``organizations.default_agent_id``, which has none) pointing at a missing row."""
    checks: list[tuple[str, tuple[str, ...], str, tuple[str, ...]]] = [
        ("organizations", ("default_agent_id",), "agents", ("id",))]
    for table in metadata.sorted_tables:
        for fk in table.foreign_key_constraints:
            checks.append((table.name, tuple(c.name for c in fk.columns), fk.referred_table.name,
                           tuple(e.column.name for e in fk.elements)))
    dangling = []
    with db.transaction(write=False) as tx:
        for child, columns, parent, parent_columns in checks:
            present = " AND ".join(f'c."{col}" IS NOT NULL' for col in columns)
            match = " AND ".join(f'p."{pc}" = c."{col}"' for col, pc in zip(columns, parent_columns, strict=True))
            sql = (f'SELECT count(*) FROM "{child}" c WHERE {present} '
                   f'AND NOT EXISTS (SELECT 1 FROM "{parent}" p WHERE {match})')
            if tx.scalar(sql):
                dangling.append(f"{child}({', '.join(columns)}) -> {parent}")
    return dangling


def _tenant_column(table: sa.Table) -> str | None:
    for name in ("tenant_id", "org_id"):
        if name in table.columns:
            return name
    return "id" if table.name == "organizations" else None


def tenant_tables() -> list[tuple[str, str]]:
    """``(table, tenant column)`` of every table whose rows belong to a tenant."""
    found = []
    for table in metadata.sorted_tables:
        column = _tenant_column(table)
        if column is not None and table.name not in UNOWNED_TENANT_TABLES:
            found.append((table.name, column))
    return found


def tenant_rows(db: Database, scope: Scope) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the tenant, table by table, in a stable order (bytes as bytes on both engines)."""
    snapshot = {}
    with db.transaction(write=False) as tx:
        for table, column in tenant_tables():
            rows = tx.all(f'SELECT * FROM "{table}" WHERE "{column}" = :tenant', {"tenant": scope.tenant_id})
            snapshot[table] = sorted((tuple(bytes(v) if isinstance(v, memoryview) else v for v in row)
                                      for row in rows), key=repr)
    return snapshot


def _scalar(db: Database, sql: str, **params: Any) -> Any:
    with db.transaction(write=False) as tx:
        return tx.scalar(sql, params)


def _column(db: Database, sql: str, **params: Any) -> list[Any]:
    with db.transaction(write=False) as tx:
        return sorted((row[0] for row in tx.all(sql, params)), key=repr)


# -- tests ------------------------------------------------------------------------------------------------
def test_the_graph_is_complete(db: Database) -> None:
    # Guards the other tests: every tenant table has rows in the graph, so "no rows left" means something.
    graph = build_graph(db, "acme")
    snapshot = tenant_rows(db, graph.scope)
    assert {table for table, rows in snapshot.items() if not rows} == set()
    not_tenant_owned = {"users", "platform_settings", "id_migrations", "change_log", "event_bus_counters"}
    assert {table for table, _ in tenant_tables()} | UNOWNED_TENANT_TABLES | not_tenant_owned == set(metadata.tables)
    assert dangling_references(db) == []
    assert scan(db) == []  # the project's orphan scan agrees


def test_deleting_an_agent_leaves_nothing_that_references_it(db: Database) -> None:
    g = build_graph(db, "acme")
    other = build_graph(db, "globex")  # the same keys a, b, c in another tenant
    other_before = tenant_rows(db, other.scope)
    assert references_to(db, g.a)  # the graph references A in many places

    with db.transaction() as tx:
        agents.delete_agent(tx, g.scope, g.a)

    assert references_to(db, g.a) == []
    assert dangling_references(db) == []
    assert scan(db) == []  # the project's orphan scan agrees
    for document in (g.a_notes, g.a_shared):
        assert references_to(db, document) == []
    assert tenant_rows(db, other.scope) == other_before
    with db.transaction() as tx:
        assert agents.get_agent_by_key(tx, other.scope, "a").id == other.a
        with pytest.raises(NotFoundError):
            agents.get_agent(tx, g.scope, g.a)
        org = orgs.get_organization(tx, g.scope)
        assert org.default_agent_id is None

        # The team survives without a lead; only B is left as a member; its API key is untouched.
        team = teams.get_team(tx, g.scope, g.team)
        assert team.lead_agent_id is None
        assert [m.agent_id for m in teams.list_members(tx, g.scope, g.team)] == [g.b]
        assert [k.id for k in teams.list_team_api_keys(tx, g.scope, g.team)] == [g.api_key]

        # Tasks and attachments survive; references to A and to A's documents became NULL.
        by_a = tasks.get_task(tx, g.scope, g.task_by_a_for_b)
        assert (by_a.created_by_agent_id, by_a.assignee_agent_id) == (None, g.b)
        for_a = tasks.get_task(tx, g.scope, g.task_for_a)
        assert (for_a.created_by_agent_id, for_a.assignee_agent_id) == (g.b, None)
        assert tasks.get_task(tx, g.scope, g.other_task).created_by_agent_id is None
        of_a_doc = tasks.get_attachment(tx, g.scope, g.attachment_of_a_doc)
        assert (of_a_doc.created_by_agent_id, of_a_doc.vault_document_id) == (None, None)
        of_b_doc = tasks.get_attachment(tx, g.scope, g.attachment_of_b_doc)
        assert (of_b_doc.created_by_agent_id, of_b_doc.vault_document_id) == (None, g.b_shared)

        # B keeps everything it owns; only the links that involved A are gone.
        assert [link.id for link in links.list_links(tx, g.scope)] == [g.link_b_c]
        assert [s.name for s in links.list_mcp_servers(tx, g.scope, g.b)] == ["github"]
        assert len(cron.list_cron_jobs(tx, g.scope, g.b)) == 1 and len(cron.list_cron_jobs(tx, g.scope)) == 1
        assert permissions.find_grant(tx, g.scope, g.b, GROUP, "file_writer", "1001") is True
        assert len(sessions.list_messages(tx, g.scope, g.b_session)) == 2
        with pytest.raises(NotFoundError):
            sessions.get_session(tx, g.scope, "session-a")
        assert [s.name for s in skills.list_skills(tx, g.scope)] == ["summarise"]  # owned by a person, not A
    assert _column(db, "SELECT id FROM vault_documents WHERE tenant_id = :t", t=g.scope.tenant_id) == [g.b_shared]
    assert _column(db, "SELECT path FROM vault_documents WHERE agent_id = :b", b=g.b) == ["shared.md"]
    for table in ("memory_documents", "memory_chunks", "kg_entities", "kg_relations", "episodic_summaries",
                  "memory_embeddings"):
        assert _column(db, f"SELECT agent_id FROM {table} WHERE tenant_id = :t", t=g.scope.tenant_id) == (
            [g.b] * (2 if table in ("memory_chunks", "kg_entities", "memory_embeddings") else 1)), table

    # The key is free at once, and the new agent is a new identity.
    again = new_agent(db, g.scope, "a")
    assert again.id != g.a and references_to(db, again.id) == ["agents.id"]


def test_deleting_every_agent_in_turn_always_succeeds(db: Database) -> None:
    g = build_graph(db, "acme")
    for agent_id in (g.b, g.a, g.c):
        with db.transaction() as tx:
            agents.delete_agent(tx, g.scope, agent_id)
        assert references_to(db, agent_id) == []
        assert dangling_references(db) == []
        assert scan(db) == []
    with db.transaction() as tx:
        assert agents.list_agents(tx, g.scope) == []
        assert teams.get_team(tx, g.scope, g.team).lead_agent_id is None
        assert teams.list_members(tx, g.scope, g.team) == []
        assert len(tasks.list_tasks(tx, g.scope, g.team)) == 2
    assert _scalar(db, "SELECT count(*) FROM team_task_attachments WHERE created_by_agent_id IS NOT NULL "
                       "OR vault_document_id IS NOT NULL") == 0


def test_an_archived_agent_can_still_be_deleted(db: Database) -> None:
    g = build_graph(db, "acme")
    with db.transaction() as tx:
        agents.archive_agent(tx, g.scope, g.a)
    with db.transaction() as tx:
        agents.delete_agent(tx, g.scope, g.a)
    assert references_to(db, g.a) == [] and dangling_references(db) == []


def test_deleting_a_team_removes_what_it_owns_but_not_its_agents(db: Database) -> None:
    g = build_graph(db, "acme")
    other = build_graph(db, "globex")
    other_before = tenant_rows(db, other.scope)
    before = tenant_rows(db, g.scope)
    team_tasks = [g.task_by_a_for_b, g.task_for_a]
    team_attachments = [g.attachment_of_a_doc, g.attachment_of_b_doc]

    with db.transaction() as tx:
        teams.delete_team(tx, g.scope, g.team)

    for removed in [g.team, g.api_key, *team_tasks, *team_attachments]:
        assert references_to(db, removed) == [], removed
    assert dangling_references(db) == []
    assert scan(db) == []  # the project's orphan scan agrees
    after = tenant_rows(db, g.scope)
    for table in ("teams", "team_members", "team_api_keys", "team_tasks", "team_task_attachments"):
        assert len(after[table]) < len(before[table]), table
    # Everything that is not the team's is exactly as it was: agents, documents, links, sessions…
    unchanged = set(before) - {"teams", "team_members", "team_api_keys", "team_tasks", "team_task_attachments"}
    assert {t: after[t] for t in unchanged} == {t: before[t] for t in unchanged}
    assert tenant_rows(db, other.scope) == other_before
    with db.transaction() as tx:
        assert {a.id for a in agents.list_agents(tx, g.scope)} == {g.a, g.b, g.c}
        assert [t.id for t in teams.list_teams(tx, g.scope)] == [g.other_team]
        assert [m.agent_id for m in teams.list_members(tx, g.scope, g.other_team)] == [g.b]
        assert [t.id for t in tasks.list_tasks(tx, g.scope, g.other_team)] == [g.other_task]
        assert len(teams.list_team_api_keys(tx, g.scope, g.other_team)) == 1
        with pytest.raises(NotFoundError):
            teams.get_team(tx, g.scope, g.team)
        with pytest.raises(NotFoundError):
            teams.delete_team(tx, g.scope, g.team)


def test_deleting_an_organization_removes_every_row_of_the_tenant_only(db: Database) -> None:
    g = build_graph(db, "acme")
    other = build_graph(db, "globex")
    other_before = tenant_rows(db, other.scope)
    users_before = _scalar(db, "SELECT count(*) FROM users")

    with db.transaction() as tx:
        orgs.delete_organization(tx, g.scope.tenant_id)

    assert {table: rows for table, rows in tenant_rows(db, g.scope).items() if rows} == {}
    for entity_id in (g.scope.tenant_id, g.a, g.b, g.c, g.team, g.a_notes, g.b_shared, g.task_by_a_for_b):
        assert references_to(db, entity_id) == [], entity_id
    assert dangling_references(db) == []
    assert scan(db) == []  # the project's orphan scan agrees
    assert tenant_rows(db, other.scope) == other_before
    assert _scalar(db, "SELECT count(*) FROM users") == users_before  # people are global; memberships went
    with db.transaction() as tx:
        assert agents.get_agent_by_key(tx, other.scope, "a").id == other.a
        with pytest.raises(NotFoundError):
            orgs.delete_organization(tx, g.scope.tenant_id)
