"""Validation: ``is_canonical_id``, ``is_legacy_id``, ``is_id`` and their helpers.

Contract (the same in every product, so an ID one accepts no other refuses):

* a value is accepted only as it is: no case folding, Unicode normalisation, percent-decoding or trimming;
* anything that is not a ``str`` is refused (``False``), never an exception;
* the length is bounded (at most ``ID_MAX_LENGTH``) before any parsing: checked, or, on the canonical hot
  path, bounded by the compiled pattern, which reads at most ``CANONICAL_MAX_WIDTH`` characters;
* ``prefix`` is one prefix, an iterable of prefixes, or ``None`` for any; a prefix outside the registry
  is a programming error and raises :class:`~agentfy.ids.registry.UnknownPrefixError` (a ``ValueError``);
* validation never looks anything up and never grants access.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from typing import Final, Protocol

from agentfy.ids.constants import ID_MAX_LENGTH, ID_PREFIX_MAX_LENGTH, ID_SUFFIX_ALPHABET, ID_SUFFIX_LENGTH
from agentfy.ids.formats import (
    AGENTFY_WORDS_LEGACY,
    CANONICAL,
    LEGACY_ID_FORMATS,
    PRODUCT_LEGACY_ID_FORMATS,
    IdFormat,
    Prefixes,
    WordsFormat,
)
from agentfy.ids.registry import ID_PREFIXES, ID_PREFIXES_LONGEST_FIRST, PREFIX_SHAPE, UnknownPrefixError
from agentfy.ids.words import ADJECTIVES, NOUNS

PrefixArg = str | Iterable[str] | None
"""What the validators accept as ``prefix``: one, several, or ``None`` for any registered prefix."""

_CANONICAL_SUFFIX_LENGTH: Final = ID_SUFFIX_LENGTH


class UnknownProductError(ValueError):
    """A product name other than the five that share the format."""

    def __init__(self, product: object) -> None:
        super().__init__(f"unknown product {product!r}; expected one of {', '.join(PRODUCT_LEGACY_ID_FORMATS)}")


@functools.lru_cache(maxsize=256)
def _registered(prefixes: tuple[str, ...]) -> frozenset[str]:
    for prefix in prefixes:
        if not isinstance(prefix, str) or prefix not in ID_PREFIXES:
            raise UnknownPrefixError(prefix)
    return frozenset(prefixes)


@functools.lru_cache(maxsize=256)
def _well_formed(prefixes: tuple[str, ...]) -> frozenset[str]:
    for prefix in prefixes:
        if (not isinstance(prefix, str) or len(prefix) > ID_PREFIX_MAX_LENGTH
                or not PREFIX_SHAPE.fullmatch(prefix)):
            raise ValueError(f"ID prefix {prefix!r} is not a well-formed prefix "
                             f"(lower-case kebab-case, at most {ID_PREFIX_MAX_LENGTH} characters)")
    return frozenset(prefixes)


def _as_tuple(prefix: str | Iterable[str]) -> tuple[str, ...]:
    if isinstance(prefix, str):
        return (prefix,)
    try:
        return tuple(prefix)
    except TypeError:
        raise UnknownPrefixError(prefix) from None


def allowed_prefixes(prefix: PrefixArg, product: str = "agentfy") -> Prefixes:
    """The set a value's prefix must belong to, or ``None`` for any well-formed one (other products)."""
    if product == "agentfy":
        return ID_PREFIXES if prefix is None else _registered(_as_tuple(prefix))
    if product not in PRODUCT_LEGACY_ID_FORMATS:
        raise UnknownProductError(product)
    return None if prefix is None else _well_formed(_as_tuple(prefix))


def _exact_str(value: object) -> str | None:
    """``value`` as an exact ``str`` if it is one and not too long, else ``None``."""
    if type(value) is not str:
        if not isinstance(value, str):
            return None
        value = str.__str__(value)  # a subclass may override methods; validate its plain string
    return value if len(value) <= ID_MAX_LENGTH else None


def _canonical(text: str, prefixes: Prefixes) -> bool:
    """The canonical shape, written out; ``CANONICAL.match`` is the general version."""
    if prefixes is None:
        return CANONICAL.match(text, None)
    try:
        head, adjective, noun, suffix = text.rsplit("-", 3)
    except ValueError:
        return False
    return (head in prefixes and adjective in ADJECTIVES and noun in NOUNS
            and len(suffix) == _CANONICAL_SUFFIX_LENGTH and not suffix.strip(ID_SUFFIX_ALPHABET))


