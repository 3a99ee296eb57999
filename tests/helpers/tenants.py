"""The one way tests make an organization: :func:`make_tenant`, with the keys and the agent a test asks for."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from agentfy.identity import OrgId, Scope
from agentfy.store.db import Database
from agentfy.store.repos import agents, api_keys, orgs
from agentfy.store.repos.agents import Agent


@dataclass(frozen=True)
class Tenant:
    """An organization made for a test: its scope and slug, a bearer key per role it was given (named after the
    role), and its agent when one was asked for."""

    scope: Scope
    slug: str
    keys: dict[str, str] = field(default_factory=dict)  # role -> bearer key
    bot: Agent | None = None

    @property
    def id(self) -> OrgId:
        return self.scope.tenant_id

    def headers(self, role: str = "owner") -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys[role]}"}


def make_tenant(db: Database, slug: str, *, keys: Iterable[str] = (), agent_key: str | None = None,
                config: dict[str, Any] | None = None) -> Tenant:
    """The organization ``slug`` (named ``slug.title()``), in one transaction with an API key of each role in
    ``keys`` and, given ``agent_key``, an agent with ``config``."""
    with db.transaction() as tx:
        org = orgs.create_organization(tx, slug=slug, name=slug.title())
        scope = Scope(org.id)
        issued = {role: api_keys.create_api_key(tx, scope, name=role, role=role).key for role in keys}
        bot = agents.create_agent(tx, scope, agent_key=agent_key, config=config) if agent_key is not None else None
    return Tenant(scope, slug, issued, bot)
