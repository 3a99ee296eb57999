"""Small helpers the repositories share.  Text and JSON go through the one input policy
(:mod:`agentfy.store.inputs`)."""

from __future__ import annotations

import json
import unicodedata
from typing import Any, Final

from agentfy.store.errors import InvalidInputError
from agentfy.store.inputs import check_json, check_json_size, check_text, readable_object


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


def require_text(value: object, *, field: str, max_length: int = 10_000, allow_empty: bool = False) -> str:
    """A string within the input policy and ``max_length``, else :class:`InvalidInputError` naming the field."""
    return check_text(value, field, max_length=max_length, allow_empty=allow_empty)


#: Identity strings (actors, scopes, schedules, labels) are at most this long.
LABEL_MAX_LENGTH: Final = 200
_REFUSED_CATEGORIES: Final = frozenset({"Cc", "Cs", "Zl", "Zp"})


def _refused_character(value: str) -> str | None:
    for position, char in enumerate(value):
        if unicodedata.category(char) in _REFUSED_CATEGORIES:
            return f"contains the control character U+{ord(char):04X} at position {position}"
    return None


def require_label(value: object, *, field: str, max_length: int = LABEL_MAX_LENGTH,
                  allow_empty: bool = False) -> str:
    """A short identity string (an actor, a scope, a schedule): text within ``max_length`` with no control
    characters, else :class:`InvalidInputError` naming the field.  Such strings end up in logs, keys and
    permission look-ups, where an embedded newline or NUL would forge or split an entry."""
    text = require_text(value, field=field, max_length=max_length, allow_empty=allow_empty)
    problem = _refused_character(text)
    if problem is not None:
        raise InvalidInputError(f"{field} {problem}", field=field, value=text[:100])
    return text
