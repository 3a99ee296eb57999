"""The input policy: what a text or a JSON value must be before it is stored — one rule, both engines.

Why each rule:

* **No NUL** (U+0000) in any string: PostgreSQL cannot store it in text, SQLite can — so without the rule the
  engines disagree, and on PostgreSQL the driver fails with a 500 instead of a 422.
* **No lone surrogate** (U+D800 to U+DFFF, not in a pair): it is not Unicode text.  SQLite refuses to encode it,
  PostgreSQL too, but JSON escapes it (``"\\udc00"``), so a JSON document could store one, and every later
  read that serialises the row failed.
* **JSON documents bounded**: at most :data:`JSON_MAX_DEPTH` levels (deeper documents broke the serialiser of
  every read, and a deep enough one the parser), at most :data:`JSON_MAX_BYTES` per field as stored, keys
  strings, numbers finite, integers within 64 bits (what PostgreSQL's ``bigint`` and every JSON parser in
  the other products can hold).
* **Integers** anywhere within int64.

The request models, the WebSocket protocol and the store's checks all call these functions, so no path can
store what the API would refuse.  :func:`repaired` is the other side: values stored before the policy
existed are still readable (marked, never dropped), and ``agentfy db scan`` lists them.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Final

from agentfy.store.errors import InvalidInputError

JSON_MAX_DEPTH: Final = 32
JSON_MAX_BYTES: Final = 256 * 1024
INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1
#: How much of a refused value an error shows (escaped: any input can be echoed).
ECHO_MAX_CHARS: Final = 200
#: What replaces a part of a stored document that breaks the policy, on output.
REPAIRED_MARK: Final = "\ufffd"
DEEP_MARK: Final = {"_agentfy_truncated": f"nested deeper than {JSON_MAX_DEPTH} levels"}
#: The member a stored document that is not an object (or not JSON at all) is shown under, on output.
NOT_AN_OBJECT: Final = "_agentfy_not_an_object"
UNREADABLE: Final = "_agentfy_unreadable"

#: The characters no string may hold besides lone surrogates, and those a label may not hold either: bodies of
#: a regular-expression character class spelled with ``\uXXXX`` escapes, which Python's ``re`` and ECMA-262 (the
#: dialect of a JSON schema's ``pattern``) read alike.  The server's checks (:data:`_BAD_TEXT`,
#: :data:`_NOT_IN_A_LABEL`) and the OpenAPI document (:data:`TEXT_PATTERN`, :data:`LABEL_PATTERN`) are built from
#: them, so the two cannot drift.
TEXT_FORBIDDEN: Final = r"\u0000"
LABEL_FORBIDDEN: Final = r"\u0000-\u001f\u007f-\u009f\u2028\u2029"
#: Lone surrogates (in a Python string a surrogate is always lone).  No ``pattern`` states them: an ECMA-262
#: pattern without the ``u`` flag reads a string as UTF-16 code units, where a character outside the BMP is a
#: surrogate pair, so excluding surrogates would exclude every emoji.  A JSON document can only carry one
#: escaped (``"\udc00"``), which is not Unicode text; the rule is stated in prose (``docs/input-policy.md``).
_SURROGATES: Final = r"\ud800-\udfff"
_BAD_TEXT: Final = re.compile(f"[{TEXT_FORBIDDEN}{_SURROGATES}]")
#: The text policy as a JSON-schema ``pattern`` (anchored: every character of the string).
TEXT_PATTERN: Final = f"^[^{TEXT_FORBIDDEN}]*$"
#: A label is an identity string a person or a system names something by: a sender, a chat scope, a session
#: key, a schedule, a task ID.  Labels end up in logs, keys and grant look-ups, where an embedded newline or
#: NUL would forge or split an entry, so they are held to more than the text policy (:func:`label_problem`)
#: and to at most this many characters.
LABEL_MAX_LENGTH: Final = 200
#: Unicode categories Cc (control characters), Cs (surrogates: in a Python string always lone), Zl and Zp
#: (the line and paragraph separators, which break a log line as a newline does).
_NOT_IN_A_LABEL: Final = re.compile(f"[{LABEL_FORBIDDEN}{_SURROGATES}]")
#: The label rule's characters as a JSON-schema ``pattern`` (lengths are ``minLength``/``maxLength``).
LABEL_PATTERN: Final = f"^[^{LABEL_FORBIDDEN}]*$"
_JSON_STRING: Final = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_A_BRACKET: Final = bytes(b for b in range(256) if b not in b"[]{}")
_INNERMOST: Final = re.compile(rb"\[\]|\{\}|\[\}|\{\]")


def text_problem(value: str) -> str | None:
    """Why ``value`` breaks the policy (a NUL or a lone surrogate, and where), or ``None``."""
    found = _BAD_TEXT.search(value)
    if found is None:
        return None
    character = found.group()
    what = "a NUL character" if character == "\x00" else f"a lone surrogate (U+{ord(character):04X})"
    return f"contains {what} at position {found.start()}"


def is_clean_text(value: str) -> bool:
    """Whether ``value`` passes :func:`text_problem` — the same rule as a predicate, for a loop that checks
    many strings and asks for the detailed error only on failure."""
    return _BAD_TEXT.search(value) is None


def json_problem(value: object, *, max_depth: int = JSON_MAX_DEPTH) -> str | None:
    """Why a decoded JSON value breaks the policy (naming the path inside it), or ``None``."""
    stack: list[tuple[object, str, int]] = [(value, "", 0)]
    while stack:
        node, path, depth = stack.pop()
        if depth > max_depth:
            return f"is nested deeper than {max_depth} levels (at {path or 'the top'})"
        if isinstance(node, str):
            problem = text_problem(node)
            if problem:
                return f"{path or 'the value'} {problem}"
        elif isinstance(node, bool) or node is None:
            continue
        elif isinstance(node, int):
            if not INT64_MIN <= node <= INT64_MAX:
                return f"{path or 'the value'} is an integer outside 64 bits"
        elif isinstance(node, float):
            if not math.isfinite(node):
                return f"{path or 'the value'} is not a finite number"
        elif isinstance(node, dict):
            for key, item in node.items():
                if not isinstance(key, str):
                    return f"{path or 'the value'} has a key that is not a string"
                problem = text_problem(key)
                if problem:
                    return f"a key of {path or 'the value'} {problem}"
                stack.append((item, f"{path}.{key}" if path else key, depth + 1))
        elif isinstance(node, list | tuple):
            stack.extend((item, f"{path}[{i}]", depth + 1) for i, item in enumerate(node))
        else:
            return f"{path or 'the value'} is a {type(node).__name__}, not a JSON value"
    return None


def json_text_too_deep(raw: bytes | str, max_depth: int) -> bool:
    """Whether the JSON text ``raw`` nests deeper than ``max_depth``, found *before* parsing it (a parser would
    recurse, and fail or take long, on a document nested thousands deep).

    String contents are blanked first (a bracket inside a string is no nesting), then everything but the
    brackets is dropped, then innermost pairs are removed ``max_depth`` times: whatever remains was deeper.
    Each step is a C-speed regular-expression or translate pass.  Unbalanced text is left to the parser.
    """
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    if data.count(b"[") + data.count(b"{") <= max_depth:
        return False
    brackets = _JSON_STRING.sub(b'""', data).translate(None, _NOT_A_BRACKET)
    for _ in range(max_depth):
        brackets, removed = _INNERMOST.subn(b"", brackets)
        if not brackets or not removed:
            return False
    return bool(brackets) and _INNERMOST.search(brackets) is not None


def shown(value: object) -> object:
    """``value`` as an error may echo it: a string truncated to :data:`ECHO_MAX_CHARS` with every lone surrogate
    escaped (so the error itself can always be encoded); numbers and booleans as they are, but for integers
    beyond 64 bits and floats that are not finite (JSON cannot carry them); anything else ``None``."""
    if isinstance(value, str):
        text = value[:ECHO_MAX_CHARS] + ("…" if len(value) > ECHO_MAX_CHARS else "")
        return text.encode("utf-8", "backslashreplace").decode("utf-8") if _BAD_TEXT.search(text) else text
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, bool | int):
        return value if INT64_MIN <= value <= INT64_MAX else None
    return None


def safe_text(value: str) -> str:
    """``value`` with lone surrogates escaped, for messages that quote input."""
    return value.encode("utf-8", "backslashreplace").decode("utf-8") if _BAD_TEXT.search(value) else value

#: What could make a JSON number that is not finite: ``NaN``/``Infinity`` (which Python's reader accepts, though
#: JSON has no such values), a three-digit exponent, or 309 digits in a row.  A cheap test that passes over
#: nearly every real body; only a body it matches is parsed to find out.
_MAYBE_NOT_FINITE: Final = re.compile(rb"NaN|Infinity|[eE][+]?[0-9]{3}|[0-9]{309}")


class _NotFinite(ValueError):
    def __init__(self, literal: str) -> None:
        super().__init__(literal)
        self.literal = literal


def _reject_constant(literal: str) -> float:
    raise _NotFinite(literal)


def _finite_float(literal: str) -> float:
    number = float(literal)
    if not math.isfinite(number):
        raise _NotFinite(literal)
    return number


def non_finite_number(raw: bytes | str) -> str | None:
    """The first number of the JSON text ``raw`` that is not finite (``NaN``, ``Infinity``, ``1e400``), as
    written, or ``None``.

    JSON has no such numbers, but Python's reader turns them into floats that can be neither stored as JSON nor
    sent back in an error: every reader of request JSON refuses them (422) before parsing.  Text that is not
    JSON at all is left to the parser (``None``)."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    if _MAYBE_NOT_FINITE.search(data) is None:
        return None
    try:
        json.loads(data, parse_constant=_reject_constant, parse_float=_finite_float)
    except _NotFinite as error:
        return error.literal
    except (ValueError, RecursionError):
        return None
    return None