CanonicalMatcher = Callable[[str], "re.Match[str] | None"]
#: The longest canonical ID: the longest registered prefix, the two longest words and the suffix.  A canonical
#: pattern never reads further than this (plus one character) into a value.
CANONICAL_MAX_WIDTH: Final = (max(map(len, ID_PREFIXES)) + max(map(len, ADJECTIVES)) + max(map(len, NOUNS))
                              + ID_SUFFIX_LENGTH + 3)
#: ``prefix`` argument (one registered prefix, or ``None`` for any) -> the ``fullmatch`` of the canonical
#: shape for it.  Filled on first use: compiling all of them at import would slow every process start.
_CANONICAL_MATCHERS: Final[dict[object, CanonicalMatcher]] = {}


def canonical_matcher(prefix: PrefixArg) -> CanonicalMatcher:
    """The compiled canonical check for ``prefix``: one ``fullmatch`` decides a value as ``_canonical`` does.

    ``prefix`` is checked as every validator checks it (an unregistered one is :class:`UnknownPrefixError`).
    """
    prefixes = allowed_prefixes(prefix)
    assert prefixes is not None  # Agentfy's prefixes are always a set
    fullmatch = _compiled_canonical(prefixes)
    if prefix is None or type(prefix) is str:
        _CANONICAL_MATCHERS[prefix] = fullmatch
    return fullmatch


@functools.lru_cache(maxsize=256)
def _compiled_canonical(prefixes: frozenset[str]) -> CanonicalMatcher:
    return CANONICAL.compiled(sorted(prefixes)).fullmatch


class _IsCanonicalId(Protocol):
    def __call__(self, value: object, prefix: PrefixArg = None) -> bool: ...


class _IsId(Protocol):
    def __call__(self, value: object, prefix: PrefixArg, *, product: str = "agentfy") -> bool: ...


def _build_is_canonical_id() -> _IsCanonicalId:
    # Hot path: one dict look-up for the prefix's compiled shape, one length check, one fullmatch.  The
    # names are bound in this closure because module-global look-ups would cost a noticeable share of a call.
    matchers, matcher_for, exact_str = _CANONICAL_MATCHERS, canonical_matcher, _exact_str

    def is_canonical_id(value: object, prefix: PrefixArg = None) -> bool:
        """Whether ``value`` is ``<registered prefix>-<adjective>-<noun>-<12 Crockford base32>``."""
        try:
            fullmatch = matchers[prefix]
        except (KeyError, TypeError):  # not compiled yet, unregistered, or several prefixes (or unhashable)
            fullmatch = matcher_for(prefix)
        if value.__class__ is str:
            # No length check first: the pattern reads at most ``CANONICAL_MAX_WIDTH`` (<= ID_MAX_LENGTH)
            # characters before it fails, so no input costs more than a valid ID.
            return fullmatch(value) is not None
        text = exact_str(value)
        return text is not None and fullmatch(text) is not None

    return is_canonical_id


is_canonical_id: Final = _build_is_canonical_id()


def legacy_id_format(value: object, prefix: PrefixArg = None, *, product: str = "agentfy") -> IdFormat | None:
    """The ``product``'s legacy format that ``value`` matches, or ``None``."""
    prefixes = allowed_prefixes(prefix, product)
    text = _exact_str(value)
    if text is None:
        return None
    for fmt in PRODUCT_LEGACY_ID_FORMATS[product]:
        if fmt.match(text, prefixes):
            return fmt
    return None


def is_legacy_id(value: object, prefix: PrefixArg = None, *, product: str = "agentfy") -> bool:
    """Whether ``value`` is in one of ``product``'s earlier formats (accepted, never minted)."""
    return legacy_id_format(value, prefix, product=product) is not None


def _general_is_id(value: object, prefix: PrefixArg, product: str) -> bool:
    prefixes = allowed_prefixes(prefix, product)
    text = _exact_str(value)
    if text is None:
        return False
    return _canonical(text, prefixes) or any(fmt.match(text, prefixes)
                                             for fmt in PRODUCT_LEGACY_ID_FORMATS[product])


