"""Models and parameters of the administrative routers (organizations, teams, links, skills, cron, grants).

Request models forbid unknown fields (so a ``tenant_id`` in a body is refused, never used).  ID fields and
ID path parameters show their anchored pattern in OpenAPI but are parsed by the store (``parse_id``), so a
malformed ID is a 422 that names the field, the value and the expected format.  Agent references (an ID or
an ``agent_key``) are resolved by :func:`resolve_agent_ref`: the router's cache first, the store on a miss.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from fastapi import Path
from pydantic import BaseModel, Field, StrictBool

from agentfy.agents.router import resolve_agent_id_cached
from agentfy.gateway.app import GatewayState
from agentfy.gateway.auth import Principal
from agentfy.gateway.routes.schemas import AGENT_REF_DESCRIPTION, AGENT_REF_PATTERN, Strict
from agentfy.identity import AgentId, InvalidAgentKeyError, InvalidIdError
from agentfy.ids import ID_MAX_LENGTH, id_pattern
from agentfy.store.repos.permissions import CONFIG_TYPES

Role = Literal["owner", "admin", "operator", "member"]
AGENT_REF_MAX_LENGTH: Final = 100


def id_schema(prefix: str) -> dict[str, Any]:
    """The JSON-schema extras of an ID of ``prefix``'s entity: its anchored pattern and length."""
    return {"pattern": id_pattern(prefix), "maxLength": ID_MAX_LENGTH,
            "examples": [f"{prefix}-calm-rivers-k8m4p2d7n9x3"]}


def _id_field(prefix: str, description: str | None = None) -> Any:
    return Field(description=description, json_schema_extra=id_schema(prefix))


def _optional_id_field(prefix: str, description: str | None = None) -> Any:
    return Field(default=None, description=description, json_schema_extra=id_schema(prefix))


def _agent_ref_field(description: str = AGENT_REF_DESCRIPTION, *, default: Any = ...) -> Any:
    return Field(default, max_length=AGENT_REF_MAX_LENGTH, description=description,
                 json_schema_extra={"pattern": AGENT_REF_PATTERN})


def _id_path(prefix: str, what: str) -> Any:
    return Path(description=f"The {what}'s ID ({prefix}-<adjective>-<noun>-<12 Crockford base32>, or a legacy ID).",
                json_schema_extra=id_schema(prefix))


# -- path parameters ----------------------------------------------------------------------------------------
OrgIdPath = Annotated[str, _id_path("org", "organization")]
UserIdPath = Annotated[str, _id_path("user", "user")]
ApiKeyIdPath = Annotated[str, _id_path("api-key", "API key")]
TeamIdPath = Annotated[str, _id_path("team", "team")]
TeamApiKeyIdPath = Annotated[str, _id_path("team-api-key", "team API key")]
LinkIdPath = Annotated[str, _id_path("agent-link", "agent link")]
McpServerIdPath = Annotated[str, _id_path("agent-mcp-server", "MCP server")]
SkillIdPath = Annotated[str, _id_path("skill", "skill")]
CronJobIdPath = Annotated[str, _id_path("cron-job", "cron job")]
GrantIdPath = Annotated[str, _id_path("agent-config-permission", "grant")]


def resolve_agent_ref(gateway: GatewayState, who: Principal, value: str, *, field: str = "agent") -> AgentId:
    """The ID of the agent named by ``value`` (an ID or an ``agent_key``) in the caller's tenant, through the
    router's cache.  Errors name ``field`` (the body field or path parameter the value came from)."""
    try:
        return resolve_agent_id_cached(gateway.router, who.context(), value)
    except InvalidIdError as error:
        if error.field == field:
            raise
        raise InvalidIdError(error.value, "agent", field=field) from None
    except InvalidAgentKeyError as error:
        if error.field == field:
            raise
        raise InvalidAgentKeyError(error.value, error.reason, field=field) from None


# -- organizations ------------------------------------------------------------------------------------------
class OwnerIn(Strict):
    display_name: str = Field(max_length=200)
    email: str | None = Field(default=None, max_length=320)


class OrgIn(Strict):
    slug: str = Field(max_length=63, description="Lower-case slug, unique; never has the shape of an ID.")
    name: str = Field(max_length=200)
    settings: dict[str, Any] | None = None
    owner: OwnerIn | None = Field(default=None, description="Create this person as the organization's owner; "
                                                            "the owner key then acts as them.")


class OrgOut(BaseModel):
    id: str = _id_field("org")
    slug: str
    name: str
    default_agent_id: str | None = _optional_id_field("agent")
    settings: dict[str, Any]
    created_at: str


class UserOut(BaseModel):
    id: str = _id_field("user")
    email: str | None
    display_name: str


class ApiKeyOut(BaseModel):
    id: str = _id_field("api-key")
    name: str
    role: str
    user_id: str | None = _optional_id_field("user")
    platform_admin: bool
    key_prefix: str = Field(description="The first characters of the key, to recognise it; never the key.")
    created_at: str
    revoked_at: str | None


class IssuedApiKeyOut(BaseModel):
    api_key: ApiKeyOut
    key: str = Field(description="The plaintext key: shown this once, never stored and never shown again.")


class OrgCreated(BaseModel):
    organization: OrgOut
    owner: UserOut | None
    api_key: IssuedApiKeyOut


