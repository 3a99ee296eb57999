"""The dictionaries are human-id 4.1.3's, in its order: a different list mints different IDs."""

from __future__ import annotations

import re

from agentfy.ids import ID_WORDS
from agentfy.ids.words import RECORDED_CHECKSUM, words_checksum

# The checksum of the lists scripts/build_wordlists.py took from npm human-id@4.1.3.
HUMAN_ID_4_1_3_SHA256 = "716d903efdeb0ccbb46800e11a2ad9cab1841713a7027f8ea6da05cda92320ba"


def test_counts_match_human_id_4_1_3() -> None:
    assert (len(ID_WORDS.adjectives), len(ID_WORDS.nouns), len(ID_WORDS.verbs)) == (200, 300, 250)


def test_checksum_of_loaded_words_matches_the_recorded_and_the_pinned_one() -> None:
    computed = words_checksum(ID_WORDS.adjectives, ID_WORDS.nouns, ID_WORDS.verbs)
    assert computed == RECORDED_CHECKSUM == HUMAN_ID_4_1_3_SHA256


def test_words_are_lower_case_ascii_and_unique() -> None:
    for words in ID_WORDS:
        assert all(re.fullmatch(r"[a-z]+", w) for w in words)
        assert len(set(words)) == len(words)


def test_the_control_vector_words_sit_where_the_seed_says() -> None:
    assert ID_WORDS.adjectives[0] == "afraid"
    assert ID_WORDS.nouns[258] == "swans"
    assert "river" not in ID_WORDS.nouns and "rivers" in ID_WORDS.nouns
