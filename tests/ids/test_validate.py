"""Validation accepts exactly the canonical shape and the legacy shapes, as they are (never normalised), and
refuses everything else."""

from __future__ import annotations

import re
from re import _parser as sre_parse  # the engine's own parser: the patterns' widths

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from agentfy.ids import (
    ID_MAX_LENGTH,
    LEGACY_ID_FORMATS,
    NIL_UUID,
    UnknownPrefixError,
    UnknownProductError,
    format_id,
    id_format_of,
    id_pattern,
    id_prefix_of,
    is_canonical_id,
    is_id,
    is_legacy_id,
    legacy_id_format,
)
from agentfy.ids.formats import CANONICAL
from agentfy.ids.registry import ID_PREFIXES
from agentfy.ids.validate import CANONICAL_MAX_WIDTH, canonical_matcher
from agentfy.ids.words import ADJECTIVES, NOUNS
from tests.ids.strategies import agentfy_ids, canonical_ids, legacy_uuids, legacy_word_ids, mutations

GOOD = "user-calm-rivers-k8m4p2d7n9x3"
LEGACY_WORDS = "agent-calm-rivers-jump-0123456789abcdefghjk"
LEGACY_UUID = "0193a5b0-7000-7000-8000-000000000001"


def test_a_minted_id_is_canonical_for_its_prefix_only() -> None:
    agent = format_id("agent")
    assert is_canonical_id(agent) and is_canonical_id(agent, "agent")
    assert is_id(agent, "agent") and is_id(agent, ["team", "agent"]) and is_id(agent, None)
    assert not is_id(agent, "team") and not is_canonical_id(agent, ("team", "user"))


def test_the_seeds_example_literal_is_not_valid_because_river_is_no_human_id_noun() -> None:
    assert not is_id("user-calm-river-k8m4p2d7n9x3", "user")
    assert is_id(GOOD, "user")


def test_hyphenated_prefixes_are_never_ambiguous() -> None:
    key = "team-api-key-calm-rivers-k8m4p2d7n9x3"
    assert is_id(key, "team-api-key")
    assert not is_id(key, "team")
    assert id_prefix_of(key) == "team-api-key"


def test_twelve_hex_digits_are_canonical() -> None:
    assert is_canonical_id("user-calm-rivers-a1b2c3d4e5f6")


@pytest.mark.parametrize("value", [
    "user-calm-rivers-jump-k8m4p2d7n9x3",  # a third word (verb)
    "user-calm-rivers-k8m4p2",  # 6-character suffix
    "user-calm-rivers-k8m4p2d7n9x3k8m4p2d7",  # 20-character suffix without a verb
    "user-calm-rivers-a1b2c3d4e5f6a7",  # hex of another length
    "user-calm-rivers-k8m4p2d7n9xi", "user-calm-rivers-k8m4p2d7n9xl",
    "user-calm-rivers-k8m4p2d7n9xo", "user-calm-rivers-k8m4p2d7n9xu",
    "user-kalm-rivers-k8m4p2d7n9x3",  # adjective outside the dictionary
    "user-calm-river-k8m4p2d7n9x3",  # noun outside the dictionary
    "user-rivers-calm-k8m4p2d7n9x3",  # words swapped
    "users-calm-rivers-k8m4p2d7n9x3",  # unregistered prefix
    "organization-calm-rivers-k8m4p2d7n9x3",  # retired prefix
    "-calm-rivers-k8m4p2d7n9x3", "calm-rivers-k8m4p2d7n9x3", "", "-", "---",
])
def test_refused_as_canonical_and_as_agentfy_id(value: str) -> None:
    assert not is_canonical_id(value)
    assert not is_id(value, None)


