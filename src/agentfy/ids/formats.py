"""The shapes an ID can have: the canonical one, and each product's legacy formats.

Every shape but the bare UUID is ``<prefix>-<word>-...-<word>-<suffix>`` with a fixed number of trailing
segments, so a hyphenated prefix is never ambiguous (``team-api-key-…`` is never a ``team`` ID).  Matching
splits from the right, checks each word against its dictionary and the suffix against its alphabet;
:meth:`WordsFormat.compiled` is the same decision as one compiled pattern, for the validators' hot path.
Nothing is ever normalised (the dictionaries and alphabets are ASCII lower case, so upper case, look-alikes,
percent-encoding and whitespace simply do not match).

What the format's specification leaves open, decided here (see ``docs/id-format.md``):

* Which words the other products' legacy formats use: human-id 4.1.3's (adjective, noun, verb for three
  words; adjective, noun for two), except Shiffty, whose own dictionary is unknown: any ``[a-z]+`` word.
* Which prefixes they allow: only Agentfy's registry is known here, so for the other products any
  well-formed prefix (lower-case kebab-case, at most 32 characters) is accepted.
* A bare UUID carries no prefix, so Agentfy's UUID format accepts it whatever prefix is asked for; it must
  be lower case and never the nil UUID.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, TypeAlias

from agentfy.ids.constants import (
    HEX_ALPHABET,
    ID_PREFIX_MAX_LENGTH,
    ID_SUFFIX_ALPHABET,
    ID_SUFFIX_LENGTH,
    NIL_UUID,
)
from agentfy.ids.registry import PREFIX_SHAPE
from agentfy.ids.words import ADJECTIVES, NOUNS, VERBS

_ANY_WORD: Final = re.compile(r"[a-z]+")
_UUID: Final = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
#: Store Deputy's suffix alphabet.
LOWER_ALNUM: Final = "0123456789abcdefghijklmnopqrstuvwxyz"

Prefixes = frozenset[str] | None
"""Allowed prefixes: a set to check membership in, or ``None`` for any well-formed prefix."""


@dataclass(frozen=True, slots=True)
class WordsFormat:
    """``<prefix>-<word>…-<suffix>``: one word per dictionary (``None``: any ``[a-z]+``), then the suffix."""

    name: str
    description: str
    dictionaries: tuple[frozenset[str] | None, ...]
    dictionary_names: tuple[str, ...]
    suffix_length: int
    suffix_alphabet: str
    suffix_alphabet_name: str

    def match(self, value: str, prefixes: Prefixes) -> bool:
        """Whether ``value`` (an exact ``str`` of at most 80 characters) has this shape and prefix."""
        parts = value.rsplit("-", len(self.dictionaries) + 1)
        if len(parts) != len(self.dictionaries) + 2:
            return False
        prefix = parts[0]
        if prefixes is None:
            if len(prefix) > ID_PREFIX_MAX_LENGTH or not PREFIX_SHAPE.fullmatch(prefix):
                return False
        elif prefix not in prefixes:
            return False
        for word, dictionary in zip(parts[1:-1], self.dictionaries, strict=True):
            if dictionary is None:
                if not _ANY_WORD.fullmatch(word):
                    return False
            elif word not in dictionary:
                return False
        suffix = parts[-1]
        return len(suffix) == self.suffix_length and not suffix.strip(self.suffix_alphabet)

    def described_for(self, prefix: str) -> str:
        """The description with ``<prefix>`` filled in (``agent-<adjective>-<noun>-<12 Crockford base32>``):
        what messages and the API's documentation show, so they cannot drift from the format."""
        return self.description.replace("<prefix>", prefix, 1)

    def pattern(self, prefix_alternation: str, *, any_words: bool = False) -> str:
        """This shape as an unanchored regular expression (ECMA and Python compatible) for OpenAPI; with
        ``any_words`` each word slot is ``[a-z]+`` instead of its dictionary (the structure only)."""
        words = "".join(
            "-(?:[a-z]+)" if d is None or any_words else "-(?:" + "|".join(sorted(d, key=lambda w: (-len(w), w))) + ")"
            for d in self.dictionaries
        )
        return f"(?:{prefix_alternation}){words}-{_char_class(self.suffix_alphabet)}{{{self.suffix_length}}}"

    def compiled(self, prefixes: Iterable[str]) -> re.Pattern[str]:
        """This shape with one of ``prefixes``, compiled for Python's ``fullmatch``: the same decision as
        :meth:`match` in one C call (the validators' hot path; a test holds the two equal).

        Word alternations are factored by common prefixes (:func:`word_trie`), so the engine tries at most a
        few letters per position instead of every word.  Only ``fullmatch`` is exact: ``$`` would accept a
        trailing newline.
        """
        words = "".join("-[a-z]+" if d is None else "-" + word_trie(d) for d in self.dictionaries)
        return re.compile(f"{word_trie(prefixes)}{words}-{_char_class(self.suffix_alphabet)}{{{self.suffix_length}}}")


@dataclass(frozen=True, slots=True)
class UuidFormat:
    """A bare lower-case UUID (no prefix), never the nil UUID."""

    name: str
    description: str

    def match(self, value: str, prefixes: Prefixes) -> bool:
        return len(value) == 36 and value != NIL_UUID and _UUID.fullmatch(value) is not None

    def pattern(self, prefix_alternation: str, *, any_words: bool = False) -> str:
        return "(?!00000000-0000-0000-0000-000000000000$)" + "-".join(
            f"[0-9a-f]{{{n}}}" for n in (8, 4, 4, 4, 12))


