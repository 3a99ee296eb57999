"""The dictionaries of human-id 4.1.3, shipped as package data.

The words decide which ID a random byte stream mints, so they must be the npm package's arrays in the
package's own order.  ``scripts/build_wordlists.py`` produces the data file from npm and records a checksum
that :func:`words_checksum` recomputes; the test-suite holds both to the published counts (200/300/250).
"""

from __future__ import annotations

import hashlib
import json
from importlib import resources
from typing import Final, NamedTuple

WORDS_FILE: Final = "human-id-4.1.3.json"


class IdWords(NamedTuple):
    """The dictionaries as loaded: adjectives and nouns make canonical IDs; verbs only legacy ones."""

    adjectives: tuple[str, ...]
    nouns: tuple[str, ...]
    verbs: tuple[str, ...]


def words_checksum(adjectives: tuple[str, ...] | list[str], nouns: tuple[str, ...] | list[str],
                   verbs: tuple[str, ...] | list[str]) -> str:
    """SHA-256 of the three lists, each headed by its name, joined by newlines (as the build script does)."""
    text = "\n".join(["adjectives", *adjectives, "nouns", *nouns, "verbs", *verbs])
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def _load() -> tuple[IdWords, str]:
    raw = json.loads(resources.files("agentfy.ids").joinpath("data").joinpath(WORDS_FILE).read_text("ascii"))
    words = IdWords(tuple(raw["adjectives"]), tuple(raw["nouns"]), tuple(raw["verbs"]))
    return words, str(raw["sha256"])


_LOADED: Final = _load()
#: The dictionaries as loaded (the reference's ``ID_WORDS``, plus the verbs of the legacy formats).
ID_WORDS: Final = _LOADED[0]
#: The checksum ``scripts/build_wordlists.py`` recorded next to the words.
RECORDED_CHECKSUM: Final = _LOADED[1]

ADJECTIVES: Final = frozenset(ID_WORDS.adjectives)
NOUNS: Final = frozenset(ID_WORDS.nouns)
VERBS: Final = frozenset(ID_WORDS.verbs)