def _value_problem(value: object, *, max_length: int, allow_empty: bool) -> str | None:
    if type(value) is not str:
        return f"expected a string, got {type(value).__name__}"
    if not value and not allow_empty:
        return "must not be empty"
    if len(value) > max_length:
        return f"is {len(value)} characters; at most {max_length} are allowed"
    return text_problem(value)


def _refuse(value: object, field: str, problem: str) -> InvalidInputError:
    echo = shown(value)
    quoted = repr(echo) if echo is not None else safe_text(repr(value)[:ECHO_MAX_CHARS])
    return InvalidInputError(f"invalid {field} {quoted}: {problem}", field=field, value=echo)


def check_text(value: object, field: str, *, max_length: int, allow_empty: bool = False) -> str:
    """``value`` if it is a string within the policy and ``max_length``, else :class:`InvalidInputError`
    naming the field and (escaped, truncated) the value."""
    problem = _value_problem(value, max_length=max_length, allow_empty=allow_empty)
    if problem is not None:
        raise _refuse(value, field, problem)
    return value  # type: ignore[return-value]


def label_problem(value: object, *, max_length: int = LABEL_MAX_LENGTH, allow_empty: bool = False) -> str | None:
    """Why ``value`` cannot be a label (see :data:`LABEL_MAX_LENGTH`), or ``None``: the text policy, and no
    control character (Unicode Cc, NUL, tab and newline included) nor line or paragraph separator (Zl, Zp)."""
    problem = _value_problem(value, max_length=max_length, allow_empty=allow_empty)
    if problem is None and isinstance(value, str):
        problem = label_character_problem(value)
    return problem


