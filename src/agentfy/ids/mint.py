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


@functools.cache
def _word_pairs() -> tuple[tuple[str, ...], ...]:
    """``"-<adjective>-<noun>-"`` for every adjective and noun index: one lookup per ID on the hot path.

    60,000 short strings (about 4 MB), built on the first mint from the CSPRNG pool (a few milliseconds),
    not at import, so that validating processes and the CLI do not pay for them.
    """
    return tuple(tuple(f"-{adjective}-{noun}-" for noun in _NOUNS) for adjective in _ADJECTIVES)


def tails_from_stream(stream: bytes) -> list[str]:
    """Every ``-<adjective>-<noun>-<suffix>`` the reference algorithm draws from ``stream``, in order.

    The same draw as :func:`_format_from_source` over a source that reads ``stream`` front to back (a
    property test holds them equal), written as one loop because it is the minting hot path: the common
    case (no rejection, 46% of draws) costs one table lookup and one forward slice of the suffix letters,
    translated and reversed once for the whole stream.  Stops at the last whole tail.
    """
    size = len(stream)
    # reversed_letters[size - 1 - k] is the letter of stream[k]: a draw's suffix, read from the last byte of
    # its request back, is then one forward slice.
    reversed_letters = stream[::-1].translate(SUFFIX_LETTER_TABLE).decode("ascii")
    pairs = _word_pairs()
    adjective_count, noun_count, noun_mask = _ADJECTIVE_COUNT, _NOUN_COUNT, _NOUN_MASK
    suffix_length, draw_size = ID_SUFFIX_LENGTH, 3 + SUFFIX_REQUEST
    tails: list[str] = []
    append = tails.append
    i, last_start = 0, size - draw_size
    while i <= last_start:
        adjective = stream[i]
        noun = ((stream[i + 1] << 8) | stream[i + 2]) & noun_mask
        if adjective >= adjective_count or noun >= noun_count:
            # A rejection: follow the reference draw try by try.
            while adjective >= adjective_count:
                i += 1
                if i >= size:
                    return tails
                adjective = stream[i]
            # stream[i] is the accepted adjective; noun tries read stream[i + 1 : i + 3], then two further.
            while True:
                if i + 3 > size:
                    return tails
                noun = ((stream[i + 1] << 8) | stream[i + 2]) & noun_mask
                if noun < noun_count:
                    break
                i += 2
            if i + draw_size > size:
                return tails
        i += draw_size
        # This draw's suffix request is stream[i - 19 : i]; its letters, last byte first, start at size - i.
        start = size - i
        append(pairs[adjective][noun] + reversed_letters[start : start + suffix_length])
    return tails


_TAILS: Final = OncePool(lambda: tails_from_stream(os.urandom(TAIL_BATCH_BYTES)))
_take_tail: Final = _TAILS.take


def format_id(prefix: str, random: RandomSource | None = None) -> str:
    """Mint a new canonical ID ``<prefix>-<adjective>-<noun>-<12 Crockford>``; the only way IDs are made.

    ``random(n)`` must return exactly ``n`` bytes; by default they come from the OS CSPRNG.  ``prefix`` must
    be registered (:data:`agentfy.ids.registry.ID_ENTITIES`), else :class:`UnknownPrefixError`.
    The words carry no uniqueness: the 60-bit suffix and the primary key do (see ``with_id_retry``).
    """
    try:
        if random is None and prefix in ID_PREFIXES:
            return prefix + _take_tail()
        known = prefix in ID_PREFIXES
    except TypeError:  # an unhashable prefix
        known = False
    if not known:
        raise UnknownPrefixError(prefix)
    return _format_from_source(prefix, random if random is not None else csprng)
