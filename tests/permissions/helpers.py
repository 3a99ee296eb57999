"""What the permission tests share: chat scopes, two senders, and a tenant with an agent that records grants
(the ``world`` fixture builds it on both engines)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentfy.identity import Scope
from agentfy.store.db import Database
from agentfy.store.repos import agents, permissions

GROUP = "group:telegram:-100123"
OTHER_GROUP = "group:telegram:-100999"
GUILD = "guild:42:user:1001"
ALICE, BOB = "1001", "1002"


@dataclass(frozen=True)
class World:
    db: Database
    scope: Scope
    agent: agents.Agent

    @property
    def ids(self) -> dict[str, Any]:
        """Tenant, agent ID and key, as the channel constructors take them."""
        return {"tenant_id": self.scope.tenant_id, "agent_id": self.agent.id, "agent_key": self.agent.agent_key}

    def grant(self, config_type: str, sender_id: str, allow: bool, chat_scope: str = GROUP) -> None:
        with self.db.transaction() as tx:
            permissions.grant(tx, self.scope, self.agent.id, chat_scope=chat_scope, config_type=config_type,
                              sender_id=sender_id, allow=allow, granted_by="9999")
