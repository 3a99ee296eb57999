"""``EntityId``: pydantic v2 types for ID fields, validated by ``is_id`` and documented by ``id_pattern``.

Kept out of ``agentfy.ids``'s eager imports so that the ID module stays standard-library-only; import it
from here or as ``agentfy.ids.EntityId`` (loaded on first use).

Validation is ``is_id`` itself (not the JSON-schema pattern), so the API accepts exactly what the library
accepts; the schema carries the anchored pattern and ``maxLength`` so OpenAPI shows the exact rule.  A
refusal is a ``PydanticCustomError`` of type ``invalid_id`` whose message names the value, the expected
prefix and what is wrong.
"""

from __future__ import annotations

import functools
from typing import Annotated, Any

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import PydanticCustomError, core_schema

from agentfy.ids.constants import ID_MAX_LENGTH
from agentfy.ids.explain import explain_id
from agentfy.ids.formats import CANONICAL
from agentfy.ids.registry import assert_id_prefix
from agentfy.ids.validate import id_pattern, is_id


class IdConstraint:
    """The pydantic marker behind :func:`EntityId`: a strict ``str`` that ``is_id(value, prefix)`` accepts."""

    __slots__ = ("prefix",)

    def __init__(self, prefix: str) -> None:
        self.prefix = assert_id_prefix(prefix)

    def check(self, value: str) -> str:
        if is_id(value, self.prefix):
            return value
        problems = "; ".join(explain_id(value, self.prefix).problems)
        expected = f"{CANONICAL.described_for(self.prefix)} or an Agentfy legacy ID"
        raise PydanticCustomError(
            "invalid_id",
            "{message}",
            {"message": f"{value!r} is not a valid {self.prefix} ID (expected {expected}): {problems}",
             "value": value, "prefix": self.prefix, "expected": expected, "problems": problems},
        )

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(
            self.check, core_schema.str_schema(strict=True, max_length=ID_MAX_LENGTH))

    def __get_pydantic_json_schema__(self, schema: core_schema.CoreSchema,
                                     handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        json_schema = handler(schema)
        json_schema.update(pattern=id_pattern(self.prefix), maxLength=ID_MAX_LENGTH,
                           examples=[f"{self.prefix}-calm-rivers-k8m4p2d7n9x3"],
                           description=f"ID of a {self.prefix!r} entity: {CANONICAL.described_for(self.prefix)}, "
                                       "or an ID in one of Agentfy's legacy formats")
        return json_schema


@functools.cache
def EntityId(prefix: str) -> Any:
    """An ``Annotated[str, …]`` type for IDs of ``prefix``'s entity, e.g. ``agent_id: EntityId("agent")``."""
    return Annotated[str, IdConstraint(prefix)]
