"""Migration 0015 indexes the rows written before it (both engines): memory, summaries and vault text are
found after the upgrade, a binary vault document is not text."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agentfy.identity import Scope
from agentfy.ids import format_id
from agentfy.store.db import Database
from agentfy.store.migrate import upgrade
from agentfy.store.repos import search, vault
from tests.helpers.databases import PgDatabases

BEFORE = "0013"
STAMP = "2026-12-01T00:00:00.000000Z"


@pytest.fixture(params=["sqlite", "postgresql"])
def fresh(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    """An empty database on each engine, not migrated."""
    if request.param == "sqlite":
        db = Database(f"sqlite:///{tmp_path / 'old.db'}")
        yield db
        db.dispose()
        return
    databases: PgDatabases = request.getfixturevalue("pg_databases")
    name = databases.create()
    db = Database(databases.url(name))
    try:
        yield db
    finally:
        db.dispose()
        databases.drop(name)


@pytest.mark.slow  # migrates twice from an empty database: a few seconds on PostgreSQL
def test_rows_written_before_the_migration_are_searchable_after_it(fresh: Database) -> None:
    upgrade(fresh, BEFORE)
    org, agent = format_id("org"), format_id("agent")
    ids = {name: format_id(prefix) for name, prefix in (("memory", "memory-document"), ("summary", "episodic-summary"),
                                                       ("text", "vault-document"), ("binary", "vault-document"))}
    with fresh.transaction() as tx:
        tx.execute("INSERT INTO organizations (id, slug, name, settings, created_at) VALUES (:id, 'acme', 'Acme', "
                   "'{}', :at)", {"id": org, "at": STAMP})
        tx.execute("INSERT INTO agents (id, tenant_id, agent_key, display_name, config, created_at, updated_at) "
                   "VALUES (:id, :org, 'bot', 'Bot', '{}', :at, :at)", {"id": agent, "org": org, "at": STAMP})
        tx.execute("INSERT INTO memory_documents (id, tenant_id, agent_id, user_id, path, content, metadata, "
                   "created_at, updated_at) VALUES (:id, :org, :agent, 'u1', 'trip.md', 'the harbour trip', '{}', "
                   ":at, :at)", {"id": ids["memory"], "org": org, "agent": agent, "at": STAMP})
        tx.execute("INSERT INTO episodic_summaries (id, tenant_id, agent_id, user_id, session_key, compaction_count, "
                   "summary, created_at) VALUES (:id, :org, :agent, 'u1', 's-1', 0, 'planned the harbour trip', :at)",
                   {"id": ids["summary"], "org": org, "agent": agent, "at": STAMP})
        for key, path, content_type, content in (("text", "harbour.txt", "text/plain", b"harbour map"),
                                                 ("binary", "harbour.png", "image/png", b"\x89PNG harbour")):
            tx.execute("INSERT INTO vault_documents (id, tenant_id, agent_id, path, content_type, size, content, "
                       "created_at) VALUES (:id, :org, :agent, :path, :type, :size, :content, :at)",
                       {"id": ids[key], "org": org, "agent": agent, "path": path, "type": content_type,
                        "size": len(content), "content": content, "at": STAMP})
    upgrade(fresh)
    with fresh.transaction(write=False) as tx:
        hits = search.search(tx, Scope(org), agent_id=agent, user_id="u1", query="harbour")
        text = vault.get_vault_text(tx, Scope(org), agent, document_id=ids["text"])
        binary = vault.get_vault_text(tx, Scope(org), agent, document_id=ids["binary"])
    assert {(h.kind, h.id) for h in hits} == {("memory", ids["memory"]), ("episodic", ids["summary"]),
                                              ("vault", ids["text"])}
    assert text.text == "harbour map" and binary.text is None
