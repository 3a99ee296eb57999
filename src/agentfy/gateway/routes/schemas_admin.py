"""Models and parameters of the administrative routers (organizations, teams, links, skills, cron, grants).

Request models forbid unknown fields (so a ``tenant_id`` in a body is refused, never used).  ID fields and
ID path parameters show their anchored pattern in OpenAPI but are parsed by the store (``parse_id``), so a
malformed ID is a 422 that names the field, the value and the expected format.  Agent references (an ID or
an ``agent_key``) are resolved by :mod:`agentfy.gateway.resolve`: in the writing transaction for writes, through
the router's cache for reads.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool

from agentfy.gateway.routes.schemas import (  # re-exported for the admin routes
    JsonObject,
    Label,
    Strict,
    agent_ref_field,
    id_field,
    id_path,
    label_field,
    optional_id_field,
    text_field,
)
from agentfy.identity.keys import SLUG_PATTERN, TENANT_SLUG_MAX_LENGTH
from agentfy.identity.roles import Role
from agentfy.permissions.senders import CHAT_SCOPE_PREFIXES
from agentfy.runtime.mcp.servers import CONFIG_SCHEMA, STDIO_SCHEME
from agentfy.schedule import SCHEDULE_MAX_LENGTH, SCHEDULE_PATTERN, TIMEZONE_MAX_LENGTH, TIMEZONE_PATTERN
from agentfy.store.inputs import LABEL_FORBIDDEN
from agentfy.store.repos.links import URL_MAX_LENGTH
from agentfy.store.repos.permissions import CONFIG_TYPES
from agentfy.store.repos.skills import SKILL_CONTENT_MAX_LENGTH

#: A group or guild chat scope (``permissions.senders.CHAT_SCOPE_PREFIXES``) that is a label.
_CHAT_SCOPE_START: Final = "^(?:" + "|".join(re.escape(prefix) for prefix in CHAT_SCOPE_PREFIXES) + ")"
CHAT_SCOPE_PATTERN: Final = f"{_CHAT_SCOPE_START}[^{LABEL_FORBIDDEN}]*$"
#: An MCP server's URL: http(s) or stdio:, and a label (the rest — a host, an allowed command — is
#: :func:`agentfy.runtime.mcp.servers.parse_target`'s, which no pattern states).
MCP_URL_PATTERN: Final = f"^(?:https?://|{re.escape(STDIO_SCHEME)})[^{LABEL_FORBIDDEN}]*$"


# -- path parameters ----------------------------------------------------------------------------------------
OrgIdPath = Annotated[str, id_path("org", "organization")]
UserIdPath = Annotated[str, id_path("user", "user")]
ApiKeyIdPath = Annotated[str, id_path("api-key", "API key")]
InvitationIdPath = Annotated[str, id_path("org-invitation", "invitation")]
TeamIdPath = Annotated[str, id_path("team", "team")]
TeamApiKeyIdPath = Annotated[str, id_path("team-api-key", "team API key")]
LinkIdPath = Annotated[str, id_path("agent-link", "agent link")]
McpServerIdPath = Annotated[str, id_path("agent-mcp-server", "MCP server")]
SkillIdPath = Annotated[str, id_path("skill", "skill")]
CronJobIdPath = Annotated[str, id_path("cron-job", "cron job")]
GrantIdPath = Annotated[str, id_path("agent-config-permission", "grant")]




# -- organizations ------------------------------------------------------------------------------------------
class OwnerIn(Strict):
    display_name: str = text_field(200)
    email: str | None = text_field(320, allow_empty=True, default=None)


class OrgIn(Strict):
    slug: str = Field(max_length=TENANT_SLUG_MAX_LENGTH, json_schema_extra={"pattern": SLUG_PATTERN},
                      description="Lower-case slug (a-z, 0-9, single hyphens), unique; never has the shape of an "
                                  "ID (the store refuses one that does).")
    name: str = text_field(200)
    settings: JsonObject | None = None
    owner: OwnerIn | None = Field(default=None, description="Create this person as the organization's owner; "
                                                            "the owner key then acts as them.")


class OrgOut(BaseModel):
    id: str = id_field("org")
    slug: str
    name: str
    default_agent_id: str | None = optional_id_field("agent")
    settings: dict[str, Any]
    created_at: str


class UserOut(BaseModel):
    id: str = id_field("user")
    email: str | None
    display_name: str


class ApiKeyOut(BaseModel):
    id: str = id_field("api-key")
    name: str
    role: str
    user_id: str | None = optional_id_field("user")
    platform_admin: bool
    key_prefix: str = Field(description="The first characters of the key, to recognise it; never the key.")
    created_at: str
    revoked_at: str | None
    expires_at: str | None = Field(default=None, description="When the key stops working (null: never).")


class IssuedApiKeyOut(BaseModel):
    api_key: ApiKeyOut
    key: str = Field(description="The plaintext key: shown this once, never stored and never shown again.")


class OrgCreated(BaseModel):
    organization: OrgOut
    owner: UserOut | None
    api_key: IssuedApiKeyOut


class DefaultAgentIn(Strict):
    agent: str | None = agent_ref_field("The default agent by ID or agent_key; null clears it.")


class MemberIn(Strict):
    """``display_name`` (and ``email``) to add a new person; ``user_id`` to invite an existing one, who becomes a
    member only by accepting with a credential of their own.  Exactly one of the two (the schema's ``oneOf``;
    the route refuses both or neither)."""

    model_config = ConfigDict(json_schema_extra={"oneOf": [
        {"required": [name], "properties": {name: {"type": "string"}}} for name in ("user_id", "display_name")]})

    user_id: str | None = optional_id_field("user", "An existing person to invite (they must accept).")
    display_name: str | None = text_field(200, default=None, description="Create a person with this name.")
    email: str | None = text_field(320, allow_empty=True, default=None)
    role: Role = "member"


class MemberOut(BaseModel):
    id: str = id_field("org-member")
    user_id: str = id_field("user")
    role: str


class MemberPatch(Strict):
    role: Role = Field(description="The member's new role. Keys acting as them are narrowed to it at once.")


class InvitationOut(BaseModel):
    id: str = id_field("org-invitation")
    tenant_id: str = id_field("org")
    user_id: str = id_field("user")
    role: str
    status: str = Field(description="pending, accepted, declined or withdrawn")
    created_at: str
    expires_at: str
    org_slug: str | None = Field(default=None, description="The inviting organization (the invited person's view).")
    org_name: str | None = None


class InvitedOut(BaseModel):
    """The answer to inviting an existing person: the same whether or not the ID names anybody."""

    invitation: InvitationOut


class AcceptedOut(BaseModel):
    organization_id: str = id_field("org")
    member: MemberOut


class ApiKeyIn(Strict):
    name: str = text_field(200)
    role: Role = "member"
    user_id: str | None = optional_id_field("user", "The member the key acts as (its skills, its audit trail).")
    expires_in_days: int | None = Field(default=None, ge=1, le=3650,
                                        description="The key stops working after this many days (default: never).")


# -- teams --------------------------------------------------------------------------------------------------
class TeamIn(Strict):
    name: str = text_field(200)
    lead: str | None = agent_ref_field("The lead agent by ID or agent_key (not made a member).", default=None)


class TeamOut(BaseModel):
    id: str = id_field("team")
    tenant_id: str = id_field("org")
    name: str
    lead_agent_id: str | None = optional_id_field("agent")
    created_at: str


class LeadIn(Strict):
    agent: str | None = agent_ref_field("The lead agent by ID or agent_key; null removes the lead.")


class TeamMemberIn(Strict):
    agent: str = agent_ref_field()
    role: str = text_field(50, default="member")


class TeamMemberOut(BaseModel):
    id: str = id_field("team-member")
    team_id: str = id_field("team")
    agent_id: str = id_field("agent")
    agent_key: str | None = Field(description="The agent's current key (null if the agent is archived).")
    role: str
    created_at: str


class TeamApiKeyIn(Strict):
    name: str = text_field(200)


class TeamApiKeyOut(BaseModel):
    id: str = id_field("team-api-key")
    team_id: str = id_field("team")
    name: str
    key_prefix: str
    created_at: str
    revoked_at: str | None


class IssuedTeamApiKeyOut(BaseModel):
    api_key: TeamApiKeyOut
    key: str = Field(description="The plaintext key: shown this once, never stored and never shown again.")


# -- links and MCP servers ----------------------------------------------------------------------------------
class LinkIn(Strict):
    target: str = agent_ref_field("The target agent by ID or agent_key (another agent of the organization).")
    kind: Label = label_field(50, default="delegate", description="delegate, handoff, …")


class LinkOut(BaseModel):
    id: str = id_field("agent-link")
    source_agent_id: str = id_field("agent")
    target_agent_id: str = id_field("agent")
    kind: str
    created_at: str


#: A JSON object of the members an MCP server's config takes (:mod:`agentfy.runtime.mcp.servers`).
McpConfig = Annotated[JsonObject, Field(json_schema_extra=CONFIG_SCHEMA, description=(
    "How to reach the server: transport, credential (with header) and the call timeout; nothing else."))]


class McpServerIn(Strict):
    name: Label = label_field()
    url: Label = label_field(URL_MAX_LENGTH, pattern=MCP_URL_PATTERN, description=(
        "An http(s) URL with a host (Streamable HTTP, or SSE with config.transport 'sse'), or stdio:<command> "
        "for a command line the platform allows (mcp.allowed_commands)."))
    config: McpConfig | None = None


class McpServerOut(BaseModel):
    id: str = id_field("agent-mcp-server")
    agent_id: str = id_field("agent")
    name: str
    url: str
    config: dict[str, Any]
    created_at: str


class McpToolOut(BaseModel):
    name: str = Field(description="The tool's name on its server.")
    model_name: str = Field(description="The name the model is offered: mcp__<server name>__<tool name>, "
                                        "[a-zA-Z0-9_-] and at most 64 characters.")
    description: str
    input_schema: dict[str, Any] = Field(description="The tool's JSON schema of its arguments, as the server "
                                                     "declares it.")


class McpServerToolsOut(BaseModel):
    server_id: str = id_field("agent-mcp-server")
    name: str
    status: Literal["connected", "error"] = Field(description="connected: a run would be offered these tools; "
                                                              "error: the server is unavailable (see error).")
    error: str | None = Field(description="Why the server is unavailable; null when connected.")
    tools: list[McpToolOut]


# -- skills -------------------------------------------------------------------------------------------------
class SkillIn(Strict):
    name: Label = label_field()
    content: str = text_field(SKILL_CONTENT_MAX_LENGTH)


class SkillPatch(Strict):
    content: str = text_field(SKILL_CONTENT_MAX_LENGTH)


class SkillOut(BaseModel):
    id: str = id_field("skill")
    owner_id: str = Field(description="The acting person who published it (legacy rows: a chat scope).")
    name: str
    content: str
    created_at: str


# -- cron jobs ----------------------------------------------------------------------------------------------
class CronJobIn(Strict):
    schedule: Label = label_field(SCHEDULE_MAX_LENGTH, pattern=SCHEDULE_PATTERN, description=(
        "The schedule: a five-field cron expression ('0 9 * * 1'), 'every 30s', or 'at 2026-12-24T09:00:00+01:00' "
        "(docs/cron.md); the cron fields' ranges, a real date in the future and at most 366 days are checked too."))
    timezone: Label = label_field(TIMEZONE_MAX_LENGTH, default="UTC", pattern=TIMEZONE_PATTERN, description=(
        "The IANA time zone a cron expression is read in; one of the server's time-zone database."))
    payload: JsonObject | None = None
    enabled: StrictBool = True


class CronJobPatch(Strict):
    enabled: StrictBool


class CronJobOut(BaseModel):
    id: str = id_field("cron-job")
    agent_id: str = id_field("agent")
    created_by: str = Field(description="The ACTOR who scheduled it (audit).")
    user_id: str = Field(description="The SCOPE it runs in (empty: none).")
    schedule: str
    payload: dict[str, Any]
    enabled: bool
    created_at: str
    timezone: str = "UTC"
    next_run_at: str | None = Field(default=None, description="When it fires next (UTC); null: nothing left.")
    last_run_at: str | None = None


class CronRunOut(BaseModel):
    job_id: str = id_field("cron-job")
    due_at: str = Field(description="The slot it ran for (a manual run: when it was asked); with job_id its key.")
    cause: str = Field(description="schedule or manual")
    started_at: str
    ended_at: str | None
    outcome: str = Field(description="running, ok, failed, denied (the creator's right, checked at fire time) or "
                                     "skipped")
    error: str | None = Field(description="Why it failed, was denied or skipped (short).")
    session_key: str | None = Field(description="The session the run spoke in.")


# -- group-chat permission grants ---------------------------------------------------------------------------
class GrantIn(Strict):
    chat_scope: Label = label_field(pattern=CHAT_SCOPE_PATTERN, description=(
        "The group or guild chat: group:<channel>:<chat>, guild:…"))
    config_type: str = Field(max_length=50, json_schema_extra={"enum": list(CONFIG_TYPES)})
    sender_id: Label = label_field(description="The individual sender (ACTOR), never the group (not a chat scope).",
                                   schema={"not": {"pattern": _CHAT_SCOPE_START}})
    allow: StrictBool = True


class GrantOut(BaseModel):
    id: str = id_field("agent-config-permission")
    agent_id: str = id_field("agent")
    chat_scope: str
    config_type: str
    sender_id: str
    allow: bool
    granted_by: str | None
    created_at: str


# -- heartbeat ----------------------------------------------------------------------------------------------
class HeartbeatOut(BaseModel):
    id: str = id_field("agent")
    tenant_id: str = id_field("org")
    agent_key: str
    display_name: str
    running: bool = Field(description="Whether a run of the agent is in progress in this process.")
    checked_at: str
