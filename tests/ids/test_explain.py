"""explain_id says what an ID is or exactly which part is wrong; its verdict is always is_id's."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentfy.ids import explain_id, format_id, is_id
from tests.ids.strategies import agentfy_ids, mutations


def test_canonical() -> None:
    report = explain_id("team-api-key-calm-rivers-k8m4p2d7n9x3")
    assert report.valid and report.format == "canonical"
    assert (report.prefix, report.model, report.words, report.suffix) == (
        "team-api-key", "TeamApiKey", ("calm", "rivers"), "k8m4p2d7n9x3")
    assert report.accepted_by == ("agentfy", "bonsite", "securify", "shiffty", "store-deputy")
    assert report.problems == ()


def test_legacy() -> None:
    report = explain_id("agent-calm-rivers-jump-0123456789abcdefghjk")
    assert report.valid and report.format == "agentfy-legacy-words" and report.words == ("calm", "rivers", "jump")
    uuid = explain_id("0193a5b0-7000-7000-8000-000000000001")
    assert uuid.valid and uuid.format == "agentfy-legacy-uuid" and uuid.prefix is None


@pytest.mark.parametrize(("value", "prefix", "fragment"), [
    ("", None, "is empty"),
    ("x" * 81, None, "81 characters long"),
    ("00000000-0000-0000-0000-000000000000", None, "nil UUID"),
    ("Agent-calm-rivers-k8m4p2d7n9x3", None, "upper-case 'A'"),
    ("agent-calm-rivers-k8m4p2d7n9x3\n", None, "U+000A"),
    ("agent-c\u0430lm-rivers-k8m4p2d7n9x3", None, "CYRILLIC SMALL LETTER A"),
    ("agent%2Dcalm-rivers-k8m4p2d7n9x3", None, "percent-encoded"),
    ("goctech-leader", None, "2 hyphen-separated part(s)"),
    ("organization-calm-rivers-k8m4p2d7n9x3", None, "retired when organization-* became org-*"),
    ("agents-calm-rivers-k8m4p2d7n9x3", None, "prefix 'agents' is not registered"),
    ("team-calm-rivers-k8m4p2d7n9x3", "agent", "prefix 'team' (Team) is not the expected 'agent'"),
    ("agent-kalm-rivers-k8m4p2d7n9x3", None, "adjective 'kalm' is not one of human-id 4.1.3's 200"),
    ("agent-calm-river-k8m4p2d7n9x3", None, "noun 'river'"),
    ("agent-rivers-calm-k8m4p2d7n9x3", None, "(it is a human-id noun)"),
    ("agent-calm-rivers-k8m4p2", None, "has 6 characters; expected 12"),
    ("agent-calm-rivers-k8m4p2d7n9xi", None, "contains 'i', outside Crockford base32"),
])
def test_invalid_values_say_which_part_is_wrong(value: str, prefix: str | None, fragment: str) -> None:
    report = explain_id(value, prefix)
    assert not report.valid
    assert any(fragment in problem for problem in report.problems), report.problems


def test_non_string() -> None:
    report = explain_id(42)
    assert not report.valid and report.problems == ("expected a string, got int",)
    assert report.as_dict()["value"] == "42"


@given(st.data())
def test_verdict_is_is_ids_and_problems_are_given_exactly_when_invalid(data: st.DataObject) -> None:
    value = data.draw(st.one_of(agentfy_ids, agentfy_ids.flatmap(mutations), st.text(max_size=40)))
    prefix = data.draw(st.sampled_from([None, "agent", "org"]))
    report = explain_id(value, prefix)
    assert report.valid == is_id(value, prefix)
    assert bool(report.problems) == (not report.valid)


def test_as_dict_is_json_ready() -> None:
    data = explain_id(format_id("skill")).as_dict()
    assert data["valid"] is True and data["model"] == "Skill" and isinstance(data["words"], list)