class DefaultAgentIn(Strict):
    agent: str | None = _agent_ref_field("The default agent by ID or agent_key; null clears it.")


class MemberIn(Strict):
    """Either ``user_id`` (an existing user) or ``display_name`` (and ``email``) for a new one."""

    user_id: str | None = _optional_id_field("user", "An existing user to add.")
    display_name: str | None = Field(default=None, max_length=200, description="Create a user with this name.")
    email: str | None = Field(default=None, max_length=320)
    role: Role = "member"


class MemberOut(BaseModel):
    id: str = _id_field("org-member")
    user_id: str = _id_field("user")
    role: str


class ApiKeyIn(Strict):
    name: str = Field(max_length=200)
    role: Role = "member"
    user_id: str | None = _optional_id_field("user", "The member the key acts as (its skills, its audit trail).")


# -- teams --------------------------------------------------------------------------------------------------
class TeamIn(Strict):
    name: str = Field(max_length=200)
    lead: str | None = _agent_ref_field("The lead agent by ID or agent_key (not made a member).", default=None)


class TeamOut(BaseModel):
    id: str = _id_field("team")
    tenant_id: str = _id_field("org")
    name: str
    lead_agent_id: str | None = _optional_id_field("agent")
    created_at: str


class LeadIn(Strict):
    agent: str | None = _agent_ref_field("The lead agent by ID or agent_key; null removes the lead.")


class TeamMemberIn(Strict):
    agent: str = _agent_ref_field()
    role: str = Field(default="member", max_length=50)


class TeamMemberOut(BaseModel):
    id: str = _id_field("team-member")
    team_id: str = _id_field("team")
    agent_id: str = _id_field("agent")
    agent_key: str | None = Field(description="The agent's current key (null if the agent is archived).")
    role: str
    created_at: str


class TeamApiKeyIn(Strict):
    name: str = Field(max_length=200)


class TeamApiKeyOut(BaseModel):
    id: str = _id_field("team-api-key")
    team_id: str = _id_field("team")
    name: str
    key_prefix: str
    created_at: str
    revoked_at: str | None


class IssuedTeamApiKeyOut(BaseModel):
    api_key: TeamApiKeyOut
    key: str = Field(description="The plaintext key: shown this once, never stored and never shown again.")


# -- links and MCP servers ----------------------------------------------------------------------------------
class LinkIn(Strict):
    target: str = _agent_ref_field("The target agent by ID or agent_key (another agent of the organization).")
    kind: str = Field(default="delegate", max_length=50, description="delegate, handoff, …")


class LinkOut(BaseModel):
    id: str = _id_field("agent-link")
    source_agent_id: str = _id_field("agent")
    target_agent_id: str = _id_field("agent")
    kind: str
    created_at: str


class McpServerIn(Strict):
    name: str = Field(max_length=200)
    url: str = Field(max_length=2048)
    config: dict[str, Any] | None = None


class McpServerOut(BaseModel):
    id: str = _id_field("agent-mcp-server")
    agent_id: str = _id_field("agent")
    name: str
    url: str
    config: dict[str, Any]
    created_at: str


# -- skills -------------------------------------------------------------------------------------------------
class SkillIn(Strict):
    name: str = Field(max_length=200)
    content: str


class SkillPatch(Strict):
    content: str


class SkillOut(BaseModel):
    id: str = _id_field("skill")
    owner_id: str = Field(description="The acting person who published it (legacy rows: a chat scope).")
    name: str
    content: str
    created_at: str


# -- cron jobs ----------------------------------------------------------------------------------------------
class CronJobIn(Strict):
    schedule: str = Field(max_length=200, description="The schedule as the scheduler reads it, e.g. '0 9 * * 1'.")
    payload: dict[str, Any] | None = None
    enabled: StrictBool = True


class CronJobPatch(Strict):
    enabled: StrictBool


class CronJobOut(BaseModel):
    id: str = _id_field("cron-job")
    agent_id: str = _id_field("agent")
    created_by: str = Field(description="The ACTOR who scheduled it (audit).")
    user_id: str = Field(description="The SCOPE it runs in (empty: none).")
    schedule: str
    payload: dict[str, Any]
    enabled: bool
    created_at: str


# -- group-chat permission grants ---------------------------------------------------------------------------
class GrantIn(Strict):
    chat_scope: str = Field(max_length=200, description="The group or guild chat: group:<channel>:<chat>, guild:…")
    config_type: str = Field(json_schema_extra={"enum": list(CONFIG_TYPES)})
    sender_id: str = Field(max_length=200, description="The individual sender (ACTOR), never the group.")
    allow: StrictBool = True


class GrantOut(BaseModel):
    id: str = _id_field("agent-config-permission")
    agent_id: str = _id_field("agent")
    chat_scope: str
    config_type: str
    sender_id: str
    allow: bool
    granted_by: str | None
    created_at: str


# -- heartbeat ----------------------------------------------------------------------------------------------
class HeartbeatOut(BaseModel):
    id: str = _id_field("agent")
    tenant_id: str = _id_field("org")
    agent_key: str
    display_name: str
    running: bool = Field(description="Whether a run of the agent is in progress in this process.")
    checked_at: str
