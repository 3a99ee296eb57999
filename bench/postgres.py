"""The PostgreSQL server the benchmarks use, and scratch databases on it.

The server is ``$AGENTFY_BENCH_PG_URL`` (default the local one, trust auth, as the ``postgres`` role).  Every
benchmark creates a database of its own there and drops it afterwards, whatever happens in between.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import sqlalchemy as sa

PG_ADMIN_URL = os.environ.get("AGENTFY_BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")


def server_problem() -> str | None:
    """Why the server cannot be used (to print as the reason PostgreSQL figures are skipped), or ``None``."""
    try:
        psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=3).close()
    except psycopg.Error as error:
        return f"no server at {PG_ADMIN_URL} ({type(error).__name__})"
    return None


@contextmanager
def scratch_database(prefix: str = "agentfy_bench") -> Iterator[str]:
    """A new empty database; yields its SQLAlchemy URL (``postgresql+psycopg://…``) and drops it on exit."""
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        url = sa.engine.make_url(PG_ADMIN_URL).set(drivername="postgresql+psycopg", database=name)
        yield url.render_as_string(hide_password=False)
    finally:
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
