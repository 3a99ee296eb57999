"""Applying the Alembic migrations (``agentfy db upgrade``) and telling whether a database is at head."""

from __future__ import annotations

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from agentfy.store.db import Database


def alembic_config(url: str) -> Config:
    """Alembic's configuration for ``url``, with the migrations shipped inside the package."""
    config = Config()
    config.set_main_option("script_location", "agentfy.store:migrations")
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(db: Database, revision: str = "head") -> None:
    """Apply migrations up to ``revision`` (both SQLite and PostgreSQL; no migration skips SQLite)."""
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
