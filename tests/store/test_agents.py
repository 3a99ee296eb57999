"""Agents: both identities, tenant scoping, key rules, conflicts, collision retry (both engines)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentfy.identity import InvalidAgentKeyError, InvalidIdError, Scope
from agentfy.identity.keys import agent_key_problem, looks_like_an_id
from agentfy.ids import format_id, is_canonical_id, is_id
from agentfy.ids.retry import IdRetryExhaustedError
from agentfy.store.db import Database
from agentfy.store.errors import ConflictError, NotFoundError
from agentfy.store.repos import agents, orgs
from tests.helpers.tenants import make_tenant
from tests.ids.sources import ReplaySource
from tests.ids.strategies import agentfy_ids, canonical_ids, mutations
from tests.store.helpers import count, new_agent


def test_create_mints_a_canonical_id_and_keeps_both_identities(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    agent = new_agent(db, acme, "support-bot")
    assert is_canonical_id(agent.id, "agent") and agent.agent_key == "support-bot"
    assert agent.tenant_id == acme.tenant_id and agent.display_name == "support-bot"
    with db.transaction() as tx:
        assert agents.get_agent(tx, acme, agent.id) == agent
        assert agents.get_agent_by_key(tx, acme, "support-bot") == agent
        assert agents.resolve_agent(tx, acme, agent.id) == agent
        assert agents.resolve_agent(tx, acme, "support-bot") == agent


def test_same_key_in_two_tenants_is_two_agents(db: Database) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    a, b = new_agent(db, acme, "tieu-ho"), new_agent(db, globex, "tieu-ho")
    assert a.id != b.id
    with db.transaction() as tx:
        assert agents.resolve_agent(tx, acme, "tieu-ho").id == a.id
        assert agents.resolve_agent(tx, globex, "tieu-ho").id == b.id


def test_another_tenants_agent_is_not_found_like_a_missing_one(db: Database) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    theirs = new_agent(db, globex, "secret-bot")
    missing = format_id("agent")
    with db.transaction() as tx:
        for ref in (theirs.id, "secret-bot"):
            with pytest.raises(NotFoundError) as caught:
                agents.resolve_agent(tx, acme, ref)
            assert str(caught.value) == f"agent {ref!r} not found"
        with pytest.raises(NotFoundError) as caught:
            agents.get_agent(tx, acme, missing)
        assert str(caught.value) == f"agent {missing!r} not found"
        with pytest.raises(NotFoundError):
            agents.delete_agent(tx, acme, theirs.id)
        with pytest.raises(NotFoundError):
            agents.rename_agent(tx, acme, theirs.id, "mine-now")
    with db.transaction() as tx:
        assert agents.get_agent(tx, globex, theirs.id).agent_key == "secret-bot"


def test_duplicate_key_is_a_conflict_not_retried_and_writes_nothing(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    new_agent(db, acme, "bot")
    with pytest.raises(ConflictError, match="agent_key 'bot' is already used") as caught, db.transaction() as tx:
        agents.create_agent(tx, acme, agent_key="bot")
    assert caught.value.field == "agent_key"
    assert count(db, "agents") == 1


@pytest.mark.parametrize("bad", ["", "Bot", "bot_1", "-bot", "bot-", "b" * 101, "agent-calm-rivers-k8m4p2d7n9x3",
                                 "robot-calm-rivers-k8m4p2d7n9x3", "0193a5b0-7000-7000-8000-000000000001",
                                 "agent-calm-rivers-k8m4p2d7n9xi",  # Store Deputy shape (12 [a-z0-9])
                                 "bot\n", "b\u00f6t"])
def test_bad_keys_are_refused_with_the_rule_and_nothing_is_written(db: Database, bad: str) -> None:
    acme = make_tenant(db, "acme").scope
    with pytest.raises(InvalidAgentKeyError) as caught, db.transaction() as tx:
        agents.create_agent(tx, acme, agent_key=bad)
    assert repr(bad) in str(caught.value)
    assert count(db, "agents") == 0


def test_key_that_looks_like_an_id_says_so(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    with pytest.raises(InvalidAgentKeyError, match="shape of an ID"), db.transaction() as tx:
        agents.create_agent(tx, acme, agent_key="robot-calm-rivers-k8m4p2d7n9x3")


@pytest.mark.parametrize("bad", ["team-calm-rivers-k8m4p2d7n9x3", "AGENT-CALM", "", "not an id", "agent-calm-rivers"])
def test_writes_parse_ids_first(db: Database, bad: str) -> None:
    acme = make_tenant(db, "acme").scope
    with db.transaction() as tx:
        with pytest.raises(InvalidIdError) as caught:
            agents.delete_agent(tx, acme, bad)
        assert caught.value.field == "agent_id" and caught.value.value == bad
        with pytest.raises(InvalidIdError):
            agents.get_agent(tx, acme, bad)


def test_resolve_refuses_what_is_neither_id_nor_key(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    with pytest.raises(InvalidAgentKeyError, match=r"expected an agent ID .* or an agent_key"), db.transaction() as tx:
        agents.resolve_agent(tx, acme, "Not A Key")
    with pytest.raises(InvalidIdError, match=r"prefix 'team' .* is not the expected 'agent'"), db.transaction() as tx:
        agents.resolve_agent(tx, acme, "team-calm-rivers-k8m4p2d7n9x3")


# Values resolve_agent must tell apart: IDs of every shape and prefix, keys (some starting "agent-", one word,
# several hyphens), damaged IDs, and any text at all.
_REFERENCES = st.one_of(
    agentfy_ids, canonical_ids(st.just("agent")), canonical_ids(st.just("agent")).flatmap(mutations),
    st.from_regex(r"(agent-)?[a-z0-9]{1,8}(-[a-z0-9]{1,8}){0,4}", fullmatch=True), st.text(max_size=40))


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(value=_REFERENCES)
def test_resolve_decides_every_value_as_the_id_and_key_rules_do(db: Database, value: str) -> None:
    """Whatever resolve_agent checks first for speed, its answer is the rules': an agent ID (canonical or
    legacy) is looked up by ID, else a valid key by key, else the error says which rule the value broke."""
    acme = Scope(format_id("org"))  # no such tenant: every look-up that gets to the database finds nothing
    with db.transaction(write=False) as tx:
        if is_id(value, "agent") or agent_key_problem(value) is None:
            with pytest.raises(NotFoundError):
                agents.resolve_agent(tx, acme, value)
        else:
            expected = InvalidIdError if looks_like_an_id(value) else InvalidAgentKeyError
            with pytest.raises(expected):
                agents.resolve_agent(tx, acme, value)


def test_a_key_that_starts_like_an_agent_id_is_still_a_key(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    smith = new_agent(db, acme, "agent-smith")
    with db.transaction(write=False) as tx:
        assert agents.resolve_agent(tx, acme, "agent-smith") == smith
        assert agents.resolve_agent(tx, acme, smith.id) == smith


def test_scope_refuses_anything_but_an_org_id() -> None:
    for bad in ["acme", "", "agent-calm-rivers-k8m4p2d7n9x3", None, "org-calm-river-k8m4p2d7n9x3"]:
        with pytest.raises(InvalidIdError) as caught:
            Scope.of(bad)
        assert caught.value.field == "tenant_id"
        with pytest.raises(InvalidIdError):
            Scope(bad)  # type: ignore[arg-type]


def test_rename_frees_the_old_key_at_once_and_keeps_the_id(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    agent = new_agent(db, acme, "old-name")
    with db.transaction() as tx:
        renamed = agents.rename_agent(tx, acme, agent.id, "new-name")
    assert renamed.id == agent.id and renamed.agent_key == "new-name"
    again = new_agent(db, acme, "old-name")
    assert again.id != agent.id


def test_rename_to_a_taken_key_is_a_conflict(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    a = new_agent(db, acme, "a")
    new_agent(db, acme, "b")
    with pytest.raises(ConflictError), db.transaction() as tx:
        agents.rename_agent(tx, acme, a.id, "b")


def test_archive_and_delete_free_the_key_at_once(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    first = new_agent(db, acme, "bot")
    with db.transaction() as tx:
        agents.archive_agent(tx, acme, first.id)
    with db.transaction() as tx, pytest.raises(NotFoundError):
        agents.get_agent(tx, acme, first.id)
    second = new_agent(db, acme, "bot")
    with db.transaction() as tx:
        agents.delete_agent(tx, acme, second.id)
    third = new_agent(db, acme, "bot")
    assert len({first.id, second.id, third.id}) == 3


def test_a_primary_key_collision_repeats_the_write_with_a_new_id(db_url: str) -> None:
    # The same 22 bytes mint the same ID: the second create collides once, then gets a fresh ID.
    same, fresh = bytes(22), bytes(range(22))
    db = Database(db_url, random=ReplaySource(same * 3 + fresh))
    try:
        with db.transaction() as tx:
            org = orgs.create_organization(tx, slug="acme", name="Acme")  # mints from 'same'
        acme = Scope(org.id)
        first = new_agent(db, acme, "first")  # 'same' again: a different table, no collision
        second = new_agent(db, acme, "second")  # 'same' collides with first, then 'fresh'
        assert first.id == format_id("agent", ReplaySource(same))
        assert second.id == format_id("agent", ReplaySource(fresh))
        assert count(db, "agents") == 2
    finally:
        db.dispose()


def test_collisions_on_every_attempt_give_up_after_five_and_write_nothing(db_url: str) -> None:
    db = Database(db_url, random=ReplaySource(bytes(22) * 8))
    try:
        with db.transaction() as tx:
            org = orgs.create_organization(tx, slug="acme", name="Acme")
        acme = Scope(org.id)
        new_agent(db, acme, "first")
        with pytest.raises(IdRetryExhaustedError, match="after 5 attempts"), db.transaction() as tx:
            agents.create_agent(tx, acme, agent_key="second")
        assert count(db, "agents") == 1
    finally:
        db.dispose()


def test_list_and_update(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    new_agent(db, acme, "b")
    a = new_agent(db, acme, "a")
    with db.transaction() as tx:
        assert [x.agent_key for x in agents.list_agents(tx, acme)] == ["a", "b"]
        updated = agents.update_agent(tx, acme, a.id, display_name="Agent A", config={"model": "x"})
    assert updated.display_name == "Agent A" and updated.config == {"model": "x"}
