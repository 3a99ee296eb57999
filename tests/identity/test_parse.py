"""The two parsing contracts of the storage boundary, and agent_key rules: ``parse_id`` raises on anything that is
not an ID (every write, and every read where no match would hide a bug); ``parse_id_or_none`` is silent by
contract, for reads where no match is the right answer to bad input.  Neither ever returns a stand-in value."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentfy.identity import InvalidAgentKeyError, InvalidIdError, parse_agent_key, parse_id, parse_id_or_none
from agentfy.identity.keys import agent_key_problem, is_short_key, looks_like_an_id
from agentfy.ids import NIL_UUID, format_id, is_id
from tests.ids.strategies import agentfy_ids


def test_parse_id_returns_the_value_itself() -> None:
    agent = format_id("agent")
    assert parse_id(agent, "agent") is agent
    assert parse_id("0193a5b0-7000-7000-8000-000000000001", "agent") == "0193a5b0-7000-7000-8000-000000000001"


@pytest.mark.parametrize("bad", ["goctech-leader", NIL_UUID, "", None, 7, "team-calm-rivers-k8m4p2d7n9x3",
                                 "AGENT-calm-rivers-k8m4p2d7n9x3"])
def test_parse_id_raises_naming_field_value_and_expected_format(bad: object) -> None:
    with pytest.raises(InvalidIdError) as caught:
        parse_id(bad, "agent", field="source_agent_id")
    error = caught.value
    assert error.field == "source_agent_id" and error.value == bad and error.prefix == "agent"
    assert "agent-<adjective>-<noun>-<12 Crockford base32>" in str(error)
    assert "source_agent_id" in str(error) and error.problems


def test_parse_id_or_none_is_silent_by_contract() -> None:
    assert parse_id_or_none("goctech-leader", "agent") is None
    assert parse_id_or_none(NIL_UUID, "agent") is None
    agent = format_id("agent")
    assert parse_id_or_none(agent, "agent") == agent


@given(st.one_of(agentfy_ids, st.text(max_size=40)))
def test_parse_id_and_or_none_agree_with_is_id(value: str) -> None:
    if is_id(value, "agent"):
        assert parse_id(value, "agent") == value == parse_id_or_none(value, "agent")
    else:
        assert parse_id_or_none(value, "agent") is None
        with pytest.raises(InvalidIdError):
            parse_id(value, "agent")


@given(st.from_regex(r"[a-z0-9]{1,10}(-[a-z0-9]{1,10}){0,2}", fullmatch=True))
def test_slugs_with_fewer_than_three_hyphens_are_keys(value: str) -> None:
    assert parse_agent_key(value) == value


@given(agentfy_ids)
def test_no_id_is_ever_a_valid_agent_key(value: str) -> None:
    assert looks_like_an_id(value)
    with pytest.raises(InvalidAgentKeyError):
        parse_agent_key(value)


@given(st.one_of(agentfy_ids, st.text(max_size=120), st.from_regex(r"[a-z0-9-]{0,110}", fullmatch=True)))
def test_the_short_key_test_only_ever_says_yes_to_valid_keys(value: str) -> None:
    """``is_short_key`` lets resolution skip the ID checks: it must never accept what the full rules refuse,
    and it accepts every valid key with fewer than three hyphens."""
    if is_short_key(value):
        assert agent_key_problem(value) is None and not looks_like_an_id(value) and not is_id(value, "agent")
    elif agent_key_problem(value) is None:
        assert value.count("-") >= 3


def test_parse_id_by_typed_id_checks_that_entity_and_returns_the_type() -> None:
    from agentfy.identity.ids import PREFIX_OF, AgentId, OrgId
    from agentfy.ids import ID_ENTITIES, format_id

    assert set(PREFIX_OF.values()) <= set(ID_ENTITIES.values())
    agent = format_id("agent")
    parsed: AgentId = parse_id(agent, AgentId)
    assert parsed == agent
    with pytest.raises(InvalidIdError, match=r"invalid tenant_id 'agent-.*expected org-<adjective>"):
        parse_id(agent, OrgId, field="tenant_id")
