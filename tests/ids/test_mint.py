"""Minting is byte for byte the TypeScript reference's draw (control vector, rejections, the pool)."""

from __future__ import annotations

import collections
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentfy.ids import ID_SUFFIX_ALPHABET, ID_WORDS, UnknownPrefixError, format_id, is_canonical_id, mint
from agentfy.ids.mint import REFUSED_PAIR_FIRST, REFUSED_PAIR_SECOND, SUFFIX_REQUEST, tails_from_stream
from tests.ids.sources import CountingSource, ReplaySource


def test_control_vector_reads_exactly_22_bytes() -> None:
    source = CountingSource()
    assert format_id("user", source) == "user-afraid-swans-nmkjhgfedcba"
    assert source.read == 22


def test_nanoid_request_is_19_bytes() -> None:
    assert SUFFIX_REQUEST == 19


def _expected_suffix(request: bytes) -> str:
    # nanoid 3.3.11 customRandom: read the request from its last byte back, alphabet[byte & 31], 12 letters.
    return "".join(ID_SUFFIX_ALPHABET[b & 31] for b in reversed(request))[:12]


def test_adjective_bytes_of_200_and_above_are_drawn_again() -> None:
    request = bytes(range(100, 119))
    source = ReplaySource(bytes([200, 255, 199]) + bytes([0, 7]) + request)
    expected = f"agent-{ID_WORDS.adjectives[199]}-{ID_WORDS.nouns[7]}-{_expected_suffix(request)}"
    assert format_id("agent", source) == expected
    assert source.read == 3 + 2 + 19


def test_noun_pairs_masked_to_300_and_above_are_drawn_again() -> None:
    request = bytes([255] * 7 + list(range(40, 52)))
    # 0x012c & 511 = 300 and 0xffff & 511 = 511 are refused; 0x012b & 511 = 299 is the last noun;
    # 0xfe2b & 511 = 43 shows the mask throws the high bits away.
    source = ReplaySource(bytes([0, 0x01, 0x2C, 0xFF, 0xFF, 0x01, 0x2B]) + request)
    assert format_id("team", source) == f"team-afraid-{ID_WORDS.nouns[299]}-{_expected_suffix(request)}"
    assert source.read == 1 + 6 + 19
    source = ReplaySource(bytes([1, 0xFE, 0x2B]) + request)
    assert format_id("team", source) == f"team-all-{ID_WORDS.nouns[43]}-{_expected_suffix(request)}"


def test_first_seven_bytes_of_the_suffix_request_are_unused() -> None:
    head = bytes([3, 0, 9])
    tail = bytes(range(12))
    a = format_id("skill", ReplaySource(head + bytes(7) + tail))
    b = format_id("skill", ReplaySource(head + bytes([255] * 7) + tail))
    assert a == b


def test_a_source_that_returns_too_few_bytes_is_an_error() -> None:
    with pytest.raises(ValueError, match="returned 0 bytes, 1 were asked"):
        format_id("agent", lambda n: b"")


def test_unknown_prefix_is_a_programming_error() -> None:
    for prefix in ["organization", "Agent", "agents", ""]:
        with pytest.raises(UnknownPrefixError, match="not in the registry"):
            format_id(prefix)
        with pytest.raises(UnknownPrefixError):
            format_id(prefix, CountingSource())


def test_default_source_mints_valid_ids_using_every_word() -> None:
    ids = [format_id("agent") for _ in range(30_000)]
    assert all(is_canonical_id(i, "agent") for i in ids)
    assert len(set(ids)) == len(ids)
    adjectives = collections.Counter(i.split("-")[1] for i in ids)
    nouns = collections.Counter(i.split("-")[2] for i in ids)
    assert set(adjectives) == set(ID_WORDS.adjectives)
    assert set(nouns) == set(ID_WORDS.nouns)


rejection_heavy = st.lists(
    st.one_of(st.integers(0, 255), st.integers(200, 255), st.sampled_from([0x01, 0x2C, 0xFF, 0x00, 0x2B])),
    max_size=400,
).map(bytes)


@given(st.one_of(st.binary(max_size=400), rejection_heavy))
def test_pool_draw_equals_the_reference_draw_over_the_same_stream(stream: bytes) -> None:
    """The hot path's loop must mint exactly what format_id(prefix, source) mints, tail after tail."""
    source = ReplaySource(stream)
    expected: list[str] = []
    while True:
        try:
            expected.append(format_id("user", source).removeprefix("user"))
        except AssertionError:  # the stream ran out mid-draw
            break
    assert tails_from_stream(stream) == expected


def reference_tails(stream: bytes) -> list[str]:
    """The TypeScript reference's draw over ``stream``, transcribed plainly (no tables, no batching): every
    ``-<adjective>-<noun>-<suffix>`` it mints in order, until a draw would read past the end."""
    position = 0

    def random(n: int) -> bytes:
        nonlocal position
        if position + n > len(stream):
            raise EOFError
        position += n
        return stream[position - n:position]

    tails: list[str] = []
    while True:
        try:
            while True:  # index(200): one byte per try
                adjective = random(1)[0]
                if adjective < 200:
                    break
            while True:  # index(300): two bytes per try, big-endian, masked with 511
                pair = random(2)
                noun = ((pair[0] << 8) | pair[1]) & 511
                if noun < 300:
                    break
            request = random(19)  # nanoid customRandom: step = ceil(1.6 * 31 * 12 / 32)
        except EOFError:
            return tails
        suffix = ""
        j = 19
        while j > 0:  # while (j--) { id += alphabet[bytes[j] & mask]; if (id.length === size) return id }
            j -= 1
            suffix += ID_SUFFIX_ALPHABET[request[j] & 31]
            if len(suffix) == 12:
                break
        tails.append(f"-{ID_WORDS.adjectives[adjective]}-{ID_WORDS.nouns[noun]}-{suffix}")


def test_the_reference_transcription_mints_the_control_vector() -> None:
    assert reference_tails(bytes(range(22)))[0] == "-afraid-swans-nmkjhgfedcba"


@given(st.one_of(st.binary(max_size=2000), rejection_heavy))
def test_the_hot_path_draw_equals_the_plain_reference_transcription(stream: bytes) -> None:
    assert tails_from_stream(stream) == reference_tails(stream)


def test_the_default_path_mints_the_reference_draw_of_its_csprng_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """format_id(prefix) without a source: what it returns, in order, is the reference draw over exactly the
    bytes it read from the OS CSPRNG."""
    read: list[bytes] = []
    urandom = os.urandom

    def recording_urandom(n: int) -> bytes:
        read.append(urandom(n))
        return read[-1]

    monkeypatch.setattr(mint.os, "urandom", recording_urandom)
    mint._TAILS._start_afresh()  # drop the batch in hand, so that every tail below comes from recorded bytes
    try:
        minted = [format_id("agent") for _ in range(3000)]  # several batches
    finally:
        monkeypatch.undo()
        mint._TAILS._start_afresh()
    expected = [f"agent{tail}" for chunk in read for tail in reference_tails(chunk)]
    assert len(read) >= 4
    assert minted == expected[:len(minted)]


def test_refused_noun_pairs_are_exactly_the_byte_classes_the_hot_path_scans_for() -> None:
    for first in range(256):
        for second in range(256):
            refused = ((first << 8) | second) & 511 >= 300
            assert refused == (first in REFUSED_PAIR_FIRST and second in REFUSED_PAIR_SECOND), (first, second)
