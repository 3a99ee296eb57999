"""Runtime fixtures: organizations with agents on each engine, a runtime with the offline model."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from agentfy.agents.router import Router
from agentfy.identity import Scope
from agentfy.identity.context import RequestContext
from agentfy.runtime.events import AgentEvent
from agentfy.runtime.inbound import Inbound, Reply
from agentfy.runtime.runner import Runtime
from agentfy.store.db import Database
from agentfy.store.repos import agents, orgs
from agentfy.store.repos.agents import Agent

T = TypeVar("T")


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coroutine)


@dataclass
class Org:
    scope: Scope
    slug: str
    bot: Agent

    @property
    def id(self) -> str:
        return self.scope.tenant_id

    def inbound(self, context: RequestContext, text: str, *, conversation: str = "chat-1", channel: str = "test",
                agent_key: str | None = None) -> Inbound:
        return Inbound(self.scope.tenant_id, agent_key or self.bot.agent_key, context, channel, conversation, text)


def make_org(db: Database, slug: str, *, agent_key: str = "bot", config: dict[str, Any] | None = None) -> Org:
    with db.transaction() as tx:
        org = orgs.create_organization(tx, slug=slug, name=slug.title())
        scope = Scope(org.id)
        bot = agents.create_agent(tx, scope, agent_key=agent_key, config=config)
    return Org(scope, slug, bot)


class CollectedEvents:
    def __init__(self) -> None:
        self.events: list[tuple[str, AgentEvent]] = []

    def publish(self, tenant_id: str, event: AgentEvent) -> int:
        self.events.append((tenant_id, event))
        return 1

    def names(self) -> list[str]:
        return [event.name for _, event in self.events]


@pytest.fixture
def acme(db: Database) -> Org:
    return make_org(db, "acme")


@pytest.fixture
def globex(db: Database) -> Org:
    return make_org(db, "globex")


@pytest.fixture
def events() -> CollectedEvents:
    return CollectedEvents()


@pytest.fixture
def runtime(db: Database, tmp_path: Path, events: CollectedEvents) -> Iterator[Runtime]:
    yield Runtime(db, Router(db), workspace_root=tmp_path / "workspaces", events=events)


def send(runtime: Runtime, inbound: Inbound) -> Reply:
    return run(runtime(inbound))
