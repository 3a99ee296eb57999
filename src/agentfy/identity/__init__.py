"""Typed IDs and the request's identity: parsing at the boundary, and the required tenant ``Scope``.

An ID string from a request, an event, a file or a legacy row is parsed here into a typed value or refused
with an :class:`InvalidIdError` that names the field, the value and the expected format; everything inside
works on typed values and a required :class:`Scope`.
"""

from agentfy.identity.ids import (
    AgentConfigPermissionId,
    AgentId,
    AgentLinkId,
    AgentMcpServerId,
    CronJobId,
    EpisodicSummaryId,
    InvalidIdError,
    KgEntityId,
    KgRelationId,
    MemoryChunkId,
    MemoryDocumentId,
    OrgCredentialId,
    OrgId,
    OrgMemberId,
    OrgPolicyId,
    SkillId,
    TeamApiKeyId,
    TeamId,
    TeamMemberId,
    TeamTaskAttachmentId,
    TeamTaskId,
    UserId,
    VaultDocumentId,
    parse_id,
    parse_id_or_none,
)
from agentfy.identity.keys import AgentKey, InvalidAgentKeyError, parse_agent_key
from agentfy.identity.scope import Scope

__all__ = [
    "AgentConfigPermissionId",
    "AgentId",
    "AgentKey",
    "AgentLinkId",
    "AgentMcpServerId",
    "CronJobId",
    "EpisodicSummaryId",
    "InvalidAgentKeyError",
    "InvalidIdError",
    "KgEntityId",
    "KgRelationId",
    "MemoryChunkId",
    "MemoryDocumentId",
    "OrgCredentialId",
    "OrgId",
    "OrgMemberId",
    "OrgPolicyId",
    "Scope",
    "SkillId",
    "TeamApiKeyId",
    "TeamId",
    "TeamMemberId",
    "TeamTaskAttachmentId",
    "TeamTaskId",
    "UserId",
    "VaultDocumentId",
    "parse_agent_key",
    "parse_id",
    "parse_id_or_none",
]
