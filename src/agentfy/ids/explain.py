"""Explaining an ID: what it is, or exactly which part is wrong.

Used by ``agentfy id check``/``explain`` and by the API's error messages.  The diagnosis describes the
*canonical* shape, because that is what a new value should be; a value in a legacy format is reported as
such, with no problems.  Diagnosis never changes the verdict: ``valid`` is always ``is_id``'s answer.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from typing import Any

from agentfy.ids.constants import ID_MAX_LENGTH, ID_SUFFIX_ALPHABET, ID_SUFFIX_LENGTH, NIL_UUID
from agentfy.ids.formats import CANONICAL, PRODUCTS, WordsFormat
from agentfy.ids.registry import ID_PREFIXES, MODEL_BY_PREFIX, RENAMED_PREFIXES
from agentfy.ids.validate import PrefixArg, allowed_prefixes, id_format_of, is_id
from agentfy.ids.words import ADJECTIVES, NOUNS, VERBS

EXPECTED_SHAPE = CANONICAL.description


@dataclass(frozen=True)
class IdExplanation:
    """What ``explain_id`` found.  ``problems`` is empty exactly when ``valid`` is true."""

    value: object
    valid: bool
    format: str | None = None
    format_description: str | None = None
    prefix: str | None = None
    model: str | None = None
    words: tuple[str, ...] = ()
    suffix: str | None = None
    accepted_by: tuple[str, ...] = ()
    problems: tuple[str, ...] = field(default_factory=tuple)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (``agentfy id check --json``, the API)."""
        return {
            "value": self.value if isinstance(self.value, str) else repr(self.value),
            "valid": self.valid,
            "format": self.format,
            "format_description": self.format_description,
            "prefix": self.prefix,
            "model": self.model,
            "words": list(self.words),
            "suffix": self.suffix,
            "accepted_by": list(self.accepted_by),
            "problems": list(self.problems),
        }


def _character_problems(value: str) -> list[str]:
    problems: list[str] = []
    for position, char in enumerate(value):
        if char.isascii() and (char.islower() or char.isdigit() or char == "-"):
            continue
        name = unicodedata.name(char, "unnamed")
        code = f"U+{ord(char):04X} {name}"
        if not char.isascii():
            problems.append(f"character {position} is {code}, not ASCII (look-alikes are never normalised)")
        elif char.isupper():
            problems.append(f"character {position} is upper-case {char!r}; IDs are lower case and are "
                            "never case-folded")
        elif char == "%":
            problems.append(f"character {position} is '%': percent-encoded values are never decoded")
        elif char.isspace() or not char.isprintable():
            problems.append(f"character {position} is {code} (whitespace or control characters are "
                            "never trimmed)")
        else:
            problems.append(f"character {position} is {char!r}, which no ID contains")
        if len(problems) == 3:
            problems.append("…")
            break
    return problems


def _word_problem(word: str, kind: str, dictionary: frozenset[str]) -> str | None:
    if word in dictionary:
        return None
    hints = [name for name, words in (("adjective", ADJECTIVES), ("noun", NOUNS), ("verb", VERBS))
             if word in words and name != kind]
    hint = f" (it is a human-id {hints[0]})" if hints else ""
    return f"{kind} {word!r} is not one of human-id 4.1.3's {len(dictionary)} {kind}s{hint}"


def _structure_problems(value: str, prefixes: frozenset[str]) -> list[str]:
    parts = value.rsplit("-", 3)
    if len(parts) != 4:
        return [f"has {len(parts)} hyphen-separated part(s); expected {EXPECTED_SHAPE}"]
    head, adjective, noun, suffix = parts
    problems: list[str] = []
    if head not in ID_PREFIXES:
        if head in RENAMED_PREFIXES:
            problems.append(f"prefix {head!r} was retired when organization-* became org-*; the cutover renames it to "
                            f"{RENAMED_PREFIXES[head]!r} (keeping the tail)")
        else:
            problems.append(f"prefix {head!r} is not registered (registered: {', '.join(sorted(ID_PREFIXES))})")
    elif head not in prefixes:
        expected = " or ".join(repr(p) for p in sorted(prefixes))
        problems.append(f"prefix {head!r} ({MODEL_BY_PREFIX[head]}) is not the expected {expected}")
    for problem in (_word_problem(adjective, "adjective", ADJECTIVES), _word_problem(noun, "noun", NOUNS)):
        if problem:
            problems.append(problem)
    if len(suffix) != ID_SUFFIX_LENGTH:
        problems.append(f"suffix {suffix!r} has {len(suffix)} characters; expected {ID_SUFFIX_LENGTH}")
    bad = sorted({c for c in suffix if c not in ID_SUFFIX_ALPHABET})
    if bad:
        problems.append(f"suffix {suffix!r} contains {', '.join(repr(c) for c in bad)}, outside Crockford "
                        "base32 (0-9 and a-z without i, l, o, u)")
    return problems


def explain_id(value: object, prefix: PrefixArg = None, *, product: str = "agentfy") -> IdExplanation:
    """Explain ``value`` as an ID for ``prefix`` (any registered one by default) in ``product``.

    ``accepted_by`` lists the products whose ``is_id`` accepts the value with any prefix.
    """
    prefixes = allowed_prefixes(prefix, product)
    accepted_by = tuple(p for p in PRODUCTS if is_id(value, None, product=p))
    if not isinstance(value, str):
        return IdExplanation(value, False, problems=(f"expected a string, got {type(value).__name__}",))
    fmt = id_format_of(value, prefix, product=product)
    if fmt is not None:
        if isinstance(fmt, WordsFormat):
            parts = value.rsplit("-", len(fmt.dictionaries) + 1)
            head, words, suffix = parts[0], tuple(parts[1:-1]), parts[-1]
            return IdExplanation(value, True, fmt.name, fmt.description, head, MODEL_BY_PREFIX.get(head),
                                 words, suffix, accepted_by)
        return IdExplanation(value, True, fmt.name, fmt.description, accepted_by=accepted_by)
    problems: list[str] = []
    if value == "":
        problems.append(f"is empty; expected {EXPECTED_SHAPE}")
    elif len(value) > ID_MAX_LENGTH:
        problems.append(f"is {len(value)} characters long; no ID is longer than {ID_MAX_LENGTH}")
    elif value == NIL_UUID:
        problems.append("is the nil UUID, which is never an identity")
    else:
        problems.extend(_character_problems(value))
        if not problems:
            problems.extend(_structure_problems(value, prefixes if prefixes is not None else ID_PREFIXES))
        if not problems and CANONICAL.match(value, None):
            problems.append(f"is canonical in shape but not for product {product!r} with prefix {prefix!r}")
        if not problems:
            problems.append(f"does not match {EXPECTED_SHAPE} or any {product} legacy format")
    return IdExplanation(value, False, accepted_by=accepted_by, problems=tuple(problems))
