"""The OpenAPI document, compact: the ID dictionaries once, each error response once.

An anchored ID pattern lists the 200 adjectives and 300 nouns of the format (and the legacy verbs: about 8 KB).
Inlined at each of the hundred-odd ID fields and parameters, and with the error responses repeated on every
operation, the document was close to a megabyte, which clients and Swagger UI load slowly.  :func:`compact`:

* replaces each inline ID schema with a ``$ref`` to ``#/components/schemas/<Model>Id``, and the agent
  reference ("an ID or an agent_key") with ``AgentRef``, keeping the field's own description and examples
  beside the reference (allowed in OpenAPI 3.1);
* states the dictionaries once, in ``AnyId`` (``id_pattern()``: any registered prefix), and each entity's ID
  as ``allOf`` of ``AnyId`` and that entity's short structural pattern (``id_shape_pattern``).  A value is
  valid for both exactly when it is a valid ID of that entity (see ``id_shape_pattern``), so every ID
  parameter still carries its whole anchored pattern;
* states once, in ``JsonValue``, what a value inside a JSON object field may be;
* refers each operation's error responses to ``#/components/responses``;
* states the rules of a request body as a whole (which fields go together, no other field) that an operation
  declares under :data:`BODY_RULES` in its ``openapi_extra``, in the body's schema itself: a keyword such as
  ``additionalProperties`` beside a ``$ref`` would not see the referenced schema's properties.

:func:`declare_bearer` states the credential: an HTTP bearer scheme, named on every operation that
authenticates (``/docs`` gets an Authorize button; generated clients send it as a credential, not as data).
"""

from __future__ import annotations

from typing import Any, Final

from agentfy.gateway.errors import ERROR_RESPONSES
from agentfy.gateway.routes.schemas import AGENT_REF_DESCRIPTION, AGENT_REF_PATTERN, JSON_VALUE_REF
from agentfy.identity.keys import AGENT_KEY_MAX_LENGTH, AGENT_KEY_PATTERN
from agentfy.ids import CANONICAL, ID_ENTITIES, ID_MAX_LENGTH, id_pattern, id_shape_pattern
from agentfy.store.inputs import json_value_schema

_REPLACED: Final = frozenset({"type", "pattern", "maxLength"})
_ERROR_BODY_REF: Final = "#/components/schemas/ErrorBody"
#: The ``openapi_extra`` key under which a route declares JSON-schema keywords of its whole request body.
BODY_RULES: Final = "x-body-rules"
BEARER_SCHEME_NAME: Final = "bearer"
BEARER_SCHEME: Final = {"type": "http", "scheme": "bearer",
                        "description": "An API key (agfy_ok_…, agfy_tk_…) or a signed context (agfy_sc_…)."}


def _is_string(schema: object) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "string" and "pattern" not in schema


def _component_name(prefix: str) -> str:
    return "".join(part.capitalize() for part in prefix.split("-")) + "Id"


def _id_components() -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
    """(pattern -> component name, component name -> schema) for every registered prefix and agent refs."""
    names: dict[str, str] = {}
    schemas: dict[str, dict[str, Any]] = {
        "AnyId": {"type": "string", "maxLength": ID_MAX_LENGTH, "pattern": id_pattern(),
                  "description": "An ID of any registered entity, canonical or Agentfy legacy: the word "
                                 "dictionaries, stated once. Validated exactly: no case folding, trimming or "
                                 "decoding."}}
    for model, prefix in sorted(ID_ENTITIES.items()):
        name = _component_name(prefix)
        names[id_pattern(prefix)] = name
        schemas[name] = {
            "type": "string", "maxLength": ID_MAX_LENGTH,
            "allOf": [{"$ref": "#/components/schemas/AnyId"}, {"pattern": id_shape_pattern(prefix)}],
            "description": f"The ID of a {model}: {CANONICAL.described_for(prefix)} (or an "
                           "Agentfy legacy ID).",
            "examples": [f"{prefix}-calm-rivers-k8m4p2d7n9x3"]}
    names[AGENT_REF_PATTERN] = "AgentRef"
    schemas["AgentRef"] = {"anyOf": [{"$ref": "#/components/schemas/AgentId"},
                                     {"type": "string", "maxLength": AGENT_KEY_MAX_LENGTH,
                                      "pattern": AGENT_KEY_PATTERN}],
                           "description": AGENT_REF_DESCRIPTION}
    return names, schemas


def _error_response_name(status: int | str) -> str:
    return f"Error{status}"


