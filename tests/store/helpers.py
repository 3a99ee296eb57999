"""Fixtures-as-functions for storage tests: organizations and agents in a few lines."""

from __future__ import annotations

from agentfy.identity import Scope
from agentfy.store.db import Database
from agentfy.store.repos import agents, orgs


def new_tenant(db: Database, slug: str) -> Scope:
    with db.transaction() as tx:
        org = orgs.create_organization(tx, slug=slug, name=slug.title())
    return Scope(org.id)


def new_agent(db: Database, scope: Scope, key: str) -> agents.Agent:
    with db.transaction() as tx:
        return agents.create_agent(tx, scope, agent_key=key)


def count(db: Database, table: str) -> int:
    with db.transaction(write=False) as tx:
        return int(tx.scalar(f"SELECT count(*) FROM {table}"))
