"""Storage: the schema, migrations, the engine, and tenant-scoped repositories (SQLite and PostgreSQL)."""

from agentfy.store.db import Database, Tx
from agentfy.store.errors import ConflictError, InvalidInputError, NotFoundError, StoreError

__all__ = ["ConflictError", "Database", "InvalidInputError", "NotFoundError", "StoreError", "Tx"]
