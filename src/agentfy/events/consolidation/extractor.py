"""Extractors: find the entities and relations of an episodic summary for the knowledge graph.

The semantic worker depends on the :class:`Extractor` protocol only, so an LLM-backed extractor plugs in
(see ``docs/consolidation.md``).  The default, :class:`CapitalisedPhraseExtractor`, is deliberately simple and
deterministic:

* an entity is a run of capitalised words (``Alice``, ``Project Zeta``, ``São Paulo``) within a sentence, with
  a leading function word dropped (``The Eiffel Tower`` → ``Eiffel Tower``; a lone ``The`` or ``I`` is not an
  entity); a possessive or contraction is cut (``Alice's`` → ``Alice``); its type is ``"concept"``;
* two entities in the same sentence are ``"related_to"`` each other (one relation per unordered pair, from
  the one seen first to the other).

It cannot tell a person from a place, misses lower-case names and keeps some capitalised sentence starters;
the dedup worker folds the same name written twice.  That is the price of needing no model.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Final, Protocol, runtime_checkable

_SENTENCES: Final = re.compile(r"(?<=[.!?…;:])\s+|\n+")
_WORD: Final = re.compile(r"[^\W_](?:[\w'\u2019-]*[^\W_])?")  # \u2019: the typographic apostrophe
_APOSTROPHE: Final = re.compile(r"['\u2019]")
#: Capitalised only because they start a sentence: never the first word of an entity.
_STOPWORD_TEXT: Final = """
a an the i it its this that these those we you he she they me my our your his her their them us
and but or so if when what why how where who whom which whose yes no ok okay please thanks thank hi hello hey
sure also then there here in on at for to of with by from as is are was were be been do does did can could
will would should may might must let not all some any every one each both either neither just only maybe
user assistant system tool
"""
_STOPWORDS: Final = frozenset(_STOPWORD_TEXT.split())


def normalise_name(name: str) -> str:
    """The form two names are compared in: Unicode NFKC, case-folded, whitespace collapsed.  ``"  alice "``,
    ``"ALICE"`` and ``"Alice"`` are the same entity; ``"Alice B"`` is not ``"Alice"``."""
    return " ".join(unicodedata.normalize("NFKC", name).casefold().split())


@dataclass(frozen=True, slots=True)
class ExtractedEntity:
    """An entity found in a summary; ``entity_type`` is free text (``"concept"``, ``"person"``, …)."""

    name: str
    entity_type: str = "concept"


@dataclass(frozen=True, slots=True)
class ExtractedRelation:
    """A relation between ``entities[source]`` and ``entities[target]`` of the same :class:`Extraction`."""

    source: int
    target: int
    relation: str = "related_to"


@dataclass(frozen=True, slots=True)
class Extraction:
    """What an extractor found.  Relations refer to entities by index, so an extractor never needs IDs."""

    entities: tuple[ExtractedEntity, ...] = ()
    relations: tuple[ExtractedRelation, ...] = ()


@runtime_checkable
class Extractor(Protocol):
    """Extract entities and relations from a summary's text.  Contract: relation indices must point into
    ``entities`` (an out-of-range index fails the event as invalid input, so nothing is written); names and
    types must be non-empty text.  Duplicate names are allowed — the dedup worker merges them.  Raise to fail
    the event (retried; a ``DeterministicEventError`` is dead-lettered).  An extractor must not write to the
    store."""

    def extract(self, text: str) -> Extraction: ...


@runtime_checkable
class AgentExtractor(Extractor, Protocol):
    """An extractor that needs to know whose summary it reads (to use that agent's own model): the semantic
    worker calls :meth:`extract_for` with the summary's tenant and agent, :meth:`extract` never."""

    def extract_for(self, tenant_id: str, agent_id: str, text: str) -> Extraction: ...


def _base(word: str) -> str:
    return _APOSTROPHE.split(word, maxsplit=1)[0]


def _phrases(sentence: str, max_words: int) -> list[str]:
    """The runs of capitalised words of one sentence (adjacent: separated by whitespace only)."""
    phrases: list[str] = []
    current: list[str] = []
    last_end = 0

    def flush() -> None:
        if current:
            phrases.append(" ".join(current))
            current.clear()

    for match in _WORD.finditer(sentence):
        word = _base(match.group())
        adjacent = not sentence[last_end:match.start()].strip()
        last_end = match.end()
        if not word or not word[0].isupper():
            flush()
            continue
        if not adjacent or len(current) >= max_words:
            flush()
        if not current and word.casefold() in _STOPWORDS:
            continue
        current.append(word)
        if match.group() != word:  # "Alice's": the phrase ends at the apostrophe
            flush()
    flush()
    return phrases


@dataclass(frozen=True, slots=True)
class CapitalisedPhraseExtractor:
    """The default extractor (see the module docstring).  At most ``max_entities`` distinct entities (first
    seen first) and ``max_relations`` relations per summary; phrases of at most ``max_phrase_words`` words."""

    entity_type: str = "concept"
    relation: str = "related_to"
    max_entities: int = 50
    max_relations: int = 200
    max_phrase_words: int = 6

    def extract(self, text: str) -> Extraction:
        index: dict[str, int] = {}
        entities: list[ExtractedEntity] = []
        pairs: dict[tuple[int, int], None] = {}
        for sentence in _SENTENCES.split(text):
            seen: list[int] = []
            for phrase in _phrases(sentence, self.max_phrase_words):
                key = normalise_name(phrase)
                position = index.get(key)
                if position is None:
                    if len(entities) >= self.max_entities:
                        continue
                    position = index[key] = len(entities)
                    entities.append(ExtractedEntity(phrase, self.entity_type))
                if position not in seen:
                    seen.append(position)
            for i, a in enumerate(seen):
                for b in seen[i + 1:]:
                    pair = (min(a, b), max(a, b))
                    if len(pairs) < self.max_relations:
                        pairs.setdefault(pair)
        relations = tuple(ExtractedRelation(a, b, self.relation) for a, b in pairs)
        return Extraction(tuple(entities), relations)
