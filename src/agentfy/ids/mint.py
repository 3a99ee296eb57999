"""Minting: ``format_id``, byte for byte like the TypeScript reference.

From a source ``random(n) -> bytes`` the reference reads, in this order:

1. the adjective by ``index(200)``: one byte per try, accepted when below 200;
2. the noun by ``index(300)``: two bytes per try, big-endian, masked with 511, accepted when below 300;
3. the suffix as nanoid 3.3.11 ``customRandom(alphabet, 12, random)`` does for a 32-letter alphabet: one
   request of ``ceil(1.6 * 31 * 12 / 32) = 19`` bytes read from the last one back, ``byte & 31`` each, stopping
   after 12 letters (the first 7 bytes are unused).

A counting source (0, 1, 2, ...) therefore gives ``user-afraid-swans-nmkjhgfedcba`` after exactly 22 bytes.
With the default source the same algorithm runs over 16 KiB reads of the OS CSPRNG, a batch of
words-and-suffix tails at a time, each tail handed out exactly once (``randomness.OncePool``).
"""

from __future__ import annotations

import functools
import math
import os
import re
import sys
from collections.abc import Iterable
from typing import Final

from agentfy.ids.constants import ID_SUFFIX_ALPHABET, ID_SUFFIX_LENGTH
from agentfy.ids.randomness import OncePool, RandomSource, csprng
from agentfy.ids.registry import ID_PREFIXES, UnknownPrefixError
from agentfy.ids.words import ID_WORDS

_ADJECTIVES: Final = ID_WORDS.adjectives
_NOUNS: Final = ID_WORDS.nouns
_ADJECTIVE_COUNT: Final = len(_ADJECTIVES)  # 200: one byte, mask 255
_NOUN_COUNT: Final = len(_NOUNS)  # 300: two bytes, mask 511
_NOUN_MASK: Final = (1 << (_NOUN_COUNT - 1).bit_length()) - 1
_SUFFIX_MASK: Final = len(ID_SUFFIX_ALPHABET) - 1  # 31: every masked byte is a letter
#: byte -> ``ID_SUFFIX_ALPHABET[byte & 31]``, so suffix letters are translated in C.
SUFFIX_LETTER_TABLE: Final = bytes(ord(ID_SUFFIX_ALPHABET[b & _SUFFIX_MASK]) for b in range(256))
#: nanoid's request size: ceil(1.6 * mask * size / alphabet length) = 19.
SUFFIX_REQUEST: Final = math.ceil(1.6 * _SUFFIX_MASK * ID_SUFFIX_LENGTH / len(ID_SUFFIX_ALPHABET))


def _read(random: RandomSource, n: int) -> bytes:
    data = random(n)
    if len(data) != n:
        raise ValueError(f"random source returned {len(data)} bytes, {n} were asked for")
    return data


def _suffix(request: bytes) -> str:
    """The nanoid letters of one 19-byte request: bytes 18 down to 7, each masked to 0..31."""
    return request[: SUFFIX_REQUEST - ID_SUFFIX_LENGTH - 1 : -1].translate(SUFFIX_LETTER_TABLE).decode("ascii")


def _format_from_source(prefix: str, random: RandomSource) -> str:
    while (adjective := _read(random, 1)[0]) >= _ADJECTIVE_COUNT:
        pass
    while True:
        pair = _read(random, 2)
        noun = ((pair[0] << 8) | pair[1]) & _NOUN_MASK
        if noun < _NOUN_COUNT:
            break
    suffix = _suffix(_read(random, SUFFIX_REQUEST))
    return f"{prefix}-{_ADJECTIVES[adjective]}-{_NOUNS[noun]}-{suffix}"


#: CSPRNG bytes per pool batch: one 16 KiB read makes about 690 IDs' words and suffixes.
TAIL_BATCH_BYTES: Final = 16384


def _byte_class(values: Iterable[int]) -> bytes:
    """A regular-expression character class matching exactly the byte ``values``."""
    return b"[" + b"".join(re.escape(bytes([value])) for value in values) + b"]"


#: The noun pairs the reference draws again are exactly one of these first bytes (odd: bit 8 of the masked
#: value set) followed by one of these second bytes (then 256 + byte >= 300); the test-suite checks this
#: against the mask for all 65,536 pairs.
REFUSED_PAIR_FIRST: Final = bytes(b for b in range(256) if ((b << 8) | 255) & _NOUN_MASK >= _NOUN_COUNT)
REFUSED_PAIR_SECOND: Final = bytes(
    b for b in range(256) if ((REFUSED_PAIR_FIRST[0] << 8) | b) & _NOUN_MASK >= _NOUN_COUNT)


