"""Typed IDs and the two parsing contracts of the storage boundary.

* :func:`parse_id` — for every INSERT, UPDATE, UPSERT and DELETE, and every SELECT where an empty result
  would hide a bug.  A bad value raises :class:`InvalidIdError` (the field, the value, the expected format
  and what is wrong) *before* any SQL runs, so nothing is written and the caller sees a clean error instead
  of a driver's foreign-key failure or, worse, a silently empty update.
* :func:`parse_id_or_none` — only for read-only look-ups where "no match" is the right answer to bad input.
  It is intentionally silent; prefer ``parse_id`` in new code.

The ``NewType``s cost nothing at run time; they let mypy tell an agent ID from a team ID from a bare
``str`` (two adjacent string fields swapped at a call site is a type error, not a corrupted row).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Final, NewType, TypeVar, overload

from agentfy.ids import CANONICAL, explain_id, is_id
from agentfy.ids.registry import assert_id_prefix, derive_prefix

OrgId = NewType("OrgId", str)
OrgMemberId = NewType("OrgMemberId", str)
OrgCredentialId = NewType("OrgCredentialId", str)
OrgPolicyId = NewType("OrgPolicyId", str)
UserId = NewType("UserId", str)
AgentId = NewType("AgentId", str)
AgentLinkId = NewType("AgentLinkId", str)
AgentMcpServerId = NewType("AgentMcpServerId", str)
TeamId = NewType("TeamId", str)
TeamMemberId = NewType("TeamMemberId", str)
TeamApiKeyId = NewType("TeamApiKeyId", str)
EpisodicSummaryId = NewType("EpisodicSummaryId", str)
KgEntityId = NewType("KgEntityId", str)
KgRelationId = NewType("KgRelationId", str)
MemoryDocumentId = NewType("MemoryDocumentId", str)
MemoryChunkId = NewType("MemoryChunkId", str)
VaultDocumentId = NewType("VaultDocumentId", str)
SkillId = NewType("SkillId", str)
CronJobId = NewType("CronJobId", str)
AgentConfigPermissionId = NewType("AgentConfigPermissionId", str)
TeamTaskId = NewType("TeamTaskId", str)
TeamTaskAttachmentId = NewType("TeamTaskAttachmentId", str)

IdT = TypeVar("IdT", bound=str)

#: Every typed ID.  Each is named after its registered model (``Organization`` shortened to ``Org``, as prefixes
#: shorten it) with ``Id`` appended; mypy needs each ``NewType`` spelled out, the prefixes come from the registry.
TYPED_IDS: Final = (
    OrgId, OrgMemberId, OrgCredentialId, OrgPolicyId, UserId, AgentId, AgentLinkId, AgentMcpServerId, TeamId,
    TeamMemberId, TeamApiKeyId, EpisodicSummaryId, KgEntityId, KgRelationId, MemoryDocumentId, MemoryChunkId,
    VaultDocumentId, SkillId, CronJobId, AgentConfigPermissionId, TeamTaskId, TeamTaskAttachmentId,
)


def _registered_prefix(kind: Callable[[str], str]) -> str:
    """The prefix the registry gives the model a typed ID is named after (an import-time error if none)."""
    return assert_id_prefix(derive_prefix(kind.__name__.removesuffix("Id")))


#: The prefix of each typed ID, so ``parse_id(value, AgentId)`` can check the right format and return the type.
PREFIX_OF: Final[Mapping[object, str]] = MappingProxyType({kind: _registered_prefix(kind) for kind in TYPED_IDS})


class InvalidIdError(ValueError):
    """A value that should be an ID of one entity is not: names the field, the value and the expectation."""

    def __init__(self, value: object, prefix: str, *, field: str | None = None) -> None:
        self.value = value
        self.prefix = prefix
        self.field = field or f"{prefix}_id"
        self.expected = f"{CANONICAL.described_for(prefix)} (or an Agentfy legacy ID)"
        self.problems = explain_id(value, prefix).problems
        shown = value if isinstance(value, str) else type(value).__name__
        super().__init__(f"invalid {self.field} {shown!r}: expected {self.expected}; "
                         + "; ".join(self.problems))


@overload
def parse_id(value: object, kind: Callable[[str], IdT], *, field: str | None = None) -> IdT: ...
@overload
def parse_id(value: object, kind: str, *, field: str | None = None) -> str: ...
def parse_id(value: object, kind: Callable[[str], str] | str, *, field: str | None = None) -> str:
    """``value`` itself if it is an ID of ``kind``'s entity, else :class:`InvalidIdError`.  Use before every
    write.  ``kind`` is a typed ID (``AgentId``: the result is an ``AgentId``) or a registered prefix
    (``"agent"``: the result is a ``str``)."""
    prefix = kind if isinstance(kind, str) else PREFIX_OF[kind]
    if is_id(value, prefix):
        return value  # type: ignore[return-value]
    raise InvalidIdError(value, prefix, field=field)


def parse_id_or_none(value: object, prefix: str) -> str | None:
    """``value`` if it is an ID of ``prefix``'s entity, else ``None``.  Read-only look-ups only."""
    return value if is_id(value, prefix) else None  # type: ignore[return-value]
