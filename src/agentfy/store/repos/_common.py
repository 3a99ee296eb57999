"""Small helpers the repositories share.  Text and JSON go through the one input policy
(:mod:`agentfy.store.inputs`)."""

from __future__ import annotations

import json
from typing import Any

from agentfy.identity.roles import InvalidRoleError, Role, parse_role
from agentfy.store.errors import InvalidInputError
from agentfy.store.inputs import LABEL_MAX_LENGTH, check_json, check_json_size, check_label, check_text, readable_object


def dump_json(value: Any, *, field: str) -> str:
    """``value`` as JSON text within the input policy (depth, size, text, numbers), or an error naming the
    field."""
    if not value:
        return "{}" if value is None or isinstance(value, dict) else json.dumps(value)
    check_json(value, field)
    try:
        text = json.dumps(value, separators=(",", ":"), sort_keys=True)
    except (TypeError, ValueError) as error:
        raise InvalidInputError(f"{field} is not JSON-serialisable: {error}", field=field, value=None) from None
    return check_json_size(text, field)


def load_json(text: str | None) -> dict[str, Any]:
    """A stored document (an object), readable whatever it holds: one written before the input policy that
    breaks it is repaired or marked on output (``inputs.readable_object``), never an error."""
    if not text or text == "{}":
        return {}
    return readable_object(text)


def require_role(value: object) -> Role:
    """An organization role (:mod:`agentfy.identity.roles`), else :class:`InvalidInputError` naming ``role``."""
    try:
        return parse_role(value)
    except InvalidRoleError as error:
        raise InvalidInputError(str(error), field=error.field, value=value) from None


def require_text(value: object, *, field: str, max_length: int = 10_000, allow_empty: bool = False) -> str:
    """A string within the input policy and ``max_length``, else :class:`InvalidInputError` naming the field."""
    return check_text(value, field, max_length=max_length, allow_empty=allow_empty)


def require_label(value: object, *, field: str, max_length: int = LABEL_MAX_LENGTH,
                  allow_empty: bool = False) -> str:
    """A short identity string (an actor, a scope, a schedule) by the one label rule
    (:func:`agentfy.store.inputs.check_label`: no control characters, at most ``max_length``), else
    :class:`InvalidInputError` naming the field."""
    return check_label(value, field, max_length=max_length, allow_empty=allow_empty)
