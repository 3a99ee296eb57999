"""Reading the OpenAPI document as a client would: a schema with its ``$ref``\\ s resolved, applied to a value."""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator


def accepts(spec: dict[str, Any], schema: dict[str, Any], value: object) -> bool:
    """Whether ``value`` is valid for ``schema`` of ``spec`` (local ``$ref``\\ s resolved against the document)."""
    validator = Draft202012Validator({**schema, "components": spec.get("components", {})})
    return validator.is_valid(value)
