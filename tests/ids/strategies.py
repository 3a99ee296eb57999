"""Hypothesis strategies for IDs, shared by the ID tests."""

from __future__ import annotations

from hypothesis import strategies as st

from agentfy.ids import ID_PREFIXES, ID_SUFFIX_ALPHABET, ID_WORDS

prefixes = st.sampled_from(sorted(ID_PREFIXES))
adjectives = st.sampled_from(ID_WORDS.adjectives)
nouns = st.sampled_from(ID_WORDS.nouns)
verbs = st.sampled_from(ID_WORDS.verbs)


def crockford(length: int) -> st.SearchStrategy[str]:
    return st.text(alphabet=ID_SUFFIX_ALPHABET, min_size=length, max_size=length)


@st.composite
def canonical_ids(draw: st.DrawFn, prefix: st.SearchStrategy[str] = prefixes) -> str:
    return f"{draw(prefix)}-{draw(adjectives)}-{draw(nouns)}-{draw(crockford(12))}"


@st.composite
def legacy_word_ids(draw: st.DrawFn, prefix: st.SearchStrategy[str] = prefixes) -> str:
    return f"{draw(prefix)}-{draw(adjectives)}-{draw(nouns)}-{draw(verbs)}-{draw(crockford(20))}"


legacy_uuids = st.uuids().map(str).filter(lambda u: u != "00000000-0000-0000-0000-000000000000")

agentfy_ids = st.one_of(canonical_ids(), legacy_word_ids(), legacy_uuids)


@st.composite
def mutations(draw: st.DrawFn, value: str) -> str:
    """One small edit of ``value``: what typos, look-alikes and transport damage do to an ID."""
    kind = draw(st.sampled_from(["replace", "insert", "delete", "upper", "newline", "space", "zero-width",
                                 "percent", "fullwidth", "swap-case-one"]))
    position = draw(st.integers(min_value=0, max_value=len(value) - 1))
    if kind == "replace":
        char = draw(st.characters(codec="utf-8"))
        return value[:position] + char + value[position + 1:]
    if kind == "insert":
        return value[:position] + draw(st.characters(codec="utf-8")) + value[position:]
    if kind == "delete":
        return value[:position] + value[position + 1:]
    if kind == "upper":
        return value.upper()
    if kind == "newline":
        return value + "\n"
    if kind == "space":
        return draw(st.sampled_from([" ", "\t", "\u00a0"])) + value
    if kind == "zero-width":
        return value[:position] + "\u200b" + value[position:]
    if kind == "percent":
        return value.replace("-", "%2D", 1)
    if kind == "fullwidth":
        return "".join(chr(ord(c) + 0xFEE0) if c.isdigit() else c for c in value)
    return value[:position] + value[position].swapcase() + value[position + 1:]
