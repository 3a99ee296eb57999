"""Ownership and audit use the ACTOR; memory and files use the SCOPE; skills accept the actor or, for rows
written before #915, the scope."""

from __future__ import annotations

import pytest

from agentfy.identity.context import RequestContext
from agentfy.permissions import (
    NoActorError,
    audit_actor,
    can_manage_skill_in_context,
    discord_context,
    file_scope,
    http_context,
    memory_scope,
    owner_for_new_row,
    system_context,
    telegram_context,
)
from agentfy.store.db import now
from agentfy.store.repos import skills
from tests.permissions.helpers import ALICE, BOB, GROUP, OTHER_GROUP, World

GROUP_CTX = telegram_context(-100123, ALICE, is_group=True)


@pytest.mark.parametrize(("ctx", "actor", "scope"), [
    (GROUP_CTX, ALICE, GROUP),
    (telegram_context(ALICE, ALICE, is_group=False), ALICE, ALICE),
    (discord_context(42, ALICE), ALICE, "guild:42:user:1001"),
    (discord_context(None, ALICE), ALICE, ALICE),
    (http_context("user-42"), "user-42", "user-42"),
    (system_context(user_id=GROUP, sender_id=ALICE), ALICE, GROUP),  # a propagated sender
], ids=["telegram group", "telegram DM", "discord guild", "discord DM", "HTTP", "system, propagated"])
def test_ownership_and_audit_use_the_actor_memory_and_files_the_scope(ctx: RequestContext, actor: str,
                                                                      scope: str) -> None:
    assert owner_for_new_row(ctx) == actor
    assert audit_actor(ctx) == actor
    assert memory_scope(ctx) == scope
    assert file_scope(ctx) == scope


def test_a_skill_published_in_a_group_belongs_to_the_person(world: World) -> None:
    with world.db.transaction() as tx:
        skill = skills.create_skill(tx, world.scope, owner_id=owner_for_new_row(GROUP_CTX), name="s", content="x")
    assert skill.owner_id == ALICE


@pytest.mark.parametrize("ctx", [
    system_context(),  # no actor at all
    system_context(user_id=GROUP),  # the actor would fall back to the group scope
    system_context(user_id=GROUP, sender_id="subagent:t1"),  # a wrapper that did not propagate
    RequestContext(user_id=GROUP, sender_id="session_send_tool"),
])
def test_a_row_is_never_owned_by_a_group_a_wrapper_or_nobody(ctx: RequestContext) -> None:
    with pytest.raises(NoActorError, match="origin_sender_id"):
        owner_for_new_row(ctx)


def test_audit_records_whatever_acted_including_an_unpropagated_wrapper() -> None:
    assert audit_actor(system_context(user_id=GROUP, sender_id="subagent:t1")) == "subagent:t1"
    assert audit_actor(system_context(user_id=GROUP)) == GROUP
    assert audit_actor(system_context()) is None
    assert memory_scope(system_context()) is None and file_scope(system_context()) is None


def test_skill_management_accepts_the_actor_or_the_legacy_scope(world: World) -> None:
    with world.db.transaction() as tx:
        new = skills.create_skill(tx, world.scope, owner_id=ALICE, name="new", content="x")
        # A row written before #915: its owner is the group scope (raw insert; the repository refuses it now).
        legacy_id = tx.db.mint("skill")
        tx.execute("INSERT INTO skills (id, tenant_id, owner_id, name, content, created_at) "
                   "VALUES (:id, :tenant_id, :owner, 'legacy', 'x', :now)",
                   {"id": legacy_id, "tenant_id": world.scope.tenant_id, "owner": GROUP, "now": now()})
        legacy = skills.get_skill(tx, world.scope, legacy_id)

    alice_in_group, bob_in_group = GROUP_CTX, telegram_context(-100123, BOB, is_group=True)
    alice_in_dm = telegram_context(ALICE, ALICE, is_group=False)
    alice_elsewhere = telegram_context(-100999, ALICE, is_group=True)
    # New rows: the person, from any chat; not another member of the group.
    assert can_manage_skill_in_context(new, alice_in_group)
    assert can_manage_skill_in_context(new, alice_in_dm)
    assert can_manage_skill_in_context(new, alice_elsewhere)
    assert not can_manage_skill_in_context(new, bob_in_group)
    assert not can_manage_skill_in_context(new, system_context(user_id=GROUP))
    # Legacy rows: anyone acting in the scope they were stored under, not outside it.
    assert can_manage_skill_in_context(legacy, alice_in_group)
    assert can_manage_skill_in_context(legacy, bob_in_group)
    assert not can_manage_skill_in_context(legacy, alice_in_dm)
    assert not can_manage_skill_in_context(legacy, alice_elsewhere)
    assert alice_elsewhere.user_id == OTHER_GROUP
    assert not can_manage_skill_in_context(new, system_context())
