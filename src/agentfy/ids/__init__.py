"""The canonical ID format of Agentfy, Bonsite, Securify, Shiffty and Store Deputy.

``<prefix>-<adjective>-<noun>-<12 lower-case Crockford base32>``, e.g. ``user-calm-rivers-k8m4p2d7n9x3``,
minted byte for byte like the TypeScript reference the five products share (so an ID minted here is one
any of them could have minted).  Standard library only, so any service can vendor it.  The names are the
reference's exports in snake_case:

>>> from agentfy.ids import format_id, is_id
>>> agent_id = format_id("agent")
>>> is_id(agent_id, "agent"), is_id(agent_id, "team")
(True, False)

``EntityId`` (a pydantic v2 type factory) is imported lazily, so pydantic is needed only by its users.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentfy.ids.constants import ID_MAX_LENGTH, ID_SUFFIX_ALPHABET, ID_SUFFIX_LENGTH, NIL_UUID
from agentfy.ids.explain import IdExplanation, explain_id
from agentfy.ids.formats import (
    AGENTFY_UUID_LEGACY,
    AGENTFY_WORDS_LEGACY,
    CANONICAL,
    LEGACY_ID_FORMATS,
    PRODUCT_LEGACY_ID_FORMATS,
    PRODUCTS,
    IdFormat,
    UuidFormat,
    WordsFormat,
)
from agentfy.ids.mint import format_id
from agentfy.ids.randomness import RandomSource, csprng
from agentfy.ids.registry import (
    ID_ENTITIES,
    ID_PREFIXES,
    RENAMED_PREFIXES,
    UnknownPrefixError,
    assert_id_prefix,
    derive_prefix,
    model_of_prefix,
)
from agentfy.ids.retry import (
    IdCollisionError,
    IdRetryExhaustedError,
    is_id_collision,
    with_id_retry,
    with_id_retry_async,
)
from agentfy.ids.validate import (
    UnknownProductError,
    id_format_of,
    id_pattern,
    id_prefix_of,
    id_shape_pattern,
    is_canonical_id,
    is_id,
    is_legacy_id,
    legacy_id_format,
)
from agentfy.ids.words import ID_WORDS, IdWords

if TYPE_CHECKING:
    from agentfy.ids.pydantic_types import EntityId

__all__ = [
    "AGENTFY_UUID_LEGACY",
    "AGENTFY_WORDS_LEGACY",
    "CANONICAL",
    "ID_ENTITIES",
    "ID_MAX_LENGTH",
    "ID_PREFIXES",
    "ID_SUFFIX_ALPHABET",
    "ID_SUFFIX_LENGTH",
    "ID_WORDS",
    "LEGACY_ID_FORMATS",
    "NIL_UUID",
    "PRODUCTS",
    "PRODUCT_LEGACY_ID_FORMATS",
    "RENAMED_PREFIXES",
    "EntityId",
    "IdCollisionError",
    "IdExplanation",
    "IdFormat",
    "IdRetryExhaustedError",
    "IdWords",
    "RandomSource",
    "UnknownPrefixError",
    "UnknownProductError",
    "UuidFormat",
    "WordsFormat",
    "assert_id_prefix",
    "csprng",
    "derive_prefix",
    "explain_id",
    "format_id",
    "id_format_of",
    "id_pattern",
    "id_prefix_of",
    "id_shape_pattern",
    "is_canonical_id",
    "is_id",
    "is_id_collision",
    "is_legacy_id",
    "legacy_id_format",
    "model_of_prefix",
    "with_id_retry",
    "with_id_retry_async",
]


def __getattr__(name: str) -> Any:
    if name == "EntityId":
        from agentfy.ids.pydantic_types import EntityId  # noqa: PLC0415 - lazy: pydantic is optional here

        return EntityId
    raise AttributeError(f"module 'agentfy.ids' has no attribute {name!r}")
