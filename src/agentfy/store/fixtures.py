"""Development fixtures: the demo organization ``agentfy db seed`` creates.

An organization ``demo`` with two agents (``helper``, the lead of team ``Core``, and ``researcher``) and an
owner API key, in one transaction beside the platform organization: enough to try the API and the chat
without setting anything up by hand.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentfy.identity import Scope
from agentfy.store.db import Database
from agentfy.store.errors import ConflictError
from agentfy.store.repos import agents, api_keys, orgs, teams


@dataclass(frozen=True, slots=True)
class Demo:
    """The seeded organization and its owner key (its plaintext: shown once, only its hash is stored)."""

    scope: Scope
    owner_key: str


def create_demo(db: Database) -> Demo | None:
    """Create the demo organization and everything in it, or ``None`` when organization ``demo`` exists
    (nothing is written then)."""
    try:
        with db.transaction() as tx:
            orgs.ensure_platform_organization(tx)
            demo = Scope(orgs.create_organization(tx, slug="demo", name="Demo").id)
            helper = agents.create_agent(tx, demo, agent_key="helper", display_name="Helper")
            agents.create_agent(tx, demo, agent_key="researcher", display_name="Researcher")
            teams.create_team(tx, demo, name="Core", lead_agent_id=helper.id)
            key = api_keys.create_api_key(tx, demo, name="demo owner", role="owner").key
    except ConflictError:
        return None
    return Demo(demo, key)
