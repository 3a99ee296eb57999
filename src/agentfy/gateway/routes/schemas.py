"""Request and response models shared by the routers; ID fields carry their anchored pattern."""

from __future__ import annotations

import json
from typing import Annotated, Any, Final

from fastapi import Path
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator
from pydantic_core import PydanticCustomError

from agentfy.identity.keys import AGENT_KEY_MAX_LENGTH, AGENT_KEY_PATTERN
from agentfy.ids import CANONICAL, ID_MAX_LENGTH, id_pattern
from agentfy.store.inputs import JSON_MAX_BYTES, JSON_MAX_DEPTH, json_problem

AGENT_REF_MAX_LENGTH: Final = 100
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


def _json_document(value: dict[str, Any] | None) -> dict[str, Any] | None:
    if value is None:
        return None
    problem = json_problem(value)
    if problem is None and len(json.dumps(value, separators=(",", ":"))) > JSON_MAX_BYTES:
        problem = f"is larger than {JSON_MAX_BYTES} bytes as JSON"
    if problem is not None:
        raise PydanticCustomError("invalid_input", "{problem}", {"problem": problem})
    return value


#: A JSON object field (config, settings, metadata, payload, properties): at most 32 levels deep and
#: 256 KiB, every string and key within the input policy.
JsonObject = Annotated[dict[str, Any], AfterValidator(_json_document), Field(
    description=f"A JSON object, at most {JSON_MAX_DEPTH} levels deep and {JSON_MAX_BYTES // 1024} KiB.")]


class AgentIn(Strict):
    agent_key: str = Field(max_length=AGENT_KEY_MAX_LENGTH, pattern=AGENT_KEY_PATTERN,
                           description="Per-organization key: prompts, paths, logs and the UI use it.")
    display_name: str | None = Field(default=None, max_length=200)
    config: JsonObject | None = None


class AgentPatch(Strict):
    agent_key: str | None = Field(default=None, max_length=AGENT_KEY_MAX_LENGTH, pattern=AGENT_KEY_PATTERN)
    display_name: str | None = Field(default=None, max_length=200)
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
