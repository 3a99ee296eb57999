"""Applying the Alembic migrations (``agentfy db upgrade``) and telling whether a database is at head.

Several processes may start on one database at once (``agentfy serve`` on several hosts, ``--workers N``,
a worker next to a gateway): start-up work runs under :func:`maintenance_lock`, so one process migrates and
the others wait, then find the schema at head and change nothing.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from agentfy.store.db import Database
from agentfy.store.urls import sqlite_file

#: PostgreSQL advisory-lock key of the maintenance lock ("agentfy\0"): start-up migrations and the ID cutover
#: take it, so none of them runs while another does.
MAINTENANCE_LOCK_KEY: Final = int.from_bytes(b"agentfy\x00", "big") & 0x7FFF_FFFF_FFFF_FFFF


@contextmanager
def maintenance_lock(db: Database) -> Iterator[None]:
    """Hold the database's maintenance lock for the block (waiting for it if another process has it).

    PostgreSQL: a session-level advisory lock on a connection of its own (released when the block ends, or
    by the server if the process dies).  SQLite: an exclusive ``flock`` on the database file — separate from
    the byte-range locks SQLite itself uses, so it never blocks SQLite's own readers and writers.  An
    in-memory database has one user and needs no lock.
    """
    if db.dialect == "postgresql":
        import psycopg  # noqa: PLC0415 - only PostgreSQL needs it

        with psycopg.connect(db.conninfo, autocommit=True) as connection:
            connection.execute("SELECT pg_advisory_lock(%s)", (MAINTENANCE_LOCK_KEY,))
            try:
                yield
            finally:
                connection.execute("SELECT pg_advisory_unlock(%s)", (MAINTENANCE_LOCK_KEY,))
        return
    database = sqlite_file(db.engine.url)
    if database is None or not database.exists():
        yield
        return
    with open(database, "rb") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def alembic_config(url: str) -> Config:
    """Alembic's configuration for ``url``, with the migrations shipped inside the package."""
    config = Config()
    config.set_main_option("script_location", "agentfy.store:migrations")
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(db: Database, revision: str = "head") -> None:
    """Apply migrations up to ``revision`` (both SQLite and PostgreSQL; no migration skips SQLite), under the
    maintenance lock."""
    with maintenance_lock(db):
        upgrade_locked(db, revision)


def upgrade_locked(db: Database, revision: str = "head") -> None:
    """:func:`upgrade` for a caller that already holds :func:`maintenance_lock`."""
    config = alembic_config(db.url)
    with db.engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)


def head_revision(db: Database) -> str | None:
    return ScriptDirectory.from_config(alembic_config(db.url)).get_current_head()


def current_revision(db: Database) -> str | None:
    with db.engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def is_at_head(db: Database) -> bool:
    return current_revision(db) == head_revision(db)
