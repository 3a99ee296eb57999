"""Teams, members and team API keys: tenant scoping, same-tenant agents, keys shown once (both engines)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import pytest

from agentfy.identity import InvalidIdError, Scope
from agentfy.ids import is_canonical_id
from agentfy.store.db import Database, Tx
from agentfy.store.errors import ConflictError, InvalidInputError, NotFoundError
from agentfy.store.repos import teams
from tests.helpers.tenants import make_tenant
from tests.store.helpers import count, new_agent, not_found_like_missing


def test_create_get_list_set_lead_and_delete(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    lead, other = new_agent(db, acme, "lead"), new_agent(db, acme, "other")
    with db.transaction() as tx:
        team = teams.create_team(tx, acme, name="Support", lead_agent_id=lead.id)
        plain = teams.create_team(tx, acme, name="Alpha")
    assert is_canonical_id(team.id, "team") and team.lead_agent_id == lead.id and plain.lead_agent_id is None
    with db.transaction() as tx:
        assert teams.get_team(tx, acme, team.id) == team
        assert [t.name for t in teams.list_teams(tx, acme)] == ["Alpha", "Support"]
        assert teams.set_lead(tx, acme, team.id, other.id).lead_agent_id == other.id
        assert teams.get_team(tx, acme, team.id).lead_agent_id == other.id
        assert teams.set_lead(tx, acme, team.id, None).lead_agent_id is None
        teams.delete_team(tx, acme, plain.id)
    with db.transaction() as tx:
        assert [t.id for t in teams.list_teams(tx, acme)] == [team.id]
        with pytest.raises(NotFoundError):
            teams.get_team(tx, acme, plain.id)


def test_members_add_list_remove_and_duplicates(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    a, b = new_agent(db, acme, "a"), new_agent(db, acme, "b")
    with db.transaction() as tx:
        team = teams.create_team(tx, acme, name="T")
        first = teams.add_member(tx, acme, team.id, a.id, role="lead")
        teams.add_member(tx, acme, team.id, b.id)
    assert is_canonical_id(first.id, "team-member") and first.role == "lead"
    with pytest.raises(ConflictError, match="already a member") as caught, db.transaction() as tx:
        teams.add_member(tx, acme, team.id, a.id)
    assert caught.value.field == "agent_id" and caught.value.value == a.id
    with db.transaction() as tx:
        assert [(m.agent_id, m.role) for m in teams.list_members(tx, acme, team.id)] == [(a.id, "lead"),
                                                                                          (b.id, "member")]
        teams.remove_member(tx, acme, team.id, a.id)
        assert [m.agent_id for m in teams.list_members(tx, acme, team.id)] == [b.id]
        with pytest.raises(NotFoundError, match="team member"):
            teams.remove_member(tx, acme, team.id, a.id)
    assert count(db, "team_members") == 1 and count(db, "agents") == 2


def test_agents_of_another_tenant_are_not_found_and_nothing_is_written(db: Database) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    theirs = new_agent(db, globex, "a")
    new_agent(db, acme, "a")  # the same key in acme: irrelevant, IDs are what count
    with db.transaction() as tx:
        team = teams.create_team(tx, acme, name="T")
    calls: list[Callable[[Tx, str], Any]] = [
        lambda tx, ref: teams.create_team(tx, acme, name="X", lead_agent_id=ref),
        lambda tx, ref: teams.set_lead(tx, acme, team.id, ref),
        lambda tx, ref: teams.add_member(tx, acme, team.id, ref),
    ]
    for call in calls:
        not_found_like_missing(db, "agent", "agent", call, theirs.id)
    assert count(db, "teams") == 1 and count(db, "team_members") == 0
    with db.transaction() as tx:
        assert teams.get_team(tx, acme, team.id).lead_agent_id is None


def test_teams_of_another_tenant_are_not_found_like_missing_ones(db: Database) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    mine = new_agent(db, acme, "a")
    with db.transaction() as tx:
        theirs = teams.create_team(tx, globex, name="Secret")
    calls: list[Callable[[Tx, str], Any]] = [
        lambda tx, ref: teams.get_team(tx, acme, ref),
        lambda tx, ref: teams.delete_team(tx, acme, ref),
        lambda tx, ref: teams.set_lead(tx, acme, ref, mine.id),
        lambda tx, ref: teams.add_member(tx, acme, ref, mine.id),
        lambda tx, ref: teams.remove_member(tx, acme, ref, mine.id),
        lambda tx, ref: teams.list_members(tx, acme, ref),
        lambda tx, ref: teams.create_team_api_key(tx, acme, ref, name="k"),
        lambda tx, ref: teams.list_team_api_keys(tx, acme, ref),
    ]
    for call in calls:
        not_found_like_missing(db, "team", "team", call, theirs.id)
    assert count(db, "team_members") == 0 and count(db, "team_api_keys") == 0
    with db.transaction() as tx:
        assert teams.get_team(tx, globex, theirs.id).name == "Secret"
        assert teams.list_teams(tx, acme) == []


@pytest.mark.parametrize("bad", ["agent-calm-rivers-k8m4p2d7n9x3", "", "team calm", "TEAM-CALM-RIVERS-K8M4P2D7N9X3"])
def test_bad_team_ids_are_refused_before_sql(db: Database, bad: str) -> None:
    acme = make_tenant(db, "acme").scope
    agent = new_agent(db, acme, "a")
    for call in (lambda tx: teams.add_member(tx, acme, bad, agent.id),
                 lambda tx: teams.create_team_api_key(tx, acme, bad, name="k"),
                 lambda tx: teams.delete_team(tx, acme, bad),
                 lambda tx: teams.get_team(tx, acme, bad)):
        with pytest.raises(InvalidIdError) as caught, db.transaction() as tx:
            call(tx)
        assert caught.value.field == "team_id" and caught.value.value == bad
    assert count(db, "team_members") == 0 and count(db, "team_api_keys") == 0


@pytest.mark.parametrize("bad", ["team-calm-rivers-k8m4p2d7n9x3", "a", "", "agent-calm-rivers"])
def test_bad_agent_ids_are_refused_before_sql_and_nothing_is_written(db: Database, bad: str) -> None:
    acme = make_tenant(db, "acme").scope
    with db.transaction() as tx:
        team = teams.create_team(tx, acme, name="T")
    with pytest.raises(InvalidIdError) as caught, db.transaction() as tx:
        teams.create_team(tx, acme, name="X", lead_agent_id=bad)
    assert caught.value.field == "lead_agent_id"
    for call in (lambda tx: teams.add_member(tx, acme, team.id, bad),
                 lambda tx: teams.set_lead(tx, acme, team.id, bad),
                 lambda tx: teams.remove_member(tx, acme, team.id, bad)):
        with pytest.raises(InvalidIdError) as caught, db.transaction() as tx:
            call(tx)
        assert caught.value.field == "agent_id"
    assert count(db, "teams") == 1 and count(db, "team_members") == 0


def test_names_are_validated(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    with pytest.raises(InvalidInputError, match="invalid name '': must not be empty"), db.transaction() as tx:
        teams.create_team(tx, acme, name="")
    assert count(db, "teams") == 0


def test_api_key_is_returned_once_and_only_its_hash_and_prefix_are_stored(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    with db.transaction() as tx:
        team = teams.create_team(tx, acme, name="T")
        issued = teams.create_team_api_key(tx, acme, team.id, name="ci")
    key, record = issued.key, issued.api_key
    assert key.startswith("agfy_tk_") and len(key) >= len("agfy_tk_") + 43
    assert record.key_prefix == key[:16] and is_canonical_id(record.id, "team-api-key")
    assert record.tenant_id == acme.tenant_id and record.team_id == team.id and record.revoked_at is None
    assert key not in repr(issued)
    with db.transaction(write=False) as tx:
        stored = tx.all("SELECT key_prefix, key_hash, name FROM team_api_keys")
    assert stored == [(key[:16], hashlib.sha256(key.encode()).hexdigest(), "ci")]
    with db.transaction() as tx:
        assert teams.find_team_api_key(tx, key) == record
        assert teams.list_team_api_keys(tx, acme, team.id) == [record]
        second = teams.create_team_api_key(tx, acme, team.id, name="ci")
    assert second.key != key and second.api_key.id != record.id


@pytest.mark.parametrize("junk", ["", "agfy_tk_", "agfy_tk_wrong", "Bearer agfy_tk_x", "x" * 500,
                                  "agfy_tk_" + "a" * 300])
def test_find_refuses_what_is_not_a_live_key(db: Database, junk: str) -> None:
    acme = make_tenant(db, "acme").scope
    with db.transaction() as tx:
        team = teams.create_team(tx, acme, name="T")
        teams.create_team_api_key(tx, acme, team.id, name="k")
    with db.transaction(write=False) as tx:
        assert teams.find_team_api_key(tx, junk) is None
        assert teams.find_team_api_key(tx, None) is None  # type: ignore[arg-type]


def test_find_is_by_credential_across_tenants_and_gives_the_keys_tenant(db: Database) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    with db.transaction() as tx:
        acme_key = teams.create_team_api_key(tx, acme, teams.create_team(tx, acme, name="A").id, name="k")
        globex_key = teams.create_team_api_key(tx, globex, teams.create_team(tx, globex, name="G").id, name="k")
    with db.transaction(write=False) as tx:
        found_acme = teams.find_team_api_key(tx, acme_key.key)
        found_globex = teams.find_team_api_key(tx, globex_key.key)
    assert found_acme is not None and Scope(found_acme.tenant_id) == acme
    assert found_globex is not None and found_globex.tenant_id == globex.tenant_id


def test_revoke_is_immediate_idempotent_and_tenant_scoped(db: Database) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    with db.transaction() as tx:
        issued = teams.create_team_api_key(tx, acme, teams.create_team(tx, acme, name="T").id, name="k")
    not_found_like_missing(db, "team API key", "team-api-key",
                           lambda tx, ref: teams.revoke_team_api_key(tx, globex, ref), issued.api_key.id)
    with db.transaction() as tx:
        assert teams.find_team_api_key(tx, issued.key) is not None
        revoked = teams.revoke_team_api_key(tx, acme, issued.api_key.id)
        assert revoked.revoked_at is not None
        assert teams.find_team_api_key(tx, issued.key) is None
    with db.transaction() as tx:
        assert teams.revoke_team_api_key(tx, acme, issued.api_key.id).revoked_at == revoked.revoked_at
        assert [k.revoked_at for k in teams.list_team_api_keys(tx, acme, issued.api_key.team_id)] == [
            revoked.revoked_at]
    with pytest.raises(InvalidIdError), db.transaction() as tx:
        teams.revoke_team_api_key(tx, acme, issued.api_key.team_id)


def test_archived_agents_cannot_be_added(db: Database) -> None:
    from agentfy.store.repos import agents

    acme = make_tenant(db, "acme").scope
    agent = new_agent(db, acme, "a")
    with db.transaction() as tx:
        team = teams.create_team(tx, acme, name="T")
        agents.archive_agent(tx, acme, agent.id)
    with pytest.raises(NotFoundError, match="agent"), db.transaction() as tx:
        teams.add_member(tx, acme, team.id, agent.id)