@functools.cache
def _draws() -> re.Pattern[bytes]:
    """One reference draw, as a pattern over the byte stream; ``findall`` walks the stream draw by draw in C.

    A match starts at the accepted adjective byte: no draw can start at a byte of 200 or more, so the search
    itself skips the adjective bytes the reference draws again.  Then the refused noun pairs (possessive: the
    pair after them is accepted), then the accepted pair, the 7 unused and the 12 suffix bytes of the nanoid
    request.  Group 1 is the adjective byte, group 2 the pair and the request (21 bytes).  The second
    alternative swallows an incomplete last draw whole, so that the search never restarts inside it; its
    groups are empty.
    """
    adjective = _byte_class(range(_ADJECTIVE_COUNT))
    refused_pair = _byte_class(REFUSED_PAIR_FIRST) + _byte_class(REFUSED_PAIR_SECOND)
    request = 2 + SUFFIX_REQUEST
    return re.compile(b"(?s)(" + adjective + b")(?:" + refused_pair + b")*+(.{%d})|" % request
                      + adjective + b".*")


#: Where the two bytes of a noun code sit in a native unsigned short (``memoryview.cast("H")``): the second
#: pair byte low, the pair's bit 8 high, so the code is the noun index (``pair & 511``).
_NOUN_CODE_OFFSETS: Final = (0, 1) if sys.byteorder == "little" else (1, 0)
#: byte -> its bit 0, which the noun mask makes bit 8 of the noun index.
_NOUN_HIGH_BIT: Final = bytes(b & 1 for b in range(256))
#: ``"-<adjective>-"`` by adjective byte and ``"<noun>-"`` by masked noun pair (the slots at or above the
#: counts are never looked up).  Kept this small on purpose: a table of all 60,000 word pairs is several
#: megabytes, and the cache misses of looking into it cost more than the one extra concatenation.
_ADJECTIVE_PARTS: Final = tuple(f"-{adjective}-" for adjective in _ADJECTIVES) + ("",) * (256 - _ADJECTIVE_COUNT)
_NOUN_PARTS: Final = tuple(f"{noun}-" for noun in _NOUNS) + ("",) * (_NOUN_MASK + 1 - _NOUN_COUNT)


def tails_from_stream(stream: bytes) -> list[str]:
    """Every ``-<adjective>-<noun>-<suffix>`` the reference algorithm draws from ``stream``, in order.

    The same draw as :func:`_format_from_source` over a source that reads ``stream`` front to back (property
    tests hold it equal to that and to a plain transcription of the reference), done in C for the whole
    stream because it is the minting hot path: the regular expression walks the draws, and the rest are
    whole-buffer operations (strided copies, one translate, one split) and ``map`` passes over small word
    tables; no Python
    bytecode runs per ID.  Stops at the last whole tail.
    """
    draws = _draws().findall(stream)
    if draws and not draws[-1][0]:
        draws.pop()  # the stream ended inside this draw
    if not draws:
        return []
    count = len(draws)
    adjective_bytes, requests = zip(*draws, strict=True)
    # requests: per draw 21 bytes, the noun pair then the 19-byte nanoid request.
    request_bytes = b"".join(requests)
    noun_codes = bytearray(2 * count)
    low, high = _NOUN_CODE_OFFSETS
    noun_codes[low::2] = request_bytes[1::21]
    noun_codes[high::2] = request_bytes[0::21].translate(_NOUN_HIGH_BIT)
    # A suffix is its request's last 12 bytes, last first: reversing everything puts each draw's suffix
    # letters first in its 21-byte block, in order (the blocks run last draw first); the other 9 bytes of a
    # block become spaces to split on.
    letters = bytearray(request_bytes[::-1].translate(SUFFIX_LETTER_TABLE))
    spaces = b" " * count
    for offset in range(ID_SUFFIX_LENGTH, 21):
        letters[offset::21] = spaces
    suffixes = letters.decode("ascii").split()
    suffixes.reverse()
    adjectives = map(_ADJECTIVE_PARTS.__getitem__, b"".join(adjective_bytes))
    nouns = map(_NOUN_PARTS.__getitem__, memoryview(noun_codes).cast("H"))
    return list(map("".join, zip(adjectives, nouns, suffixes, strict=True)))


_TAILS: Final = OncePool(lambda: tails_from_stream(os.urandom(TAIL_BATCH_BYTES)))
#: The pool's one-slot hand-out list: ``next(_HANDOUT[0])`` is the next unused tail.
_HANDOUT: Final = _TAILS.handout


def format_id(prefix: str, random: RandomSource | None = None) -> str:
    """Mint a new canonical ID ``<prefix>-<adjective>-<noun>-<12 Crockford>``; the only way IDs are made.

    ``random(n)`` must return exactly ``n`` bytes; by default they come from the OS CSPRNG.  ``prefix`` must
    be registered (:data:`agentfy.ids.registry.ID_ENTITIES`), else :class:`UnknownPrefixError`.
    The words carry no uniqueness: the 60-bit suffix and the primary key do (see ``with_id_retry``).
    """
    try:
        if random is None and prefix in ID_PREFIXES:
            return prefix + next(_HANDOUT[0])
        known = prefix in ID_PREFIXES
    except StopIteration:  # this batch is used up: the pool installs a fresh one (under its lock)
        return prefix + _TAILS.take()
    except TypeError:  # an unhashable prefix
        known = False
    if not known:
        raise UnknownPrefixError(prefix)
    return _format_from_source(prefix, random if random is not None else csprng)
