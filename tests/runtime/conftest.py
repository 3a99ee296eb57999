"""Runtime fixtures: organizations with agents on each engine, a runtime with the offline model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agentfy.agents.router import Router
from agentfy.runtime.runner import Runtime
from agentfy.store.db import Database
from tests.helpers.tenants import Tenant, make_tenant
from tests.runtime.helpers import CollectedEvents


@pytest.fixture
def acme(db: Database) -> Tenant:
    return make_tenant(db, "acme", agent_key="bot")


@pytest.fixture
def globex(db: Database) -> Tenant:
    return make_tenant(db, "globex", agent_key="bot")


@pytest.fixture
def events() -> CollectedEvents:
    return CollectedEvents()


@pytest.fixture
def runtime(db: Database, tmp_path: Path, events: CollectedEvents) -> Iterator[Runtime]:
    yield Runtime(db, Router(db), workspace_root=tmp_path / "workspaces", events=events)
