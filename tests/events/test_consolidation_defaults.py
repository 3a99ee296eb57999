"""The consolidation pipeline's pure parts: the default summariser and extractor, the dream document, the
settings and the timestamps (no database)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from agentfy.events.consolidation import (
    CapitalisedPhraseExtractor,
    ConsolidationSettings,
    ExtractedEntity,
    ExtractedRelation,
    ExtractiveSummariser,
    Extractor,
    Summariser,
    dream_path,
    duplicate_groups,
    normalise_name,
)
from agentfy.events.consolidation.delayed import parse_stamp, stamp
from agentfy.events.consolidation.dreaming import DREAM_HEADER, append_sections, render_section
from agentfy.events.consolidation.summariser import clip, first_sentence
from agentfy.identity import AgentId, EpisodicSummaryId, KgEntityId, OrgId
from agentfy.store.repos.knowledge import KgEntity
from agentfy.store.repos.memory import EpisodicSummary
from agentfy.store.repos.sessions import MessageToolCall, Session, SessionMessage

SESSION = Session(OrgId("org-x"), "s-1", AgentId("agent-x"), "u", "completed", 0, "t", "t")


def _messages(*pairs: tuple[str, str]) -> list[SessionMessage]:
    return [SessionMessage("s-1", i + 1, role, None, content, "t") for i, (role, content) in enumerate(pairs)]


# -- summariser ----------------------------------------------------------------------------------------------
def test_defaults_satisfy_the_protocols() -> None:
    assert isinstance(ExtractiveSummariser(), Summariser)
    assert isinstance(CapitalisedPhraseExtractor(), Extractor)


def test_extractive_summary_is_the_first_sentence_of_user_and_assistant_messages() -> None:
    messages = _messages(("system", "You are a bot."), ("user", "  Hello   there.  How are you?"),
                         ("tool", "{}"), ("assistant", "Fine! Thanks."), ("user", ""), ("user", "No punctuation"))
    assert ExtractiveSummariser().summarise(SESSION, messages) == (
        "user: Hello there.\nassistant: Fine!\nuser: No punctuation")


def test_extractive_summary_reads_a_tool_exchange_by_tool_name_and_short_result() -> None:
    call = MessageToolCall("c1", "write_file", {"path": "a.txt", "content": "hi"})
    messages = [SessionMessage("s-1", 1, "user", None, "Write a.txt please.", "t"),
                SessionMessage("s-1", 2, "assistant", None, "", "t", (call,)),
                SessionMessage("s-1", 3, "tool", None, "wrote a.txt (2 bytes). " + "x " * 200, "t", (), "c1"),
                SessionMessage("s-1", 4, "tool", None, "", "t", (), "unknown"),
                SessionMessage("s-1", 5, "tool", None, "write_file(path='a.txt') -> wrote", "t"),  # old text row
                SessionMessage("s-1", 6, "assistant", None, "Done.", "t")]
    assert ExtractiveSummariser().summarise(SESSION, messages) == (
        "user: Write a.txt please.\ntool write_file: wrote a.txt (2 bytes).\ntool call: (no output)\n"
        "assistant: Done.")
    long = [messages[1], SessionMessage("s-1", 3, "tool", None, "y" * 500, "t", (), "c1")]
    assert len(ExtractiveSummariser().summarise(SESSION, long)) <= len("tool write_file: ") + 120


def test_extractive_summary_is_bounded() -> None:
    messages = _messages(*[("user", "word " * 200)] * 20)
    summary = ExtractiveSummariser(max_messages=3, max_sentence_chars=50, max_chars=120).summarise(SESSION, messages)
    assert len(summary) <= 120 and summary.endswith("…")
    assert all(len(line) <= len("user: ") + 50 for line in summary.splitlines())
    assert ExtractiveSummariser(max_messages=2).summarise(SESSION, messages).count("\n") == 1


def test_extractive_summary_of_nothing_is_empty() -> None:
    assert ExtractiveSummariser().summarise(SESSION, []) == ""
    assert ExtractiveSummariser().summarise(SESSION, _messages(("system", "x"), ("user", " \n "))) == ""


def test_extractive_summary_is_deterministic() -> None:
    messages = _messages(("user", "Plan the trip to Rome. Then Paris."), ("assistant", "Sure."))
    assert len({ExtractiveSummariser().summarise(SESSION, messages) for _ in range(5)}) == 1


@pytest.mark.parametrize(("text", "limit", "expected"), [
    ("short", 10, "short"), ("one two three four", 10, "one two…"), ("abcdefghijkl", 5, "abcd…"), ("abc", 1, "…"),
])
def test_clip(text: str, limit: int, expected: str) -> None:
    assert clip(text, limit) == expected


def test_first_sentence_keeps_decimals_and_urls() -> None:
    assert first_sentence("Version 2.5 is out. Next.", 100) == "Version 2.5 is out."
    assert first_sentence("See example.com now", 100) == "See example.com now"


# -- extractor -----------------------------------------------------------------------------------------------
def test_capitalised_phrases_are_entities_and_sentence_mates_are_related() -> None:
    extraction = CapitalisedPhraseExtractor().extract(
        "The Eiffel Tower is in Paris. I asked Alice's brother Bob Smith about it. Alice likes Rome.")
    assert [e.name for e in extraction.entities] == ["Eiffel Tower", "Paris", "Alice", "Bob Smith", "Rome"]
    assert {e.entity_type for e in extraction.entities} == {"concept"}
    assert extraction.relations == (ExtractedRelation(0, 1), ExtractedRelation(2, 3), ExtractedRelation(2, 4))


def test_sentence_starters_and_role_prefixes_are_not_entities() -> None:
    extraction = CapitalisedPhraseExtractor().extract("user: Yes. It is fine. I think so.\nassistant: Thanks!")
    assert extraction.entities == () and extraction.relations == ()


def test_same_name_twice_is_one_entity() -> None:
    extraction = CapitalisedPhraseExtractor().extract("Alice met Bob. ALICE left. Alice  stayed with Bob.")
    assert [e.name for e in extraction.entities] == ["Alice", "Bob"]
    assert extraction.relations == (ExtractedRelation(0, 1),)


def test_unicode_names_and_typographic_apostrophes() -> None:
    extraction = CapitalisedPhraseExtractor().extract("Zoë\u2019s trip to São Paulo with Ångström.")
    assert [e.name for e in extraction.entities] == ["Zoë", "São Paulo", "Ångström"]


def test_extractor_limits() -> None:
    text = " ".join(f"Name{chr(65 + i)} met" for i in range(20)) + "."
    extraction = CapitalisedPhraseExtractor(max_entities=5, max_relations=3).extract(text)
    assert len(extraction.entities) == 5 and len(extraction.relations) == 3
    long_phrase = CapitalisedPhraseExtractor(max_phrase_words=2).extract("Alpha Beta Gamma Delta Epsilon.")
    assert [e.name for e in long_phrase.entities] == ["Alpha Beta", "Gamma Delta", "Epsilon"]


def test_extractor_types_are_configurable() -> None:
    extraction = CapitalisedPhraseExtractor(entity_type="thing", relation="near").extract("Alice and Bob.")
    assert extraction.entities == (ExtractedEntity("Alice", "thing"), ExtractedEntity("Bob", "thing"))
    assert extraction.relations == (ExtractedRelation(0, 1, "near"),)


@pytest.mark.parametrize(("a", "b", "same"), [
    ("Alice", "  ALICE ", True), ("Bob  Smith", "bob smith", True), ("Straße", "STRASSE", True),
    ("\uff46\uff55\uff4c\uff4c", "full", True), ("Alice B", "Alice", False),
])
def test_normalise_name(a: str, b: str, same: bool) -> None:
    assert (normalise_name(a) == normalise_name(b)) is same


def _entity(name: str, created: str, suffix: str, user: str = "u", kind: str = "concept") -> KgEntity:
    return KgEntity(KgEntityId(f"kg-entity-{suffix}"), OrgId("o"), AgentId("a"), user, name, kind, {}, created)


def test_duplicate_groups_keep_the_oldest_first() -> None:
    entities = [_entity("alice", "2", "b"), _entity("Alice", "1", "c"), _entity("ALICE", "1", "a"),
                _entity("Alice", "0", "d", user="other"), _entity("Alice", "0", "e", kind="person"),
                _entity("Bob", "0", "f")]
    [group] = duplicate_groups(entities)
    assert [e.id for e in group] == ["kg-entity-a", "kg-entity-c", "kg-entity-b"]


# -- dream document ------------------------------------------------------------------------------------------
def _summary(n: int, text: str = "talked") -> EpisodicSummary:
    return EpisodicSummary(EpisodicSummaryId(f"episodic-summary-{n}"), OrgId("o"), AgentId("a"), "u", f"s-{n}", 0,
                           text, f"2026-01-0{n}T00:00:00.000000Z")


def test_sections_are_appended_once_in_order() -> None:
    first = append_sections("", [_summary(1), _summary(2)], 10_000)
    assert first.startswith(DREAM_HEADER) and first.index("session s-1") < first.index("session s-2")
    assert append_sections(first, [_summary(2)], 10_000) == first
    third = append_sections(first, [_summary(3)], 10_000)
    assert third == first + render_section(_summary(3))


def test_oversized_documents_drop_their_oldest_sections() -> None:
    content = append_sections("", [_summary(n, "x" * 100) for n in range(1, 6)], 400)
    assert len(content) <= 400 and content.startswith(DREAM_HEADER)
    assert "session s-5" in content and "session s-1" not in content


def test_dream_path_is_stable_safe_and_distinct() -> None:
    paths = {dream_path(user) for user in ("", "group:telegram:-100", "guild:1:user:2", "../../etc/passwd")}
    assert len(paths) == 4
    assert all(p.startswith("dreams/") and p.endswith(".md") and p.count("/") == 1 and ".." not in p for p in paths)
    assert dream_path("group:telegram:-100") == dream_path("group:telegram:-100")


# -- settings and timestamps ---------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs", [{"debounce_seconds": -1}, {"max_batch": 0}, {"max_session_messages": 0},
                                    {"dream_max_chars": 0}])
def test_settings_refuse_nonsense(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        ConsolidationSettings(**kwargs)  # type: ignore[arg-type]


def test_stamps_round_trip_in_the_stores_format() -> None:
    moment = datetime(2026, 3, 4, 5, 6, 7, 890, tzinfo=timezone(timedelta(hours=7)))
    text = stamp(moment)
    assert text == "2026-03-03T22:06:07.000890Z" and parse_stamp(text) == moment
    with pytest.raises(ValueError, match="timezone"):
        stamp(datetime(2026, 1, 1))
    assert parse_stamp("2026-01-01T00:00:00.000000Z").tzinfo == UTC