IdFormat = WordsFormat | UuidFormat


_Trie: TypeAlias = "dict[str, _Trie]"


def word_trie(words: Iterable[str]) -> str:
    """A regular expression matching exactly one of ``words`` (escaped), written as a prefix tree:
    ``(?:a(?:fraid|ll)|b...)``.  A flat alternation of 300 words makes the engine try each in turn."""
    tree: _Trie = {}
    for word in words:
        node = tree
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}  # a word ends here

    def emit(node: _Trie) -> str:
        branches = [re.escape(char) + emit(child) for char, child in sorted(node.items()) if char]
        if "" in node and branches:
            branches.append("")  # a word ends here: an empty branch, not "?" (a repeat costs an allocation)
        if len(branches) <= 1:
            return "".join(branches)
        return "(?:" + "|".join(branches) + ")"

    return emit(tree)


def _char_class(alphabet: str) -> str:
    """A compact character class for an alphabet of digits and lower-case letters."""
    ranges: list[str] = []
    chars = sorted(alphabet)
    start = prev = chars[0]
    for c in [*chars[1:], None]:
        if c is not None and ord(c) == ord(prev) + 1:
            prev = c
            continue
        ranges.append(start if start == prev else f"{start}-{prev}" if ord(prev) > ord(start) + 1
                      else start + prev)
        if c is not None:
            start = prev = c
    return "[" + "".join(ranges) + "]"


CANONICAL: Final = WordsFormat(
    name="canonical",
    description=f"<prefix>-<adjective>-<noun>-<{ID_SUFFIX_LENGTH} Crockford base32>",
    dictionaries=(ADJECTIVES, NOUNS),
    dictionary_names=("adjective", "noun"),
    suffix_length=ID_SUFFIX_LENGTH,
    suffix_alphabet=ID_SUFFIX_ALPHABET,
    suffix_alphabet_name="Crockford base32",
)



def _three_words_20_crockford(name: str, description: str) -> WordsFormat:
    """Agentfy's and Bonsite's legacy shape: human-id adjective, noun and verb, 20 Crockford characters."""
    return WordsFormat(name=name, description=description, dictionaries=(ADJECTIVES, NOUNS, VERBS),
                       dictionary_names=("adjective", "noun", "verb"), suffix_length=20,
                       suffix_alphabet=ID_SUFFIX_ALPHABET, suffix_alphabet_name="Crockford base32")


AGENTFY_WORDS_LEGACY: Final = _three_words_20_crockford(
    "agentfy-legacy-words",
    "<prefix>-<adjective>-<noun>-<verb>-<20 Crockford base32> (development rows minted before the canonical format)",
)
AGENTFY_UUID_LEGACY: Final = UuidFormat(
    name="agentfy-legacy-uuid",
    description="bare lower-case UUID (rows from before the canonical format, until the ID cutover translates them)",
)

#: Agentfy's earlier formats: accepted for IDs already issued, never minted.
LEGACY_ID_FORMATS: Final = (AGENTFY_WORDS_LEGACY, AGENTFY_UUID_LEGACY)

#: Every product's earlier formats, by product name.
PRODUCT_LEGACY_ID_FORMATS: Final = MappingProxyType({
    "agentfy": LEGACY_ID_FORMATS,
    "bonsite": (_three_words_20_crockford(
        "bonsite-legacy-words", "<prefix>-<adjective>-<noun>-<verb>-<20 Crockford base32>"),),
    "securify": (WordsFormat(
        name="securify-legacy-hex",
        description="<prefix>-<adjective>-<noun>-<12 hex> (indistinguishable from canonical)",
        dictionaries=(ADJECTIVES, NOUNS),
        dictionary_names=("adjective", "noun"),
        suffix_length=12,
        suffix_alphabet=HEX_ALPHABET,
        suffix_alphabet_name="lower-case hex",
    ),),
    "shiffty": (WordsFormat(
        name="shiffty-legacy-words",
        description="<prefix>-<word>-<word>-<6 Crockford base32> (Shiffty's own dictionary: any [a-z]+ word)",
        dictionaries=(None, None),
        dictionary_names=("word", "word"),
        suffix_length=6,
        suffix_alphabet=ID_SUFFIX_ALPHABET,
        suffix_alphabet_name="Crockford base32",
    ),),
    "store-deputy": (WordsFormat(
        name="store-deputy-legacy-alnum",
        description="<prefix>-<adjective>-<noun>-<12 [a-z0-9]>",
        dictionaries=(ADJECTIVES, NOUNS),
        dictionary_names=("adjective", "noun"),
        suffix_length=12,
        suffix_alphabet=LOWER_ALNUM,
        suffix_alphabet_name="[a-z0-9]",
    ),),
})

#: The five products that share the canonical format.
PRODUCTS: Final = tuple(PRODUCT_LEGACY_ID_FORMATS)

__all__ = [
    "AGENTFY_UUID_LEGACY",
    "AGENTFY_WORDS_LEGACY",
    "CANONICAL",
    "LEGACY_ID_FORMATS",
    "PRODUCTS",
    "PRODUCT_LEGACY_ID_FORMATS",
    "IdFormat",
    "UuidFormat",
    "WordsFormat",
]
