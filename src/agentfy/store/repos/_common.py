"""Small helpers the repositories share."""

from __future__ import annotations

import json
import unicodedata
from typing import Any, Final

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
