"""The system prompt: key above the cache boundary, ID below it, and fields that cannot be swapped."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentfy.agents.prompt import (
    CACHE_BOUNDARY_MARKER,
    SystemPromptConfig,
    TurnContext,
    render_system_prompt,
    split_system_prompt,
)
from agentfy.identity import AgentId, AgentKey, InvalidAgentKeyError, InvalidIdError, OrgId
from agentfy.identity.keys import InvalidTenantSlugError, TenantSlug
from agentfy.ids import format_id, is_id
from agentfy.store.repos.agents import Agent
from tests.ids.strategies import canonical_ids, legacy_uuids, legacy_word_ids

KEY = AgentKey("tieu-ho")
INSTRUCTIONS = "Answer in Vietnamese when asked in Vietnamese.\nBe brief."
# Any ID shape: canonical and legacy words IDs of any prefix, and bare UUIDs.
ID_SHAPES = re.compile(r"\b[a-z][a-z0-9-]*(?:-[a-z]+){2,3}-[0-9a-z]{6,20}\b"
                       r"|\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.IGNORECASE)
T0 = datetime(2026, 4, 11, 9, 30, tzinfo=UTC)


def agent(agent_id: str | None = None, *, tenant_id: str | None = None, key: str = KEY) -> Agent:
    return Agent(AgentId(agent_id or format_id("agent")), OrgId(tenant_id or format_id("org")), AgentKey(key),
                 "Tiểu Hổ", {}, "2026-04-11T00:00:00Z", "2026-04-11T00:00:00Z")


def config(record: Agent, slug: str = "master") -> SystemPromptConfig:
    return SystemPromptConfig.for_agent(record, slug, instructions=INSTRUCTIONS)


def assert_no_id(text: str) -> None:
    for token in re.split(r"[\s'\"()@,.:;!?]+", text):
        assert not is_id(token, None), token
    assert ID_SHAPES.search(text) is None, text


@given(st.one_of(canonical_ids(), legacy_word_ids(), legacy_uuids))
def test_the_id_detector_is_not_vacuous(agent_id: str) -> None:
    with pytest.raises(AssertionError):
        assert_no_id(f"You are @tieu-ho ({agent_id}).")
    assert ID_SHAPES.search(f"id={agent_id};") is not None


# -- Construction: the two identities cannot be swapped -----------------------------------------------------
def test_for_agent_takes_the_key_for_display_and_the_id_for_runtime() -> None:
    record = agent()
    built = config(record)
    assert built.display_agent_key == record.agent_key and built.runtime_agent_id == record.id
    assert built.tenant_slug == "master" and built.display_name == record.display_name


def test_the_id_where_the_key_belongs_is_refused() -> None:
    agent_id = format_id("agent")
    with pytest.raises(InvalidAgentKeyError) as caught:
        SystemPromptConfig(display_agent_key=AgentKey(agent_id), runtime_agent_id=AgentId(agent_id),
                           tenant_slug=TenantSlug("master"))
    assert caught.value.field == "display_agent_key"


def test_the_key_where_the_id_belongs_is_refused() -> None:
    with pytest.raises(InvalidIdError) as caught:
        SystemPromptConfig(display_agent_key=KEY, runtime_agent_id=AgentId(KEY), tenant_slug=TenantSlug("master"))
    assert caught.value.field == "runtime_agent_id"


def test_both_swapped_is_refused() -> None:
    agent_id = format_id("agent")
    with pytest.raises((InvalidAgentKeyError, InvalidIdError)):
        SystemPromptConfig(display_agent_key=AgentKey(agent_id), runtime_agent_id=AgentId(KEY),
                           tenant_slug=TenantSlug("master"))


def test_an_id_of_another_entity_is_refused_as_the_agent_id() -> None:
    with pytest.raises(InvalidIdError):
        SystemPromptConfig(display_agent_key=KEY, runtime_agent_id=AgentId(format_id("team")),
                           tenant_slug=TenantSlug("master"))


def test_fields_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        SystemPromptConfig(KEY, AgentId(format_id("agent")), TenantSlug("master"))  # type: ignore[call-arg]


def test_the_tenant_id_where_the_slug_belongs_is_refused() -> None:
    with pytest.raises(InvalidTenantSlugError):
        SystemPromptConfig.for_agent(agent(), format_id("org"))


def test_a_record_with_its_identities_swapped_is_refused() -> None:
    record = agent()
    swapped = record._replace(id=record.agent_key, agent_key=record.id)  # type: ignore[arg-type]  # mypy sees it too
    with pytest.raises((InvalidAgentKeyError, InvalidIdError)):
        SystemPromptConfig.for_agent(swapped, "master")


def test_the_marker_cannot_be_smuggled_in() -> None:
    with pytest.raises(ValueError, match="cache boundary"):
        SystemPromptConfig.for_agent(agent(), "master", instructions=f"hi\n{CACHE_BOUNDARY_MARKER}\nagent_id: x")
    with pytest.raises(ValueError, match="cache boundary"):
        TurnContext(now=T0, session_key=CACHE_BOUNDARY_MARKER)
    with pytest.raises(ValueError, match="single line"):
        TurnContext(now=T0, session_key="s1\nagent_id: agent-calm-rivers-k8m4p2d7n9x3")


def test_turn_time_must_be_timezone_aware() -> None:
    with pytest.raises(ValueError, match="timezone"):
        TurnContext(now=datetime(2026, 4, 11, 9, 30))


# -- Rendering ----------------------------------------------------------------------------------------------
def test_layout_key_above_the_marker_id_below() -> None:
    record = agent()
    prompt = render_system_prompt(config(record), turn_context=TurnContext(now=T0, session_key="tg:42"))
    lines = prompt.splitlines()
    assert lines.count(CACHE_BOUNDARY_MARKER) == 1
    prefix, runtime = split_system_prompt(prompt)
    assert prefix.startswith("You are @tieu-ho (Tiểu Hổ), an agent of the 'master' workspace.\n")
    assert INSTRUCTIONS in prefix
    assert prompt == prefix + CACHE_BOUNDARY_MARKER + "\n" + runtime
    assert prompt.count(record.id) == 1 and prompt.index(record.id) > prompt.index(CACHE_BOUNDARY_MARKER)
    assert f"agent_id: {record.id}" in runtime.splitlines()
    assert "current_time: 2026-04-11T09:30:00+00:00" in runtime and "session: tg:42" in runtime
    assert_no_id(prefix)


def test_the_prefix_is_byte_identical_across_turns() -> None:
    built = config(agent())
    turns = [TurnContext(now=T0), TurnContext(now=T0 + timedelta(hours=5), session_key="tg:42"),
             TurnContext(now=datetime(2030, 1, 1, tzinfo=timezone(timedelta(hours=7))), session_key="ws:9")]
    prompts = [render_system_prompt(built, turn_context=turn) for turn in turns]
    prefixes = {split_system_prompt(p)[0].encode() for p in prompts}
    assert len(prefixes) == 1
    assert len({split_system_prompt(p)[1] for p in prompts}) == len(turns)


def test_an_agent_recreated_under_the_same_key_keeps_its_prefix() -> None:
    tenant = format_id("org")
    before, after = agent(tenant_id=tenant), agent(tenant_id=tenant)
    assert before.id != after.id
    turn = TurnContext(now=T0)
    prefix_before, runtime_before = split_system_prompt(render_system_prompt(config(before), turn_context=turn))
    prefix_after, runtime_after = split_system_prompt(render_system_prompt(config(after), turn_context=turn))
    assert prefix_before.encode() == prefix_after.encode()
    assert runtime_before != runtime_after


def test_the_same_key_in_two_tenants_differs_only_by_the_slug_above_the_marker() -> None:
    master, viet = agent(), agent()  # the same key in two tenants: different IDs, different organisations
    turn = TurnContext(now=T0)
    prefix_master = split_system_prompt(render_system_prompt(config(master, "master"), turn_context=turn))[0]
    prefix_viet = split_system_prompt(render_system_prompt(config(viet, "viet-org"), turn_context=turn))[0]
    assert prefix_master.replace("'master'", "'<slug>'") == prefix_viet.replace("'viet-org'", "'<slug>'")
    assert_no_id(prefix_master + prefix_viet)


@given(agent_id=st.one_of(canonical_ids(st.just("agent")), legacy_word_ids(st.just("agent")), legacy_uuids),
       other_id=canonical_ids(st.just("agent")),
       seconds=st.integers(min_value=0, max_value=10**9), session=st.none() | st.text("abc:0123", max_size=12))
def test_the_prefix_never_holds_an_id_and_never_depends_on_it(agent_id: str, other_id: str, seconds: int,
                                                              session: str | None) -> None:
    turn = TurnContext(now=T0 + timedelta(seconds=seconds), session_key=session)
    prompt = render_system_prompt(config(agent(agent_id)), turn_context=turn)
    prefix, runtime = split_system_prompt(prompt)
    assert_no_id(prefix)
    assert agent_id not in prefix and agent_id in runtime
    reference = split_system_prompt(render_system_prompt(config(agent(other_id)), turn_context=TurnContext(now=T0)))
    assert prefix == reference[0]


def test_split_refuses_a_prompt_without_the_marker() -> None:
    with pytest.raises(ValueError, match="marker"):
        split_system_prompt("You are @tieu-ho.\n")