def compact(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with shared ID components and shared error responses (see the module docstring)."""
    names, id_schemas = _id_components()
    used: set[str] = set()

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(item) for item in node]
        if not isinstance(node, dict):
            return node
        pattern = node.get("pattern")
        if isinstance(pattern, str) and pattern in names:
            reference = {"$ref": f"#/components/schemas/{names[pattern]}"}
            if node.get("type") == "string":  # an ID
                used.add(names[pattern])
                return {**reference, **{key: walk(value) for key, value in node.items() if key not in _REPLACED}}
            branches = node.get("anyOf")
            if isinstance(branches, list) and any(_is_string(b) for b in branches):  # an ID (or a key) or null
                used.add(names[pattern])
                kept = {key: walk(value) for key, value in node.items() if key not in _REPLACED | {"anyOf"}}
                return {"anyOf": [{**reference, **{k: v for k, v in b.items() if k != "type"}} if _is_string(b)
                                  else b for b in branches], **kept}
        return {key: walk(value) for key, value in node.items()}

    compacted: dict[str, Any] = walk(document)
    _state_body_rules(compacted)
    _lean_parameters(compacted)
    for name in list(used):  # what the used components refer to
        if name == "AgentRef":
            used.add("AgentId")
    if used:
        used.add("AnyId")
    components = compacted.setdefault("components", {})
    components.setdefault("schemas", {}).update({name: id_schemas[name] for name in sorted(used)})
    components["schemas"][JSON_VALUE_REF.rpartition("/")[2]] = {
        **json_value_schema(JSON_VALUE_REF),
        "description": "A value inside a JSON object: strings and keys without NUL and integers within 64 bits, at "
                       "any depth (depth and size are limited too, see the object's description)."}
    _share_error_responses(compacted)
    return compacted


def _state_body_rules(document: dict[str, Any]) -> None:
    """Merge each operation's :data:`BODY_RULES` into the schema its request body refers to."""
    schemas = document.get("components", {}).get("schemas", {})
    for item in document.get("paths", {}).values():
        for operation in item.values():
            rules = operation.pop(BODY_RULES, None) if isinstance(operation, dict) else None
            if not rules:
                continue
            for media in operation.get("requestBody", {}).get("content", {}).values():
                reference = media.get("schema", {}).get("$ref", "")
                target = schemas.get(reference.rpartition("/")[2]) if reference else media.get("schema")
                if target is None:
                    raise ValueError(f"{operation.get('operationId')}: body rules for a body with no schema")
                target.update(rules)


def _lean_parameters(document: dict[str, Any]) -> None:
    """A parameter whose schema is a shared ID component keeps its description on the parameter only: the
    component carries the pattern and an example once, so repeating them in every operation only adds bytes."""
    for item in document.get("paths", {}).values():
        for operation in item.values():
            for parameter in operation.get("parameters", []) if isinstance(operation, dict) else []:
                schema = parameter.get("schema")
                if isinstance(schema, dict) and "$ref" in schema:
                    parameter["schema"] = {"$ref": schema["$ref"]}
                    if "description" in schema:
                        parameter.setdefault("description", schema["description"])


def _share_error_responses(document: dict[str, Any]) -> None:
    shared: dict[str, Any] = {}
    for status, spec in ERROR_RESPONSES.items():
        shared[_error_response_name(status)] = {
            "description": spec["description"],
            "content": {"application/json": {"schema": {"$ref": _ERROR_BODY_REF}}}}
    descriptions = {str(status): spec["description"] for status, spec in ERROR_RESPONSES.items()}
    for item in document.get("paths", {}).values():
        for operation in item.values():
            responses = operation.get("responses", {}) if isinstance(operation, dict) else {}
            for status, response in list(responses.items()):
                schema = response.get("content", {}).get("application/json", {}).get("schema", {})
                if descriptions.get(status) == response.get("description") and schema == {"$ref": _ERROR_BODY_REF}:
                    responses[status] = {"$ref": f"#/components/responses/{_error_response_name(status)}"}
    document.setdefault("components", {})["responses"] = shared


def declare_bearer(document: dict[str, Any], operation_ids: frozenset[str]) -> dict[str, Any]:
    """``document`` with the bearer scheme in its components and named by each operation in ``operation_ids``
    (the ones whose route authenticates its caller)."""
    document.setdefault("components", {}).setdefault("securitySchemes", {})[BEARER_SCHEME_NAME] = dict(BEARER_SCHEME)
    for item in document.get("paths", {}).values():
        for operation in item.values():
            if isinstance(operation, dict) and operation.get("operationId") in operation_ids:
                operation["security"] = [{BEARER_SCHEME_NAME: []}]
    return document
