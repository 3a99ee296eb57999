"""Which primary keys the cutover translates, and how: the one rule, shared by the run and the detection.

* A bare lower-case UUID (the platform's UUID era) gets a freshly minted canonical ID of its table's
  prefix; the legacy platform organization gets its fixed canonical ID.  The nil UUID is no identity (it is
  the placeholder of a caller bug), so it is never translated: a primary key holding it is refused.
* A retired prefix (``organization-…`` and the three other organization prefixes) is swapped for the
  current one, **keeping the whole tail** whatever its word and suffix format: the ID format's rule for this
  rename is that it "does not change the word/suffix format".  The tails such IDs were minted with are two
  words and 12 Crockford characters (the canonical tail), or three words and 20 Crockford characters (the
  development rows of the three-word era, whose first words are not always an adjective and a noun); the
  words come from the ID dictionaries.  Anything else after a retired prefix is not an ID the rename
  produced, and is refused.
* What stays: a canonical ID, Agentfy's three-word legacy format, and the result of a rename (a current
  prefix with a tail of the shapes above), so a repeat run and the serve-time check agree with the run.
"""

from __future__ import annotations

import re
from typing import Final

from agentfy.ids import AGENTFY_WORDS_LEGACY, NIL_UUID, RENAMED_PREFIXES, is_canonical_id
from agentfy.ids.constants import ID_SUFFIX_ALPHABET
from agentfy.ids.words import ADJECTIVES, NOUNS, VERBS

#: The retired prefix of each current prefix that had one (``org`` -> ``organization``, …).
RETIRED_PREFIX: Final = {new: old for old, new in RENAMED_PREFIXES.items()}
#: (words, suffix length) of the tails a retired prefix was minted with.
RENAMED_TAIL_SHAPES: Final = frozenset({(2, 12), (3, 20)})
_WORDS: Final = ADJECTIVES | NOUNS | VERBS
#: Compiled once: the plan step asks it of every primary key (a split and five set tests cost 3x as much).
_BARE_UUID: Final = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def is_bare_uuid(value: str) -> bool:
    """A lower-case UUID in its 8-4-4-4-12 form (the nil UUID included: the caller decides about it)."""
    return _BARE_UUID.fullmatch(value) is not None


def is_nil_uuid(value: str) -> bool:
    return value == NIL_UUID


def is_renamed_tail(tail: str) -> bool:
    """Whether ``tail`` (what follows ``<prefix>-``) is one a retired prefix was minted with."""
    *words, suffix = tail.split("-")
    return ((len(words), len(suffix)) in RENAMED_TAIL_SHAPES and all(word in _WORDS for word in words)
            and not suffix.strip(ID_SUFFIX_ALPHABET))


def renamed(value: str, prefix: str) -> str | None:
    """``value`` with its retired prefix swapped for ``prefix`` (tail kept), or ``None`` if it has none."""
    retired = RETIRED_PREFIX.get(prefix)
    if retired is None or not value.startswith(retired + "-"):
        return None
    tail = value[len(retired) + 1:]
    return f"{prefix}-{tail}" if is_renamed_tail(tail) else None


def stays(value: str, prefix: str) -> bool:
    """Whether a primary key of an entity with ``prefix`` needs no cutover."""
    if is_canonical_id(value, prefix) or AGENTFY_WORDS_LEGACY.match(value, frozenset({prefix})):
        return True
    return prefix in RETIRED_PREFIX and value.startswith(prefix + "-") and is_renamed_tail(value[len(prefix) + 1:])
