"""``id_shape_pattern``: with ``id_pattern()`` it states exactly ``id_pattern(prefix)``, so the OpenAPI document
can carry the word dictionaries once (``allOf`` of the two) without changing what any ID parameter accepts."""

from __future__ import annotations

import re
from functools import cache

from hypothesis import given
from hypothesis import strategies as st

from agentfy.ids import ID_PREFIXES, id_pattern, id_shape_pattern, is_id
from tests.ids.strategies import adjectives, agentfy_ids, crockford, mutations, nouns, prefixes, verbs


@cache
def compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def both(value: str, prefix: str) -> bool:
    return (compiled(id_pattern()).fullmatch(value) is not None
            and compiled(id_shape_pattern(prefix)).fullmatch(value) is not None)


def exact(value: str, prefix: str) -> bool:
    return compiled(id_pattern(prefix)).fullmatch(value) is not None


@st.composite
def confusable(draw: st.DrawFn) -> str:
    """Values built to confuse a prefix with a word: hyphenated prefixes, their parts as words, verbs, suffix
    lengths of the other shape."""
    prefix = draw(prefixes)
    words = draw(st.lists(st.one_of(adjectives, nouns, verbs, st.sampled_from(
        sorted({part for p in ID_PREFIXES for part in p.split("-")}))), min_size=1, max_size=4))
    suffix = draw(st.one_of(crockford(12), crockford(20), crockford(draw(st.integers(1, 24)))))
    return "-".join([prefix, *words, suffix])


values = st.one_of(agentfy_ids, confusable(), agentfy_ids.flatmap(mutations))


@given(values, prefixes)
def test_any_id_and_the_shape_of_a_prefix_are_exactly_that_prefixs_ids(value: str, prefix: str) -> None:
    assert both(value, prefix) == exact(value, prefix) == is_id(value, prefix), (value, prefix)


def test_the_shape_pattern_is_small() -> None:
    assert all(len(id_shape_pattern(p)) < 400 for p in ID_PREFIXES)
    assert len(id_pattern()) > 5000  # the dictionaries: what the shared component saves repeating