@pytest.mark.parametrize("value", [
    GOOD.upper(), "User-calm-rivers-k8m4p2d7n9x3", "user-Calm-rivers-k8m4p2d7n9x3",
    "user-calm-rivers-K8m4p2d7n9x3",
    GOOD + "\n", GOOD + "\r\n", "\n" + GOOD, " " + GOOD, GOOD + " ", GOOD + "\t", GOOD + "\x00",
    "user\u2010calm-rivers-k8m4p2d7n9x3",  # Unicode hyphen
    "user-calm-rivers-k8m4p2d7n9x\uff13",  # fullwidth digit 3
    "user-calm-rivers-k8m4p2d7n9x\u0663",  # Arabic-Indic digit 3
    "user-c\u0430lm-rivers-k8m4p2d7n9x3",  # Cyrillic a
    "user-calm-rivers-k8m4p2d7n9x3\u200b", "\ufeff" + GOOD,  # zero width, BOM
    "user%2Dcalm-rivers-k8m4p2d7n9x3", "user-calm-rivers-k8m4p2d7n9x%33",  # percent-encoding
    "user-calm-rivers-\uff4b8m4p2d7n9x3",  # fullwidth letter k
])
def test_nothing_is_normalised(value: str) -> None:
    assert not is_id(value, "user")
    assert not is_canonical_id(value)
    assert not is_legacy_id(value)


@pytest.mark.parametrize("value", [None, 3, 3.5, b"user-calm-rivers-k8m4p2d7n9x3", ["x"], object(),
                                   bytearray(b"abc")])
def test_non_strings_are_refused_without_raising(value: object) -> None:
    assert is_id(value, "user") is False
    assert is_canonical_id(value) is False
    assert is_legacy_id(value) is False
    assert legacy_id_format(value) is None


def test_str_subclasses_are_judged_by_their_plain_string() -> None:
    class Sneaky(str):
        def rsplit(self, *args: object, **kwargs: object) -> list[str]:  # type: ignore[override]
            return ["user", "calm", "rivers", "k8m4p2d7n9x3"]

    assert not is_id(Sneaky("junk"), "user") and not is_canonical_id(Sneaky("junk"))
    assert is_id(Sneaky(GOOD), "user")


def test_length_is_bounded_before_parsing() -> None:
    long_prefix_like = "a" * 70 + "-calm-rivers-k8m4p2d7n9x3"
    assert len(long_prefix_like) > ID_MAX_LENGTH
    assert not is_id(long_prefix_like, None) and not is_id("x" * 10_000_000, "user")


def test_unknown_prefix_or_product_is_a_programming_error() -> None:
    for prefix in ["users", "organization", "", "Agent"]:
        with pytest.raises(UnknownPrefixError):
            is_id(GOOD, prefix)
        with pytest.raises(UnknownPrefixError):
            is_canonical_id(GOOD, prefix)
        with pytest.raises(UnknownPrefixError):
            is_legacy_id(GOOD, prefix)
    with pytest.raises(UnknownPrefixError):
        is_id(GOOD, ["user", "nope"])
    with pytest.raises(UnknownPrefixError):
        is_id(GOOD, 5)  # type: ignore[arg-type]
    with pytest.raises(UnknownProductError, match="unknown product 'agentfi'"):
        is_id(GOOD, "user", product="agentfi")
    with pytest.raises(ValueError, match="not a well-formed prefix"):
        is_id(GOOD, "Bad Prefix", product="bonsite")


class TestAgentfyLegacy:
    def test_three_words_and_twenty_crockford(self) -> None:
        assert is_legacy_id(LEGACY_WORDS) and is_legacy_id(LEGACY_WORDS, "agent")
        assert is_id(LEGACY_WORDS, "agent") and not is_canonical_id(LEGACY_WORDS)
        assert not is_id(LEGACY_WORDS, "team")
        assert legacy_id_format(LEGACY_WORDS) is LEGACY_ID_FORMATS[0]
        assert id_prefix_of(LEGACY_WORDS) == "agent"
        assert not is_legacy_id("agent-calm-rivers-calm-0123456789abcdefghjk")  # 'calm' is no verb
        assert not is_legacy_id("agent-calm-rivers-jump-0123456789abcdefghjkl")  # 21 characters

    def test_bare_lower_case_uuid_any_prefix_but_never_nil(self) -> None:
        assert is_legacy_id(LEGACY_UUID) and is_id(LEGACY_UUID, "org") and is_id(LEGACY_UUID, "agent")
        assert legacy_id_format(LEGACY_UUID) is LEGACY_ID_FORMATS[1]
        assert id_prefix_of(LEGACY_UUID) is None
        assert not is_id(LEGACY_UUID.upper(), "org")
        assert not is_id("{" + LEGACY_UUID + "}", "org")
        assert not is_id(LEGACY_UUID.replace("-", ""), "org")
        assert not is_id("urn:uuid:" + LEGACY_UUID, "org")
        for product in ["agentfy", "bonsite", "securify", "shiffty", "store-deputy"]:
            assert not is_id(NIL_UUID, None, product=product)

    def test_uuid_is_not_a_legacy_id_of_other_products(self) -> None:
        assert not is_id(LEGACY_UUID, None, product="bonsite")


