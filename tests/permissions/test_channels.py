"""Every row of the group-behaviour table: the SCOPE (whose memory), SENDER (who spoke) and ACTOR (whose
permissions) each channel produces, in direct messages and group chats."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from agentfy.identity import InvalidAgentKeyError, InvalidIdError
from agentfy.identity.context import RequestContext, bind
from agentfy.ids import format_id
from agentfy.permissions import discord_context, http_context, new_context, system_context, telegram_context

TENANT = format_id("org")
AGENT = format_id("agent")

# (row of the table, context, expected user_id, sender_id, actor_id)
BEHAVIOR_TABLE: list[tuple[str, Callable[[], RequestContext], str | None, str | None, str | None]] = [
    ("Telegram DM", lambda: telegram_context(1001, 1001, is_group=False), "1001", "1001", "1001"),
    ("Telegram group", lambda: telegram_context(-100123, 1001, is_group=True),
     "group:telegram:-100123", "1001", "1001"),
    ("Discord DM", lambda: discord_context(None, "80351110224678912"),
     "80351110224678912", "80351110224678912", "80351110224678912"),
    ("Discord guild", lambda: discord_context("41771983423143937", "80351110224678912"),
     "guild:41771983423143937:user:80351110224678912", "80351110224678912", "80351110224678912"),
    ("HTTP API", lambda: http_context("user-42"), "user-42", None, "user-42"),
    # Cron / subagent system context: scope inherited or empty, sender empty or propagated;
    # the actor is the sender if set, else the scope.
    ("system: cron-direct (nothing inherited)", system_context, None, None, None),
    ("system: inherited group scope, propagated sender",
     lambda: system_context(user_id="group:telegram:-100123", sender_id="1001"), "group:telegram:-100123", "1001",
     "1001"),
    ("system: inherited group scope, no sender",
     lambda: system_context(user_id="group:telegram:-100123"), "group:telegram:-100123", None,
     "group:telegram:-100123"),
    ("system: inherited DM scope, no sender", lambda: system_context(user_id="1001"), "1001", None, "1001"),
    ("system: no scope, propagated sender", lambda: system_context(sender_id="1001"), None, "1001", "1001"),
]


@pytest.mark.parametrize(("row", "build", "user_id", "sender_id", "actor_id"), BEHAVIOR_TABLE,
                         ids=[row[0] for row in BEHAVIOR_TABLE])
def test_group_behavior_table(row: str, build: Callable[[], RequestContext], user_id: str | None,
                              sender_id: str | None, actor_id: str | None) -> None:
    ctx = build()
    assert (ctx.user_id, ctx.sender_id, ctx.actor_id) == (user_id, sender_id, actor_id), row


def test_the_actor_is_never_the_group_when_a_sender_is_there() -> None:
    for ctx in (telegram_context(-100123, 1001, is_group=True), discord_context(7, 1001)):
        assert ctx.actor_id == "1001" and ctx.user_id != ctx.actor_id


def test_constructors_carry_the_tenant_agent_and_role_validated() -> None:
    ctx = telegram_context(-100123, 1001, is_group=True, tenant_id=TENANT, agent_id=AGENT, agent_key="bot",
                           role="member")
    assert (ctx.tenant_id, ctx.agent_id, ctx.agent_key, ctx.role) == (TENANT, AGENT, "bot", "member")
    with pytest.raises(InvalidIdError):
        http_context("u", tenant_id="acme")  # a slug is not a tenant
    with pytest.raises(InvalidIdError):
        discord_context(None, 1, agent_id="bot")  # a key is not an agent ID
    with pytest.raises(InvalidAgentKeyError):
        system_context(agent_key=AGENT)  # an ID is not a key
    with pytest.raises(ValueError, match="role"):
        telegram_context(1, 1, is_group=False, role="superuser")


def test_constructors_inherit_nothing_from_the_current_context() -> None:
    with bind(tenant_id=TENANT, sender_id="1002", role="owner"):
        ctx = http_context("user-42")
    assert (ctx.tenant_id, ctx.sender_id, ctx.role) == (None, None, None)
    assert new_context(user_id="x") == RequestContext(user_id="x")


@pytest.mark.parametrize("build", [
    lambda: telegram_context("abc", 1, is_group=True),
    lambda: telegram_context(-1, -5, is_group=True),  # Telegram user IDs are positive
    lambda: telegram_context(True, 1, is_group=True),
    lambda: discord_context("-1", 1),
    lambda: discord_context(1, "12\n3"),
    lambda: http_context(""),
    lambda: http_context("group:telegram:-1"),  # a scope where the person belongs
    lambda: http_context("u\x00"),
    lambda: system_context(sender_id="guild:1:user:2"),
    lambda: system_context(user_id="x" * 201),
])
def test_constructors_refuse_malformed_identities(build: Callable[[], RequestContext]) -> None:
    with pytest.raises(ValueError):
        build()
