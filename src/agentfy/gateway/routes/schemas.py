"""Request and response models shared by the routers; ID fields carry their anchored pattern."""

from __future__ import annotations

from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field

from agentfy.identity.keys import AGENT_KEY_MAX_LENGTH
from agentfy.ids import id_pattern

AGENT_KEY_PATTERN: Final = r"^[a-z0-9]+(?:-[a-z0-9]+)*$"
#: An agent named either way: its ID (anchored ID pattern) or its agent_key.
AGENT_REF_PATTERN: Final = f"(?:{id_pattern('agent')})|(?:{AGENT_KEY_PATTERN})"
AGENT_REF_DESCRIPTION: Final = ("The agent's ID (agent-<adjective>-<noun>-<12 Crockford base32>) or its agent_key "
                                "(lower-case slug, unique within the caller's organization).")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AgentIn(Strict):
    agent_key: str = Field(max_length=AGENT_KEY_MAX_LENGTH, pattern=AGENT_KEY_PATTERN,
                           description="Per-organization key: prompts, paths, logs and the UI use it.")
    display_name: str | None = Field(default=None, max_length=200)
    config: dict[str, Any] | None = None


class AgentPatch(Strict):
    agent_key: str | None = Field(default=None, max_length=AGENT_KEY_MAX_LENGTH, pattern=AGENT_KEY_PATTERN)
    display_name: str | None = Field(default=None, max_length=200)
    config: dict[str, Any] | None = None


class AgentOut(BaseModel):
    id: str = Field(json_schema_extra={"pattern": id_pattern("agent")})
    tenant_id: str = Field(json_schema_extra={"pattern": id_pattern("org")})
    agent_key: str
    display_name: str
    config: dict[str, Any]
    created_at: str
    updated_at: str
