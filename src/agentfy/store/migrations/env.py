"""Alembic environment: runs the migrations on the connection or URL that ``agentfy.store.migrate`` passes."""

from __future__ import annotations

from alembic import context

from agentfy.store.db import create_engine
from agentfy.store.schema import metadata
from agentfy.store.search_index import is_index_object

config = context.config


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = create_engine(config.get_main_option("sqlalchemy.url") or "")
    try:
        with engine.connect() as connection:
            _run(connection)
    finally:
        engine.dispose()


def _run(connection: object) -> None:
    context.configure(
        connection=connection,  # type: ignore[arg-type]
        target_metadata=metadata,
        render_as_batch=True,  # SQLite cannot ALTER most things; batch mode recreates tables instead
        compare_type=True,
        compare_server_default=True,
        include_object=is_index_object,  # the full-text indexes are the migrations' own, not the models'
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    raise SystemExit("offline (SQL script) migrations are not supported; run `agentfy db upgrade`")
run_migrations_online()
