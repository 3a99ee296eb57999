"""Helpers for storage tests: agents in a line, row counts, and the not-found rule of cross-tenant look-ups.

Organizations come from :func:`tests.helpers.tenants.make_tenant`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agentfy.identity import Scope
from agentfy.ids import format_id
from agentfy.store.db import Database, Tx
from agentfy.store.errors import NotFoundError
from agentfy.store.repos import agents


def new_agent(db: Database, scope: Scope, key: str) -> agents.Agent:
    with db.transaction() as tx:
        return agents.create_agent(tx, scope, agent_key=key)


def count(db: Database, table: str) -> int:
    with db.transaction(write=False) as tx:
        return int(tx.scalar(f"SELECT count(*) FROM {table}"))


def not_found_like_missing(db: Database, entity: str, prefix: str, call: Callable[[Tx, str], Any],
                           real_id: str) -> None:
    """``call`` with another tenant's real ID fails exactly like with an ID that exists nowhere."""
    missing = format_id(prefix)
    for ref in (real_id, missing):
        with pytest.raises(NotFoundError) as caught, db.transaction() as tx:
            call(tx, ref)
        assert str(caught.value) == f"{entity} {ref!r} not found"