class TestOtherProducts:
    def test_bonsite_three_words_twenty_crockford(self) -> None:
        assert is_id("page-calm-rivers-jump-0123456789abcdefghjk", None, product="bonsite")
        assert is_id("page-calm-rivers-jump-0123456789abcdefghjk", "page", product="bonsite")
        assert not is_id("page-calm-rivers-jump-0123456789abcdefghjk", "site", product="bonsite")
        assert not is_id("page-calm-rivers-jump-0123456789abcdefghjk", None, product="agentfy")

    def test_securify_twelve_hex_is_also_canonical_in_shape(self) -> None:
        assert is_legacy_id("vault-calm-rivers-a1b2c3d4e5f6", product="securify")
        assert not is_legacy_id("vault-calm-rivers-a1b2c3d4e5fg", product="securify")

    def test_shiffty_any_lower_case_words_and_six_crockford(self) -> None:
        assert is_legacy_id("shift-zorb-quux-k8m4p2", product="shiffty")
        assert not is_legacy_id("shift-zorb-quux-k8m4pi", product="shiffty")
        assert not is_legacy_id("shift-Zorb-quux-k8m4p2", product="shiffty")
        assert not is_legacy_id("shift-zörb-quux-k8m4p2", product="shiffty")

    def test_store_deputy_twelve_lower_alphanumerics(self) -> None:
        assert is_legacy_id("order-calm-rivers-k8m4p2d7n9xi", product="store-deputy")
        assert not is_legacy_id("order-calm-rivers-k8m4p2d7n9xI", product="store-deputy")

    def test_canonical_ids_are_accepted_by_every_product(self) -> None:
        for product in ["agentfy", "bonsite", "securify", "shiffty", "store-deputy"]:
            assert is_id(GOOD, None, product=product)

    def test_prefix_must_be_well_formed_for_other_products(self) -> None:
        assert not is_id("Page-calm-rivers-k8m4p2d7n9x3", None, product="bonsite")
        assert not is_id("p" * 33 + "-calm-rivers-k8m4p2d7n9x3", None, product="bonsite")


@given(canonical_ids())
def test_generated_canonical_ids_are_accepted(value: str) -> None:
    prefix = id_prefix_of(value)
    assert prefix is not None
    assert is_canonical_id(value, prefix) and is_id(value, prefix) and not is_legacy_id(value)
    assert id_format_of(value) is not None and id_format_of(value).name == "canonical"  # type: ignore[union-attr]


@given(legacy_word_ids())
def test_generated_legacy_word_ids_are_accepted_as_legacy_only(value: str) -> None:
    assert is_legacy_id(value) and is_id(value, id_prefix_of(value)) and not is_canonical_id(value)


@given(legacy_uuids)
def test_generated_uuids_are_accepted_as_legacy(value: str) -> None:
    assert is_legacy_id(value) and is_id(value, "agent")


@given(st.data())
def test_mutations_of_valid_ids_are_refused_unless_they_happen_to_be_valid(data: st.DataObject) -> None:
    value = data.draw(agentfy_ids)
    mutated = data.draw(mutations(value))
    assume(mutated != value)
    # A mutation may land on another valid ID (a different dictionary word, another suffix letter): that is
    # fine only if the result is made of allowed characters and has one of the three shapes.
    if is_id(mutated, None):
        assert re.fullmatch(r"[0-9a-z-]+", mutated)
        assert id_format_of(mutated) is not None


@given(st.text(max_size=90))
def test_arbitrary_text_never_raises(value: str) -> None:
    is_id(value, None)
    is_id(value, "agent")
    is_canonical_id(value)
    is_legacy_id(value, product="shiffty")


