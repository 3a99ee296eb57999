"""The prefix registry: which model gets which ID prefix.

A prefix is the whole model name in kebab-case with the word ``Organization`` shortened to ``org``
(``OrganizationMember`` -> ``org-member``, ``AgentMcpServer`` -> ``agent-mcp-server``), lower case, at most
32 characters.  The registry is the only source of valid prefixes: validators build their patterns from it
(longest first), and an unknown prefix handed to a validator is a programming error, not a bad input.
"""

from __future__ import annotations

import re
from types import MappingProxyType
from typing import Final

from agentfy.ids.constants import ID_PREFIX_MAX_LENGTH

_WORD_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_MODEL_NAME = re.compile(r"[A-Z][A-Za-z0-9]*")
#: A well-formed prefix: lower-case words of letters and digits joined by single hyphens.
PREFIX_SHAPE: Final = re.compile(r"[a-z][a-z0-9]*(?:-[a-z][a-z0-9]*)*")


def derive_prefix(model: str) -> str:
    """The prefix for a model name, by the format's rule (PascalCase to kebab-case, ``Organization``
    shortened to ``org``); ``ValueError`` if the name or result is unusable."""
    if not _MODEL_NAME.fullmatch(model):
        raise ValueError(f"model name {model!r} is not PascalCase (expected e.g. 'AgentMcpServer')")
    words = ["org" if w == "Organization" else w.lower() for w in _WORD_BOUNDARY.split(model)]
    prefix = "-".join(words)
    if len(prefix) > ID_PREFIX_MAX_LENGTH:
        raise ValueError(f"prefix {prefix!r} for model {model!r} is {len(prefix)} characters; "
                         f"at most {ID_PREFIX_MAX_LENGTH} are allowed")
    return prefix


#: The platform's models, in the order they were registered.  Add a model here and nowhere else.
ID_MODELS: Final = (
    "Organization",
    "OrganizationMember",
    "OrganizationCredential",
    "OrganizationPolicy",
    "User",
    "Agent",
    "AgentLink",
    "AgentMcpServer",
    "Team",
    "TeamMember",
    "TeamApiKey",
    "EpisodicSummary",
    "KgEntity",
    "KgRelation",
    "MemoryDocument",
    "MemoryChunk",
    "VaultDocument",
    "Skill",
    "CronJob",
    "AgentConfigPermission",
    "TeamTask",
    "TeamTaskAttachment",
    "DomainEvent",
    "ApiKey",
    "OrganizationInvitation",
)

#: Model name -> prefix.  Read-only; every value equals ``derive_prefix(model)`` (tested).
ID_ENTITIES: Final = MappingProxyType({model: derive_prefix(model) for model in ID_MODELS})
#: Prefix -> model name.
MODEL_BY_PREFIX: Final = MappingProxyType({prefix: model for model, prefix in ID_ENTITIES.items()})
#: Every registered prefix.
ID_PREFIXES: Final = frozenset(ID_ENTITIES.values())
#: Registered prefixes, longest first, as the validators' alternation wants them.
ID_PREFIXES_LONGEST_FIRST: Final = tuple(sorted(ID_PREFIXES, key=lambda p: (-len(p), p)))

#: Prefixes retired when ``organization-*`` became ``org-*``, and what replaced them (the tail is kept).
#: Never minted, never valid; only the cutover reads this.
RENAMED_PREFIXES: Final = MappingProxyType({
    "organization": "org",
    "organization-member": "org-member",
    "organization-credential": "org-credential",
    "organization-policy": "org-policy",
})


class UnknownPrefixError(ValueError):
    """A prefix that is not in the registry was used to mint or validate: a programming error."""

    def __init__(self, prefix: object) -> None:
        super().__init__(f"ID prefix {prefix!r} is not in the registry (agentfy.ids.registry.ID_ENTITIES); "
                         "register the model there first")
        self.prefix = prefix


def assert_id_prefix(prefix: object) -> str:
    """``prefix`` itself if it is registered, else :class:`UnknownPrefixError`."""
    if not isinstance(prefix, str) or prefix not in ID_PREFIXES:
        raise UnknownPrefixError(prefix)
    return prefix


def model_of_prefix(prefix: str) -> str | None:
    """The model registered under ``prefix``, or ``None``."""
    return MODEL_BY_PREFIX.get(prefix)
