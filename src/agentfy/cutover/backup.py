"""Where the cutover writes the backup of the starting state when ``--backup`` is not given.

Beside a SQLite database, named after its file (``var/agentfy.db.pre-cutover-20260101T000000Z.sqlite3``), so
the backup stays with the database it belongs to; for PostgreSQL a dump in the working directory
(``./agentfy-pre-cutover-20260101T000000Z.dump``).  The UTC time in the name keeps one run's backup from
overwriting an earlier one's.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import sqlalchemy as sa


def default_backup_path(url: sa.URL, moment: datetime) -> Path:
    """The backup of the database at ``url`` for a cutover started at ``moment`` (timezone-aware, UTC)."""
    stamp = moment.strftime("%Y%m%dT%H%M%SZ")
    if url.get_backend_name() == "sqlite":
        database = Path(url.database or "agentfy.db")
        return database.with_name(f"{database.name}.pre-cutover-{stamp}.sqlite3")
    return Path(f"{url.database or 'agentfy'}-pre-cutover-{stamp}.dump")