def _build_is_id() -> _IsId:
    # The hot path of every API request, event and "ID or key" lookup.  The names it uses are bound in
    # this closure because module-global lookups would cost about a fifth of a call.  It decides only the
    # common case (an exact str, Agentfy): canonical values are accepted by one compiled fullmatch (the cache
    # is_canonical_id uses), and values that cannot be in any Agentfy format (too few hyphens, neither a
    # 20-character suffix nor the length of a UUID) are refused at once.  Everything else goes through the
    # general path.
    exact_str, matchers, matcher_for, max_length = str, _CANONICAL_MATCHERS, canonical_matcher, ID_MAX_LENGTH
    legacy_suffix_length, uuid_length, general = AGENTFY_WORDS_LEGACY.suffix_length, 36, _general_is_id

    # ``product`` is keyword-only in the declared type (_IsId) but not in this function: CPython 3.11
    # specialises calls only to functions without keyword-only parameters, and that is a tenth of the call.
    def is_id(value: object, prefix: PrefixArg, product: str = "agentfy") -> bool:
        """Canonical or ``product``-legacy: what API validators, pipes and gateways accept for an ID."""
        if value.__class__ is exact_str and product == "agentfy":
            try:
                fullmatch = matchers[prefix]
            except (KeyError, TypeError):  # not compiled yet, unregistered, several prefixes, unhashable
                fullmatch = matcher_for(prefix)  # compiles it, or UnknownPrefixError
            if fullmatch(value) is not None:  # reads at most CANONICAL_MAX_WIDTH characters
                return True
            parts = value.rsplit("-", 3)
            if len(parts) < 4:
                return False  # fewer than three hyphens: no Agentfy format
            if len(value) > max_length or (len(parts[3]) != legacy_suffix_length and len(value) != uuid_length):
                return False
        return general(value, prefix, product)

    return is_id


is_id: Final = _build_is_id()


def id_format_of(value: object, prefix: PrefixArg = None, *, product: str = "agentfy") -> IdFormat | None:
    """The format ``value`` is in (canonical first), or ``None`` if ``is_id`` would refuse it."""
    prefixes = allowed_prefixes(prefix, product)
    text = _exact_str(value)
    if text is None:
        return None
    if _canonical(text, prefixes):
        return CANONICAL
    return legacy_id_format(text, prefix, product=product)


def id_prefix_of(value: object) -> str | None:
    """The registered prefix of an Agentfy ID (canonical or legacy words), ``None`` otherwise.

    A bare legacy UUID has no prefix, so it gives ``None`` too: its entity is known only from its table.
    """
    fmt = id_format_of(value)
    if not isinstance(fmt, WordsFormat) or not isinstance(value, str):
        return None
    return str.__str__(value).rsplit("-", len(fmt.dictionaries) + 1)[0]


def id_pattern(prefix: PrefixArg = None) -> str:
    """An anchored regular expression accepting exactly what ``is_id(value, prefix)`` accepts (Agentfy).

    For OpenAPI/JSON Schema (ECMA-262 semantics: ``$`` is the end of the string).  In Python use it with
    ``re.fullmatch``, because Python's ``$`` also matches before a trailing newline.
    """
    return _anchored(prefix, any_words=False)


def id_shape_pattern(prefix: PrefixArg) -> str:
    """``id_pattern(prefix)`` with every word slot ``[a-z]+``: the prefix and the structure (how many words, the
    suffix's length and alphabet), not the dictionaries.

    A value matches ``id_pattern(prefix)`` exactly when it matches both ``id_pattern()`` (any registered prefix,
    the real dictionaries) and this: the suffix length tells the canonical and legacy shapes apart, and the
    number of segments then pins the prefix.  An OpenAPI document can so state the 8 KB dictionaries once and
    each entity's ID in a few hundred bytes (``allOf`` of the two).
    """
    return _anchored(prefix, any_words=True)


def _anchored(prefix: PrefixArg, *, any_words: bool) -> str:
    prefixes = allowed_prefixes(prefix)
    assert prefixes is not None
    alternation = "|".join(p for p in ID_PREFIXES_LONGEST_FIRST if p in prefixes)
    shapes = [CANONICAL.pattern(alternation, any_words=any_words),
              *(fmt.pattern(alternation, any_words=any_words) for fmt in LEGACY_ID_FORMATS)]
    return "^(?:" + "|".join(shapes) + ")$"
