"""The full-text indexes the search reads, which :mod:`agentfy.store.schema` does not model.

Migration ``0015`` creates them; this module names them (for the search queries, the schema comparison and the
docs) and holds the one rule for which vault documents are text.

* **PostgreSQL**: a ``search_vector`` column on ``memory_documents``, ``episodic_summaries`` and
  ``vault_documents``, ``GENERATED ALWAYS AS (to_tsvector('simple', …)) STORED``, with a GIN index each.  The
  server computes it in the statement that writes the row, so it cannot be out of step.
* **SQLite**: ``search_entries`` — one row per indexed source row: its kind, source ID, tenant, agent, memory
  SCOPE, display label and the indexed title and body — and ``search_fts``, an FTS5 table whose external
  content is ``search_entries``.  Triggers on the three source tables write ``search_entries``, and triggers on
  ``search_entries`` write ``search_fts``; triggers run inside the writing statement, so the index commits or
  rolls back with the write.  ``search_entries`` has its own ``INTEGER PRIMARY KEY``: the source tables' implicit
  rowids are not stable (``VACUUM`` and a table rebuild renumber them), an FTS5 rowid must be.

A later migration that rebuilds one of the source tables on SQLite (Alembic's batch mode copies it into a new
table) drops that table's triggers with it and must create them again, as ``0015`` does.

Only the first :data:`INDEXED_CHARS` characters of a text are indexed: a PostgreSQL ``tsvector`` holds at most
1 MB, and a memory document may hold ten million characters.
"""

from __future__ import annotations

import codecs
from typing import Any, Final

#: How much of each text (from its start) is indexed, on both engines, and kept as a vault document's text.
INDEXED_CHARS: Final = 100_000

#: PostgreSQL: the generated ``tsvector`` column on each indexed table, and its GIN index.
VECTOR_COLUMN: Final = "search_vector"
INDEXED_TABLES: Final = ("memory_documents", "episodic_summaries", "vault_documents")
PG_INDEXES: Final = tuple(f"ix_{table}_{VECTOR_COLUMN}" for table in INDEXED_TABLES)

#: SQLite: the entries table and the FTS5 table over it (FTS5 keeps its own shadow tables, ``search_fts_*``).
ENTRIES_TABLE: Final = "search_entries"
FTS_TABLE: Final = "search_fts"

#: Media types besides ``text/*`` whose content is text; ``+json`` and ``+xml`` suffixes count too.
_TEXT_MEDIA_TYPES: Final = frozenset({"application/json", "application/xml", "application/yaml",
                                      "application/x-yaml", "application/toml", "application/javascript",
                                      "application/x-ndjson", "application/csv", "application/sql"})


def is_text_media_type(content_type: str) -> bool:
    """Whether a vault document of ``content_type`` (parameters such as ``; charset=utf-8`` ignored) is text."""
    media = content_type.split(";", 1)[0].strip().lower()
    return media.startswith("text/") or media in _TEXT_MEDIA_TYPES or media.endswith(("+json", "+xml"))


def vault_text(content_type: str, content: bytes) -> str | None:
    """The text a vault document is searched and read by: its first :data:`INDEXED_CHARS` characters, or
    ``None`` when it is not text — a media type that is not text, content that is not UTF-8, or a NUL (which
    PostgreSQL cannot store in text).  The upload and the migration's backfill both call this."""
    if not is_text_media_type(content_type):
        return None
    # Decode only as much as the indexed prefix needs: a 50 MB document is not decoded whole.
    decoder = codecs.getincrementaldecoder("utf-8")(errors="strict")
    try:
        text = decoder.decode(content[:INDEXED_CHARS * 4], final=len(content) <= INDEXED_CHARS * 4)
    except UnicodeDecodeError:
        return None
    text = text[:INDEXED_CHARS]
    return None if "\x00" in text else text


def is_index_object(obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any) -> bool:
    """Alembic's ``include_object`` hook: ``False`` for the objects above, so comparing the models with a
    migrated database (and autogenerate) leaves them alone."""
    if type_ == "table":
        return not (name == ENTRIES_TABLE or (name or "").startswith(FTS_TABLE))
    if type_ == "column":
        return name != VECTOR_COLUMN
    if type_ == "index":
        return name not in PG_INDEXES
    return True
