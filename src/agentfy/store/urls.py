"""Database URLs: the one answer to "is this a SQLite database on disk, and which file?".

Why one function: a SQLite URL names a file (``sqlite:///var/agentfy.db``), a private in-memory database
(``sqlite://``, ``sqlite:///:memory:``) or a shared in-memory one (``sqlite:///file:name?mode=memory&uri=true``).
Only a file can be created beside (its directory, its WAL), locked for maintenance, shared with other
processes through its change log, backed up, or have key files and workspaces next to it; every place that
asks must agree, or one of them treats an in-memory database as a file (or a file as memory).
"""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa


def sqlite_file(url: str | sa.URL) -> Path | None:
    """The file of a SQLite database kept on disk; ``None`` for an in-memory SQLite database or a server
    database (PostgreSQL).  Whether the file exists yet is not checked.  ``url`` must parse as a URL
    (:class:`sqlalchemy.exc.ArgumentError` otherwise)."""
    parsed = sa.make_url(url) if isinstance(url, str) else url
    if parsed.get_backend_name() != "sqlite":
        return None
    database = parsed.database or ""
    if database in ("", ":memory:") or "mode=memory" in str(parsed.query) or "mode=memory" in database:
        return None
    return Path(database)