def label_character_problem(value: str) -> str | None:
    """The character part of :func:`label_problem` (where lengths are checked elsewhere, as a request model's
    ``min_length``/``max_length`` do): the first control character or separator, and where, or ``None``."""
    found = _NOT_IN_A_LABEL.search(value)
    if found is None:
        return None
    return f"contains the control character U+{ord(found.group()):04X} at position {found.start()}"


def text_schema(max_length: int, *, allow_empty: bool = False) -> dict[str, Any]:
    """The JSON-schema facets of :func:`check_text` with these arguments (for the OpenAPI document)."""
    return {"minLength": 0 if allow_empty else 1, "maxLength": max_length, "pattern": TEXT_PATTERN}


def json_value_schema(ref: str) -> dict[str, Any]:
    """The JSON schema of a value inside a JSON document (``ref`` is where the schema itself is, for nesting):
    every string and key within the text policy, at any depth.

    Not stated, because no JSON schema can: the depth (:data:`JSON_MAX_DEPTH`), the size as stored
    (:data:`JSON_MAX_BYTES`), lone surrogates (see :data:`_SURROGATES`), and the 64-bit bound of integers: it
    applies to an integer *literal*, while a schema sees numbers, to which ``1e21`` (a float, accepted) and
    ``1000000000000000000000`` (refused) are the same integer.  Bounding integers in the schema would refuse
    floats the server takes, so the schema states any number and the bound is in the input policy's list."""
    return {"anyOf": [
        {"type": "string", "pattern": TEXT_PATTERN},
        {"type": "number"},
        {"type": ["boolean", "null"]},
        {"type": "array", "items": {"$ref": ref}},
        {"type": "object", "propertyNames": {"pattern": TEXT_PATTERN}, "additionalProperties": {"$ref": ref}},
    ]}


