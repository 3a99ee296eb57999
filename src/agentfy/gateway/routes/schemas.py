"""Request and response models shared by the routers; ID fields carry their anchored pattern."""

from __future__ import annotations

from typing import Any, Final

from fastapi import Path
from pydantic import BaseModel, ConfigDict, Field

from agentfy.agents.router import resolve_agent_id_cached
from agentfy.gateway.app import GatewayState
from agentfy.gateway.auth import Principal
from agentfy.gateway.errors import ApiError
from agentfy.identity import AgentId, InvalidAgentKeyError, InvalidIdError
from agentfy.identity.keys import AGENT_KEY_MAX_LENGTH
from agentfy.ids import ID_MAX_LENGTH, id_pattern
from agentfy.store.errors import NotFoundError

AGENT_KEY_PATTERN: Final = r"^[a-z0-9]+(?:-[a-z0-9]+)*$"
AGENT_REF_MAX_LENGTH: Final = 100
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


def id_schema(prefix: str) -> dict[str, Any]:
    """The JSON-schema extras of an ID of ``prefix``'s entity: its anchored pattern and length."""
    return {"pattern": id_pattern(prefix), "maxLength": ID_MAX_LENGTH,
            "examples": [f"{prefix}-calm-rivers-k8m4p2d7n9x3"]}


def id_field(prefix: str, description: str | None = None) -> Any:
    return Field(description=description, json_schema_extra=id_schema(prefix))


def optional_id_field(prefix: str, description: str | None = None) -> Any:
    return Field(default=None, description=description, json_schema_extra=id_schema(prefix))


def agent_ref_field(description: str = AGENT_REF_DESCRIPTION, *, default: Any = ...) -> Any:
    """A body field naming an agent by ID or key.  The pattern documents both forms; the resolver enforces
    them with the precise error (a team ID where an agent belongs is invalid_id, a bad slug
    invalid_agent_key), so it is not a pydantic constraint."""
    return Field(default, max_length=AGENT_REF_MAX_LENGTH, description=description,
                 json_schema_extra={"pattern": AGENT_REF_PATTERN})


def id_path(prefix: str, what: str) -> Any:
    return Path(description=f"The {what}'s ID ({prefix}-<adjective>-<noun>-<12 Crockford base32>, or a legacy ID).",
                json_schema_extra=id_schema(prefix))


def not_found(entity: str, ref: object, field: str) -> ApiError:
    """The contract's 404 (the same body for a missing row and another organization's), naming the field."""
    return ApiError(404, "not_found", f"{entity} not found", field=field,
                    value=ref if isinstance(ref, str) else None)


def resolve_agent_ref(gateway: GatewayState, who: Principal, value: str, field: str = "agent") -> AgentId:
    """The ID of the caller's agent named by ``value`` (an ID or an agent_key), through the router's cache;
    errors name ``field`` (the body field or path parameter the value came from).

    A malformed value is 422 (``invalid_id`` for another entity's ID, ``invalid_agent_key`` otherwise); a
    missing, deleted or another organization's agent is the same 404.
    """
    try:
        return resolve_agent_id_cached(gateway.router, who.context(), value)
    except InvalidIdError as error:
        raise InvalidIdError(error.value, "agent", field=field) from error
    except InvalidAgentKeyError as error:
        raise InvalidAgentKeyError(error.value, error.reason, field=field) from error
    except NotFoundError as error:
        raise not_found(error.entity, error.ref, field) from error
