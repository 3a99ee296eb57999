"""Skills (actor ownership, legacy scope tolerance), cron jobs and group config grants (both engines)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from agentfy.identity import InvalidIdError
from agentfy.ids import is_canonical_id
from agentfy.schedule import from_utc_text
from agentfy.store.db import Database, Tx, now
from agentfy.store.errors import ConflictError, InvalidInputError, NotFoundError
from agentfy.store.repos import cron, permissions, skills
from tests.helpers.tenants import make_tenant
from tests.store.helpers import count, new_agent, not_found_like_missing

GROUP = "group:telegram:-100123"
ALICE, BOB = "1001", "1002"



# -- skills -----------------------------------------------------------------------------------------------
def test_skills_create_get_list_update_delete(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    with db.transaction() as tx:
        skill = skills.create_skill(tx, acme, owner_id=ALICE, name="summarise", content="Summarise briefly.")
        skills.create_skill(tx, acme, owner_id=BOB, name="translate", content="Translate.")
    assert is_canonical_id(skill.id, "skill") and skill.owner_id == ALICE
    with pytest.raises(ConflictError, match="name 'summarise'") as caught, db.transaction() as tx:
        skills.create_skill(tx, acme, owner_id=BOB, name="summarise", content="x")
    assert caught.value.field == "name"
    with db.transaction() as tx:
        assert skills.get_skill(tx, acme, skill.id) == skill
        assert skills.get_skill_by_name(tx, acme, "summarise") == skill
        assert [s.name for s in skills.list_skills(tx, acme)] == ["summarise", "translate"]
        updated = skills.update_skill(tx, acme, skill.id, content="Summarise in one line.")
        assert updated.content == "Summarise in one line." and updated.owner_id == ALICE
        skills.delete_skill(tx, acme, skill.id)
    assert count(db, "skills") == 1


def test_skills_are_tenant_scoped(db: Database) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    with db.transaction() as tx:
        theirs = skills.create_skill(tx, globex, owner_id=ALICE, name="secret", content="x")
        skills.create_skill(tx, acme, owner_id=ALICE, name="secret", content="mine")  # names are per tenant
    for call in (lambda tx, ref: skills.get_skill(tx, acme, ref),
                 lambda tx, ref: skills.update_skill(tx, acme, ref, content="stolen"),
                 lambda tx, ref: skills.delete_skill(tx, acme, ref)):
        not_found_like_missing(db, "skill", "skill", call, theirs.id)
    with db.transaction() as tx:
        assert skills.get_skill(tx, globex, theirs.id).content == "x"
        assert skills.get_skill_by_name(tx, acme, "secret").content == "mine"
    with pytest.raises(InvalidIdError), db.transaction() as tx:
        skills.delete_skill(tx, acme, "secret")


@pytest.mark.parametrize("owner", [GROUP, "guild:1:user:2", "", "10\n01"])
def test_new_skills_are_owned_by_the_actor_never_the_group(db: Database, owner: str) -> None:
    acme = make_tenant(db, "acme").scope
    with pytest.raises(InvalidInputError) as caught, db.transaction() as tx:
        skills.create_skill(tx, acme, owner_id=owner, name="s", content="x")
    assert caught.value.field == "owner_id"
    assert count(db, "skills") == 0


def test_can_manage_skill_accepts_the_actor_or_for_legacy_rows_the_scope(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    with db.transaction() as tx:
        new = skills.create_skill(tx, acme, owner_id=ALICE, name="new", content="x")
        # A row written before #915: the owner is the group scope (raw insert; the repository refuses it now).
        legacy_id = tx.db.mint("skill")
        tx.execute("INSERT INTO skills (id, tenant_id, owner_id, name, content, created_at) "
                   "VALUES (:id, :tenant_id, :owner, 'legacy', 'x', :now)",
                   {"id": legacy_id, "tenant_id": acme.tenant_id, "owner": GROUP, "now": now()})
        legacy = skills.get_skill(tx, acme, legacy_id)
    # New row: the publishing person, from any chat; not another member of the group it was published in.
    assert skills.can_manage_skill(new, ALICE, GROUP)
    assert skills.can_manage_skill(new, ALICE, ALICE)  # a DM: scope and actor are the same person
    assert not skills.can_manage_skill(new, BOB, GROUP)
    assert not skills.can_manage_skill(new, None, GROUP)
    # Legacy row: anyone acting in the scope it was stored under, not outside it.
    assert skills.can_manage_skill(legacy, BOB, GROUP)
    assert skills.can_manage_skill(legacy, ALICE, GROUP)
    assert not skills.can_manage_skill(legacy, ALICE, ALICE)
    assert not skills.can_manage_skill(legacy, ALICE, "group:telegram:-100999")
    # Empty identities never match, even an (impossible) empty owner.
    empty_owner = skills.Skill(new.id, new.tenant_id, "", "x", "x", new.created_at)
    assert not skills.can_manage_skill(empty_owner, "", "")
    assert not skills.can_manage_skill(empty_owner, None, None)


# -- cron -------------------------------------------------------------------------------------------------
def test_cron_jobs_record_actor_and_scope(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    a, b = new_agent(db, acme, "a"), new_agent(db, acme, "b")
    with db.transaction() as tx:
        job = cron.create_cron_job(tx, acme, a.id, created_by=ALICE, user_id_scope=GROUP, schedule="0 9 * * 1-5",
                                   payload={"message": "stand-up"})
        other = cron.create_cron_job(tx, acme, b.id, created_by=BOB, schedule="@every 1h", enabled=False)
    assert is_canonical_id(job.id, "cron-job")
    assert (job.created_by, job.user_id, job.enabled, job.payload) == (ALICE, GROUP, True, {"message": "stand-up"})
    assert (other.user_id, other.enabled, other.payload) == ("", False, {})
    with db.transaction() as tx:
        assert cron.get_cron_job(tx, acme, job.id) == job
        assert cron.get_cron_job(tx, acme, other.id) == other
        assert cron.list_cron_jobs(tx, acme, a.id) == [job]
        assert len(cron.list_cron_jobs(tx, acme)) == 2
        assert cron.set_cron_job_enabled(tx, acme, job.id, False).enabled is False
        assert cron.set_cron_job_enabled(tx, acme, job.id, True).enabled is True
        cron.delete_cron_job(tx, acme, other.id)
    assert count(db, "cron_jobs") == 1


def test_cron_jobs_are_tenant_scoped_and_validated(db: Database) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    mine, theirs = new_agent(db, acme, "a"), new_agent(db, globex, "a")
    with db.transaction() as tx:
        their_job = cron.create_cron_job(tx, globex, theirs.id, created_by=ALICE, schedule="* * * * *")
    for call in (lambda tx, ref: cron.get_cron_job(tx, acme, ref),
                 lambda tx, ref: cron.set_cron_job_enabled(tx, acme, ref, False),
                 lambda tx, ref: cron.delete_cron_job(tx, acme, ref)):
        not_found_like_missing(db, "cron job", "cron-job", call, their_job.id)
    not_found_like_missing(db, "agent", "agent",
                           lambda tx, ref: cron.create_cron_job(tx, acme, ref, created_by=ALICE, schedule="* * * * *"),
                           theirs.id)
    not_found_like_missing(db, "agent", "agent", lambda tx, ref: cron.list_cron_jobs(tx, acme, ref), theirs.id)
    bad_calls: list[tuple[Callable[[Tx], Any], type[Exception], str]] = [
        (lambda tx: cron.create_cron_job(tx, acme, "a", created_by=ALICE, schedule="* * * * *"), InvalidIdError,
         "agent_id"),
        (lambda tx: cron.create_cron_job(tx, acme, mine.id, created_by="", schedule="* * * * *"), InvalidInputError,
         "created_by"),
        (lambda tx: cron.create_cron_job(tx, acme, mine.id, created_by=ALICE, schedule=""), InvalidInputError,
         "schedule"),
        (lambda tx: cron.create_cron_job(tx, acme, mine.id, created_by=ALICE, schedule="* * * * *",
                                         enabled="yes"), InvalidInputError, "enabled"),  # type: ignore[arg-type]
        (lambda tx: cron.create_cron_job(tx, acme, mine.id, created_by=ALICE, schedule="* * * * *",
                                         payload={"x": object()}), InvalidInputError, "payload"),
    ]
    for bad_call, error, field in bad_calls:
        with pytest.raises(error) as caught, db.transaction() as tx:
            bad_call(tx)
        assert caught.value.field == field  # type: ignore[attr-defined]
    assert count(db, "cron_jobs") == 1
    with db.transaction() as tx:
        assert cron.get_cron_job(tx, globex, their_job.id).enabled is True


def test_a_slot_recorded_twice_is_a_conflict_naming_the_job_and_the_claim_writes_nothing(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    agent = new_agent(db, acme, "a")
    with db.transaction() as tx:
        first, second = (cron.create_cron_job(tx, acme, agent.id, created_by=ALICE, schedule="every 1h")
                         for _ in range(2))
    assert first.next_run_at is not None and second.next_run_at is not None
    with db.transaction() as tx:
        cron.start_manual_run(tx, acme, second.id, at=from_utc_text(second.next_run_at))
    with pytest.raises(ConflictError) as twice, db.transaction() as tx:
        cron.start_manual_run(tx, acme, second.id, at=from_utc_text(second.next_run_at))
    assert (twice.value.field, twice.value.value) == ("job_id", second.id)
    assert str(twice.value) == f"cron job {second.id} already has a run due at {second.next_run_at}"
    due = from_utc_text(max(first.next_run_at, second.next_run_at))
    with pytest.raises(ConflictError, match=r"one of 2 cron jobs .* already has a run"), db.transaction() as tx:
        cron.claim_due(tx, due, limit=10)  # the second's slot is taken: the batch is refused whole
    assert count(db, "cron_runs") == 1
    with db.transaction(write=False) as tx:
        assert [cron.get_cron_job(tx, acme, j.id).next_run_at for j in (first, second)] == [
            first.next_run_at, second.next_run_at]


# -- config grants ----------------------------------------------------------------------------------------
def test_grant_find_list_revoke(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    agent = new_agent(db, acme, "bot")
    with db.transaction() as tx:
        assert permissions.find_grant(tx, acme, agent.id, GROUP, "file_writer", ALICE) is None
        granted = permissions.grant(tx, acme, agent.id, chat_scope=GROUP, config_type="file_writer",
                                    sender_id=ALICE, allow=True, granted_by=BOB)
        denied = permissions.grant(tx, acme, agent.id, chat_scope=GROUP, config_type="cron", sender_id=ALICE,
                                   allow=False)
    assert is_canonical_id(granted.id, "agent-config-permission")
    assert (granted.chat_scope, granted.sender_id, granted.allow, granted.granted_by) == (GROUP, ALICE, True, BOB)
    with db.transaction() as tx:
        assert permissions.find_grant(tx, acme, agent.id, GROUP, "file_writer", ALICE) is True
        assert permissions.find_grant(tx, acme, agent.id, GROUP, "cron", ALICE) is False
        assert permissions.find_grant(tx, acme, agent.id, GROUP, "file_writer", BOB) is None  # another actor
        assert permissions.find_grant(tx, acme, agent.id, "group:telegram:-1009", "file_writer", ALICE) is None
        assert permissions.find_grant(tx, acme, agent.id, GROUP, "context_file", ALICE) is None
        assert [g.config_type for g in permissions.list_grants(tx, acme, agent.id)] == ["cron", "file_writer"]
        # Granting again replaces allow/granted_by on the same row.
        again = permissions.grant(tx, acme, agent.id, chat_scope=GROUP, config_type="file_writer", sender_id=ALICE,
                                  allow=False, granted_by=None)
        assert again.id == granted.id and again.allow is False and again.granted_by is None
        assert permissions.find_grant(tx, acme, agent.id, GROUP, "file_writer", ALICE) is False
        permissions.revoke(tx, acme, agent.id, chat_scope=GROUP, config_type="file_writer", sender_id=ALICE)
        assert permissions.find_grant(tx, acme, agent.id, GROUP, "file_writer", ALICE) is None
        with pytest.raises(NotFoundError, match="grant"):
            permissions.revoke(tx, acme, agent.id, chat_scope=GROUP, config_type="file_writer", sender_id=ALICE)
        permissions.delete_grant(tx, acme, denied.id)
    assert count(db, "agent_config_permissions") == 0


def test_grants_are_tenant_scoped(db: Database) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    mine, theirs = new_agent(db, acme, "bot"), new_agent(db, globex, "bot")
    with db.transaction() as tx:
        their_grant = permissions.grant(tx, globex, theirs.id, chat_scope=GROUP, config_type="file_writer",
                                        sender_id=ALICE, allow=True)
        # Another tenant's grant does not answer for this tenant (not even for its own agent ID).
        assert permissions.find_grant(tx, acme, theirs.id, GROUP, "file_writer", ALICE) is None
        assert permissions.find_grant(tx, acme, mine.id, GROUP, "file_writer", ALICE) is None
    not_found_like_missing(db, "agent", "agent", lambda tx, ref: permissions.grant(
        tx, acme, ref, chat_scope=GROUP, config_type="file_writer", sender_id=ALICE, allow=True), theirs.id)
    not_found_like_missing(db, "agent", "agent", lambda tx, ref: permissions.list_grants(tx, acme, ref), theirs.id)
    not_found_like_missing(db, "grant", "agent-config-permission",
                           lambda tx, ref: permissions.delete_grant(tx, acme, ref), their_grant.id)
    with pytest.raises(NotFoundError), db.transaction() as tx:
        permissions.revoke(tx, acme, theirs.id, chat_scope=GROUP, config_type="file_writer", sender_id=ALICE)
    assert count(db, "agent_config_permissions") == 1
    with db.transaction() as tx:
        assert permissions.find_grant(tx, globex, theirs.id, GROUP, "file_writer", ALICE) is True


@pytest.mark.parametrize(("kwargs", "error", "field"), [
    ({"agent_id": "bot"}, InvalidIdError, "agent_id"),
    ({"chat_scope": ""}, InvalidInputError, "chat_scope"),
    ({"chat_scope": ALICE}, InvalidInputError, "chat_scope"),  # an actor where the group scope belongs
    ({"sender_id": GROUP}, InvalidInputError, "sender_id"),  # the group scope where the actor belongs
    ({"sender_id": ""}, InvalidInputError, "sender_id"),
    ({"sender_id": "10\x0001"}, InvalidInputError, "sender_id"),
    ({"config_type": "admin"}, InvalidInputError, "config_type"),
    ({"allow": "yes"}, InvalidInputError, "allow"),
    ({"granted_by": GROUP}, InvalidInputError, "granted_by"),
])
def test_grant_arguments_are_validated_before_sql(db: Database, kwargs: dict[str, Any], error: type[Exception],
                                                  field: str) -> None:
    acme = make_tenant(db, "acme").scope
    agent = new_agent(db, acme, "bot")
    arguments: dict[str, Any] = {"agent_id": agent.id, "chat_scope": GROUP, "config_type": "file_writer",
                                 "sender_id": ALICE, "allow": True, "granted_by": BOB, **kwargs}
    agent_id = arguments.pop("agent_id")
    with pytest.raises(error) as caught, db.transaction() as tx:
        permissions.grant(tx, acme, agent_id, **arguments)
    assert caught.value.field == field  # type: ignore[attr-defined]
    assert count(db, "agent_config_permissions") == 0
    if "allow" not in kwargs and "granted_by" not in kwargs:
        with pytest.raises(error), db.transaction() as tx:
            permissions.find_grant(tx, acme, agent_id, arguments["chat_scope"], arguments["config_type"],
                                   arguments["sender_id"])


def test_concurrent_first_grants_never_duplicate(db: Database) -> None:
    # SQLite serializes writers (the second updates the first's row); on PostgreSQL the second insert waits on
    # the unique index and, once the first commits, reports a ConflictError the caller can retry.
    acme = make_tenant(db, "acme").scope
    agent = new_agent(db, acme, "bot")
    outcome: list[object] = []

    def second() -> None:
        try:
            with db.transaction() as tx:
                outcome.append(permissions.grant(tx, acme, agent.id, chat_scope=GROUP, config_type="cron",
                                                 sender_id=ALICE, allow=False))
        except BaseException as error:
            outcome.append(error)

    with db.transaction() as tx:
        first = permissions.grant(tx, acme, agent.id, chat_scope=GROUP, config_type="cron", sender_id=ALICE,
                                  allow=True)
        thread = threading.Thread(target=second)
        thread.start()
        time.sleep(0.3)
    thread.join(timeout=10)
    assert len(outcome) == 1 and count(db, "agent_config_permissions") == 1
    if db.dialect == "sqlite":
        assert isinstance(outcome[0], permissions.ConfigGrant) and outcome[0].id == first.id
    else:
        assert isinstance(outcome[0], ConflictError) and outcome[0].field == "sender_id"