class TestIdPattern:
    """id_pattern is the OpenAPI form of is_id: the same verdict on every value (with ECMA's end anchor)."""

    @staticmethod
    def matches(pattern: str, value: str) -> bool:
        # ECMA-262 '$' (no multiline) matches only at the very end; re.fullmatch gives the same semantics.
        return re.fullmatch(pattern, value) is not None

    def test_is_anchored(self) -> None:
        pattern = id_pattern("agent")
        assert pattern.startswith("^") and pattern.endswith("$")
        assert not self.matches(pattern, format_id("agent") + "\n")
        assert not self.matches(pattern, "x" + format_id("agent"))

    def test_is_ecma_compatible(self) -> None:
        # No Python-only syntax: no \Z, \A, named groups with ?P, possessive quantifiers or flags.
        pattern = id_pattern()
        for python_only in ("\\Z", "\\A", "(?P", "(?i", "++", "*+"):
            assert python_only not in pattern

    @given(st.data())
    def test_agrees_with_is_id_on_valid_ids_and_their_mutations(self, data: st.DataObject) -> None:
        prefix = data.draw(st.sampled_from([None, "agent", "team", "team-api-key", "org"]))
        value = data.draw(agentfy_ids)
        pattern = id_pattern(prefix)
        assert self.matches(pattern, value) == is_id(value, prefix)
        mutated = data.draw(mutations(value))
        assert self.matches(pattern, mutated) == is_id(mutated, prefix)

    @given(st.text(alphabet="0123456789abcdefghijklmnopqrstuvwxyz-", max_size=60))
    def test_agrees_with_is_id_on_id_like_noise(self, value: str) -> None:
        assert self.matches(id_pattern(), value) == is_id(value, None)

    def test_nil_uuid(self) -> None:
        assert not self.matches(id_pattern(), NIL_UUID)
        assert self.matches(id_pattern(), LEGACY_UUID)


@given(st.data())
def test_the_compiled_canonical_check_decides_as_the_written_out_one(data: st.DataObject) -> None:
    """The validators' hot path (one compiled fullmatch per prefix) must accept exactly what splitting the value
    and looking its words up accepts, for valid IDs, their small edits and arbitrary text alike."""
    prefix = data.draw(st.one_of(st.none(), st.sampled_from(sorted(ID_PREFIXES))))
    valid = data.draw(agentfy_ids)
    value = data.draw(st.one_of(st.just(valid), mutations(valid), st.text(max_size=90)))
    prefixes = ID_PREFIXES if prefix is None else frozenset([prefix])
    assert (canonical_matcher(prefix)(value) is not None) == CANONICAL.match(value, prefixes)
    expected = len(value) <= ID_MAX_LENGTH and CANONICAL.match(value, prefixes)
    assert is_canonical_id(value, prefix) == expected
    if prefix is not None and expected:
        assert is_id(value, prefix)


def test_canonical_check_for_several_prefixes_and_unknown_ones() -> None:
    assert is_canonical_id("team-afraid-swans-nmkjhgfedcba", ["agent", "team"])
    assert not is_canonical_id("user-afraid-swans-nmkjhgfedcba", ("agent", "team"))
    for bad in ["organization", "Agent", ["agent", "nope"], 7]:
        with pytest.raises(UnknownPrefixError):
            is_canonical_id("agent-afraid-swans-nmkjhgfedcba", bad)  # type: ignore[arg-type]


def test_no_canonical_pattern_reads_past_the_length_bound() -> None:
    """The hot path runs the compiled pattern without checking the length first: that is only sound while the
    longest value any of them can match is within ID_MAX_LENGTH."""
    assert CANONICAL_MAX_WIDTH <= ID_MAX_LENGTH
    for prefix in [None, *sorted(ID_PREFIXES)]:
        pattern = canonical_matcher(prefix).__self__.pattern  # type: ignore[attr-defined]
        assert sre_parse.parse(pattern).getwidth()[1] <= CANONICAL_MAX_WIDTH
    longest = max(ID_PREFIXES, key=len) + "-" + max(ADJECTIVES, key=len) + "-" + max(NOUNS, key=len) + "-" + "0" * 12
    assert len(longest) <= CANONICAL_MAX_WIDTH
    assert is_canonical_id(longest) and not is_canonical_id(longest + "0" * 10**6)
