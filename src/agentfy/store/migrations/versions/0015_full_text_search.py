"""full-text search: memory documents, episodic summaries and vault text, indexed in the writing transaction

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-02

``vault_documents.text_content`` is the document as text (its first 100,000 characters; NULL when it is not
text), filled here for existing documents by the rule uploads use (``search_index.vault_text``).

PostgreSQL: a generated ``search_vector`` column and a GIN index on each of the three tables; adding a
stored generated column computes it for every existing row.  SQLite: the ``search_entries`` table, the FTS5
table ``search_fts`` over it, and triggers that keep both in step with every insert, update and delete of
the source tables; existing rows are copied in.  See ``agentfy.store.search_index``.
"""

from __future__ import annotations

from typing import Final

import sqlalchemy as sa
from alembic import op

from agentfy.store.search_index import INDEXED_CHARS, vault_text

revision = '0015'
down_revision = '0014'
branch_labels = None
depends_on = None

_N: Final = INDEXED_CHARS
#: Path separators read as spaces, so each part of ``notes/coffee_beans.md`` is a word on both engines.
_PATH_WORDS: Final = "translate({0}, '/._-:', '     ')"

_PG_VECTORS: Final = {
    "memory_documents": (f"setweight(to_tsvector('simple', {_PATH_WORDS.format('path')}), 'A') || "
                         f"setweight(to_tsvector('simple', left(content, {_N})), 'B')"),
    "episodic_summaries": f"to_tsvector('simple', left(summary, {_N}))",
    "vault_documents": (f"CASE WHEN text_content IS NULL THEN NULL ELSE "
                        f"setweight(to_tsvector('simple', {_PATH_WORDS.format('path')}), 'A') || "
                        f"setweight(to_tsvector('simple', text_content), 'B') END"),
}

# SQLite: what each source row contributes to search_entries (kind, scope, label, title, body), or no row
# (a vault document that is not text).  "{row}" is NEW or OLD in a trigger, the table itself in the backfill.
_SQLITE_SOURCES: Final = {
    "memory_documents": (
        "'memory', {row}.id, {row}.tenant_id, {row}.agent_id, {row}.user_id, {row}.path, {row}.path, "
        f"substr({{row}}.content, 1, {_N})", "1", "path, content, user_id, agent_id, tenant_id, id"),
    "episodic_summaries": (
        "'episodic', {row}.id, {row}.tenant_id, {row}.agent_id, {row}.user_id, "
        "{row}.session_key || ' #' || {row}.compaction_count, '', "
        f"substr({{row}}.summary, 1, {_N})", "1", "summary, session_key, compaction_count, user_id, agent_id, "
        "tenant_id, id"),
    "vault_documents": (
        "'vault', {row}.id, {row}.tenant_id, {row}.agent_id, NULL, {row}.path, {row}.path, {row}.text_content",
        "{row}.text_content IS NOT NULL", "text_content, path, agent_id, tenant_id, id"),
}
_ENTRY_COLUMNS: Final = "kind, source_id, tenant_id, agent_id, user_id, label, title, body"


def _pg_upgrade() -> None:
    for table, expression in _PG_VECTORS.items():
        op.execute(f"ALTER TABLE {table} ADD COLUMN search_vector tsvector GENERATED ALWAYS AS ({expression}) STORED")
        op.execute(f"CREATE INDEX ix_{table}_search_vector ON {table} USING gin (search_vector)")


def _sqlite_upgrade() -> None:
    op.execute("""
        CREATE TABLE search_entries (
            rowid INTEGER PRIMARY KEY,
            kind TEXT NOT NULL CHECK (kind IN ('memory', 'episodic', 'vault')),
            source_id TEXT NOT NULL UNIQUE,
            tenant_id TEXT NOT NULL,
            agent_id TEXT NOT NULL,
            user_id TEXT,
            label TEXT NOT NULL,
            title TEXT NOT NULL,
            body TEXT NOT NULL
        )""")
    op.execute("CREATE VIRTUAL TABLE search_fts USING fts5(title, body, content='search_entries', "
               "content_rowid='rowid', tokenize='unicode61')")
    op.execute("""
        CREATE TRIGGER search_entries_ai AFTER INSERT ON search_entries BEGIN
            INSERT INTO search_fts (rowid, title, body) VALUES (new.rowid, new.title, new.body);
        END""")
    op.execute("""
        CREATE TRIGGER search_entries_ad AFTER DELETE ON search_entries BEGIN
            INSERT INTO search_fts (search_fts, rowid, title, body) VALUES ('delete', old.rowid, old.title, old.body);
        END""")
    for table, (values, condition, columns) in _SQLITE_SOURCES.items():
        insert = (f"INSERT INTO search_entries ({_ENTRY_COLUMNS}) SELECT {values.format(row='new')} "
                  f"WHERE {condition.format(row='new')};")
        delete = "DELETE FROM search_entries WHERE source_id = old.id;"
        op.execute(f"CREATE TRIGGER {table}_search_ai AFTER INSERT ON {table} BEGIN {insert} END")
        op.execute(f"CREATE TRIGGER {table}_search_au AFTER UPDATE OF {columns} ON {table} BEGIN "
                   f"{delete} {insert} END")
        op.execute(f"CREATE TRIGGER {table}_search_ad AFTER DELETE ON {table} BEGIN {delete} END")
    for table, (values, condition, _) in _SQLITE_SOURCES.items():
        if table != "vault_documents":  # vault rows are indexed by the text_content backfill's update
            op.execute(f"INSERT INTO search_entries ({_ENTRY_COLUMNS}) "  # noqa: S608 - schema names only
                       f"SELECT {values.format(row=table)} FROM {table} WHERE {condition.format(row=table)}")


def _backfill_vault_text() -> None:
    """Fill ``text_content`` for existing documents, a batch of rows at a time (documents may be large)."""
    connection = op.get_bind()
    select = sa.text("SELECT id, content_type, content FROM vault_documents WHERE id > :after ORDER BY id LIMIT 100")
    update = sa.text("UPDATE vault_documents SET text_content = :text WHERE id = :id")
    after = ""
    while rows := connection.execute(select, {"after": after}).fetchall():
        texts = [{"id": row[0], "text": vault_text(row[1], bytes(row[2]))} for row in rows]
        found = [row for row in texts if row["text"] is not None]
        if found:
            connection.execute(update, found)
        after = rows[-1][0]


def upgrade() -> None:
    with op.batch_alter_table('vault_documents', schema=None) as batch_op:
        batch_op.add_column(sa.Column('text_content', sa.Text(), nullable=True, comment='the document as text: its first 100,000 characters; NULL: not text (media type or encoding)'))
    if op.get_bind().dialect.name == "postgresql":
        _pg_upgrade()
    else:
        _sqlite_upgrade()
    _backfill_vault_text()


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for table in _PG_VECTORS:
            op.execute(f"DROP INDEX ix_{table}_search_vector")
            op.execute(f"ALTER TABLE {table} DROP COLUMN search_vector")
    else:
        for table in _SQLITE_SOURCES:
            for suffix in ("ai", "au", "ad"):
                op.execute(f"DROP TRIGGER {table}_search_{suffix}")
        op.execute("DROP TABLE search_fts")
        op.execute("DROP TABLE search_entries")
    with op.batch_alter_table('vault_documents', schema=None) as batch_op:
        batch_op.drop_column('text_content')
