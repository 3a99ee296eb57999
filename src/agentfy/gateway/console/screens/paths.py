"""The console's URLs of an agent's pages (agents are addressed by ID: a rename changes the key, never the URL)."""

from __future__ import annotations

from agentfy.gateway.console.api import segment


def agent_url(agent_id: str, tail: str = "") -> str:
    return f"/console/agents/{segment(agent_id)}{tail}"
