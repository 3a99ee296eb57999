"""Small helpers the repositories share."""

from __future__ import annotations

import json
from typing import Any

from agentfy.store.errors import InvalidInputError


def dump_json(value: Any, *, field: str) -> str:
    """``value`` as JSON text, or a clear error naming the field."""
    if not value:
        return "{}" if value is None or isinstance(value, dict) else json.dumps(value)
    try:
        return json.dumps(value if value is not None else {}, separators=(",", ":"), sort_keys=True)
    except (TypeError, ValueError) as error:
        raise InvalidInputError(f"{field} is not JSON-serialisable: {error}", field=field, value=None) from None


def load_json(text: str | None) -> Any:
    if not text or text == "{}":
        return {}
    return json.loads(text)


def require_text(value: object, *, field: str, max_length: int = 10_000, allow_empty: bool = False) -> str:
    """A plain string within ``max_length``, else :class:`InvalidInputError` naming the field."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{field} must be a string, got {type(value).__name__}", field=field, value=value)
    if not value and not allow_empty:
        raise InvalidInputError(f"{field} must not be empty", field=field, value=value)
    if len(value) > max_length:
        raise InvalidInputError(f"{field} is {len(value)} characters; at most {max_length} are allowed",
                                field=field, value=value[:100])
    return value
