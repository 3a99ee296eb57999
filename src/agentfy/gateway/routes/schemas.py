"""Request and response models shared by the routers, and the field types that state each input rule.

Every rule a JSON schema can express is stated in the OpenAPI document from the same definition the server
checks with: a text field's ``minLength``/``maxLength`` are the pydantic constraints that refuse it, its
``pattern`` is :data:`agentfy.store.inputs.TEXT_PATTERN` or :data:`~agentfy.store.inputs.LABEL_PATTERN`, built from
the character classes the store's checks compile.  ID fields carry their anchored pattern.  The rules no schema
can express are in their descriptions and listed in ``docs/input-policy.md``.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Final

from fastapi import Path
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator
from pydantic_core import PydanticCustomError

from agentfy.identity.keys import AGENT_KEY_MAX_LENGTH, AGENT_KEY_PATTERN
from agentfy.ids import CANONICAL, ID_MAX_LENGTH, id_pattern
from agentfy.store.inputs import (
    JSON_MAX_BYTES,
    JSON_MAX_DEPTH,
    LABEL_MAX_LENGTH,
    LABEL_PATTERN,
    TEXT_PATTERN,
    json_problem,
    label_character_problem,
)

AGENT_REF_MAX_LENGTH: Final = max(AGENT_KEY_MAX_LENGTH, ID_MAX_LENGTH)
#: An agent named either way: its ID (anchored ID pattern) or its agent_key.
AGENT_REF_PATTERN: Final = f"(?:{id_pattern('agent')})|(?:{AGENT_KEY_PATTERN})"
AGENT_REF_DESCRIPTION: Final = (f"The agent's ID ({CANONICAL.described_for('agent')}) or its agent_key "
                                "(lower-case slug, unique within the caller's organization).")


class Strict(BaseModel):
    """Every request model: unknown members refused (so a ``tenant_id`` in a body is a 422, never used), and the
    input policy on every field (:mod:`agentfy.store.inputs`: no NUL or lone surrogate in any string, even in
    a nested key, integers within 64 bits), so a request the store would refuse is a 422 naming the field."""

    model_config = ConfigDict(extra="forbid")

    @field_validator("*", mode="before")
    @classmethod
    def _input_policy(cls, value: Any) -> Any:
        """Strings and integers, and those directly in a list; objects are checked where they are declared
        (a nested model's own fields, or a :data:`JsonObject`), so the error names the innermost field."""
        scalars = value if isinstance(value, list) else (value,)
        for item in scalars:
            if isinstance(item, str | int):
                problem = json_problem(item)
                if problem is not None:
                    raise PydanticCustomError("invalid_input", "{problem}", {"problem": problem})
        return value


#: Where the OpenAPI document states what a value inside a :data:`JsonObject` may be
#: (:func:`agentfy.store.inputs.json_value_schema`, added by :func:`agentfy.gateway.openapi.compact`).
JSON_VALUE_REF: Final = "#/components/schemas/JsonValue"


def _json_document(value: dict[str, Any] | None) -> dict[str, Any] | None:
    if value is None:
        return None
    problem = json_problem(value)
    if problem is None and len(json.dumps(value, separators=(",", ":"))) > JSON_MAX_BYTES:
        problem = f"is larger than {JSON_MAX_BYTES} bytes as JSON"
    if problem is not None:
        raise PydanticCustomError("invalid_input", "{problem}", {"problem": problem})
    return value


def fullmatch_pattern(regex: re.Pattern[str], *, prefix: str = "") -> str:
    """The JSON-schema ``pattern`` of values ``regex.fullmatch`` accepts (after an optional ``prefix``, a
    pattern too): the server's own compiled rule, anchored, so the document states exactly what it checks.
    ``regex`` must be written in the syntax Python's ``re`` and ECMA-262 share."""
    return f"^{prefix}(?:{regex.pattern})$"


def _label_characters(value: str) -> str:
    problem = label_character_problem(value)
    if problem is not None:
        raise PydanticCustomError("invalid_input", "{problem}", {"problem": problem})
    return value


#: A label field (:func:`agentfy.store.inputs.check_label`: an identity string, no control character nor line
#: separator).  Declare it with :func:`label_field`, which states the rule and its lengths.
Label = Annotated[str, AfterValidator(_label_characters)]


def text_field(max_length: int, *, allow_empty: bool = False, default: Any = ..., description: str | None = None,
               schema: dict[str, Any] | None = None) -> Any:
    """A text field (:func:`agentfy.store.inputs.check_text`): non-empty unless ``allow_empty``, at most
    ``max_length`` characters (pydantic's constraints, which the schema states), no NUL (:class:`Strict` checks
    it, :data:`~agentfy.store.inputs.TEXT_PATTERN` states it); ``schema``: more JSON-schema keywords to state."""
    return Field(default, min_length=None if allow_empty else 1, max_length=max_length, description=description,
                 json_schema_extra={"pattern": TEXT_PATTERN, **(schema or {})})


def label_field(max_length: int = LABEL_MAX_LENGTH, *, allow_empty: bool = False, default: Any = ...,
                description: str | None = None, pattern: str = LABEL_PATTERN,
                schema: dict[str, Any] | None = None) -> Any:
    """A :data:`Label` field: non-empty unless ``allow_empty``, at most ``max_length`` characters, and
    ``pattern`` (the label rule, or a narrower pattern that implies it) stated in the schema, with ``schema``'s
    keywords (a rule the route or the store checks)."""
    return Field(default, min_length=None if allow_empty else 1, max_length=max_length, description=description,
                 json_schema_extra={"pattern": pattern, **(schema or {})})


#: A JSON object field (config, settings, metadata, payload, properties): at most 32 levels deep and
#: 256 KiB, every string and key within the input policy.
JsonObject = Annotated[dict[str, Any], AfterValidator(_json_document), Field(json_schema_extra={
    "propertyNames": {"pattern": TEXT_PATTERN}, "additionalProperties": {"$ref": JSON_VALUE_REF}},
    description=f"A JSON object, at most {JSON_MAX_DEPTH} levels deep and {JSON_MAX_BYTES // 1024} KiB as stored; "
                "no string or key inside holds a NUL or a lone surrogate, and every integer is within 64 bits.")]


class AgentIn(Strict):
    agent_key: str = Field(max_length=AGENT_KEY_MAX_LENGTH, pattern=AGENT_KEY_PATTERN,
                           description="Per-organization key: prompts, paths, logs and the UI use it.")
    display_name: str | None = text_field(200, default=None)
    config: JsonObject | None = None


class AgentPatch(Strict):
    agent_key: str | None = Field(default=None, max_length=AGENT_KEY_MAX_LENGTH, pattern=AGENT_KEY_PATTERN)
    display_name: str | None = text_field(200, default=None)
    config: JsonObject | None = None


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
    return Path(description=f"The {what}'s ID ({CANONICAL.described_for(prefix)}, or a legacy ID).",
                json_schema_extra=id_schema(prefix))