def check_label(value: object, field: str, *, max_length: int = LABEL_MAX_LENGTH, allow_empty: bool = False) -> str:
    """``value`` if it is a label (:func:`label_problem`), else :class:`InvalidInputError` naming the field and
    the value."""
    problem = label_problem(value, max_length=max_length, allow_empty=allow_empty)
    if problem is not None:
        raise _refuse(value, field, problem)
    return value  # type: ignore[return-value]


def check_json(value: object, field: str, *, max_bytes: int = JSON_MAX_BYTES) -> None:
    """:class:`InvalidInputError` naming the field unless ``value`` is a JSON value within the policy."""
    problem = json_problem(value)
    if problem is not None:
        raise InvalidInputError(f"invalid {field}: {problem}", field=field, value=None)


def check_json_size(text: str, field: str, *, max_bytes: int = JSON_MAX_BYTES) -> str:
    """``text`` (a serialised document) if within ``max_bytes``, else :class:`InvalidInputError`."""
    if len(text) > max_bytes:
        raise InvalidInputError(f"invalid {field}: {len(text)} bytes as JSON; at most {max_bytes} are allowed",
                                field=field, value=None)
    return text


def readable_object(text: str) -> dict[str, Any]:
    """A stored JSON object as readers can always use it: :func:`repaired`, and wrapped in an object when what
    is stored is not one (:data:`NOT_AN_OBJECT`) or not JSON at all (:data:`UNREADABLE`, its first characters)."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return {UNREADABLE: repaired(text[:ECHO_MAX_CHARS])}
    fixed = repaired(value)
    return fixed if isinstance(fixed, dict) else {NOT_AN_OBJECT: fixed}


def repaired(value: Any, depth: int = 0) -> Any:
    """A stored JSON value made readable whatever it holds: lone surrogates become U+FFFD, NUL stays (JSON can
    carry it), anything deeper than :data:`JSON_MAX_DEPTH` becomes :data:`DEEP_MARK`.  Values within the policy
    come back unchanged (the common case costs one scan)."""
    if depth == 0 and json_problem(value) is None:
        return value
    if depth >= JSON_MAX_DEPTH and isinstance(value, dict | list):
        return dict(DEEP_MARK)
    if isinstance(value, str):
        return _BAD_TEXT.sub(lambda m: m.group() if m.group() == "\x00" else REPAIRED_MARK, value)
    if isinstance(value, dict):
        return {repaired(k, depth + 1) if isinstance(k, str) else str(k): repaired(v, depth + 1)
                for k, v in value.items()}
    if isinstance(value, list):
        return [repaired(item, depth + 1) for item in value]
    return value
