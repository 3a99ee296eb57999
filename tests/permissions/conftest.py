"""A tenant with an agent and a way to record grants, on both engines (the ``db`` fixture)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agentfy.store.db import Database
from tests.helpers.tenants import make_tenant
from tests.permissions.helpers import World
from tests.store.helpers import new_agent


@pytest.fixture
def world(db: Database) -> Iterator[World]:
    scope = make_tenant(db, "acme").scope
    yield World(db, scope, new_agent(db, scope, "bot"))
