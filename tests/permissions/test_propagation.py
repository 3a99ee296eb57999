"""The acting person through tool wrappers (#915): each of the four re-ingress paths, end to end on a real
store (both engines): allowed when the person is propagated, denied when the metadata is stripped."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from agentfy.identity import InvalidIdError
from agentfy.identity.context import RequestContext
from agentfy.permissions import (
    META_ORIGIN_SENDER_ID,
    DecisionCode,
    InboundMessage,
    RunRequest,
    check_cron_permission,
    check_file_writer_permission,
    context_for_run,
    delegate_announce,
    http_context,
    is_synthetic_sender,
    origin_sender_of,
    run_request_from_inbound,
    session_send,
    subagent_announce,
    system_context,
    teammate_dispatch,
    telegram_context,
)
from tests.permissions.helpers import ALICE, BOB, GROUP, OTHER_GROUP, World

Wrapper = Callable[[RequestContext], InboundMessage]
WRAPPERS: dict[str, tuple[Wrapper, str]] = {
    "subagent announce": (lambda o: subagent_announce(o, task_id="task-7", content="done", channel="telegram"),
                          "subagent:task-7"),
    "delegate announce": (lambda o: delegate_announce(o, task_id="task-8", content="done", channel="telegram"),
                          "delegate:task-8"),
    "teammate dispatch": (lambda o: teammate_dispatch(o, team_task_id="tt-1", content="do it", channel="telegram"),
                          "teammate:tt-1"),
    "session send": (lambda o: session_send(o, content="hello", channel="telegram"), "session_send_tool"),
}
PATHS = pytest.mark.parametrize("path", list(WRAPPERS))


def _human_in_group(world: World, sender: str = ALICE) -> RequestContext:
    return telegram_context(-100123, sender, is_group=True, **world.ids)


def _next_turn(world: World, message: InboundMessage, role: str | None = None) -> RequestContext:
    run = run_request_from_inbound(message)
    return context_for_run(run, world.scope.tenant_id, world.agent.id, world.agent.agent_key, role=role)


@PATHS
def test_the_re_ingressed_turn_sees_the_human_and_is_allowed(world: World, path: str) -> None:
    world.grant("file_writer", ALICE, True)
    origin = _human_in_group(world)
    assert check_file_writer_permission(world.db, origin, world.agent.id).allowed
    wrap, synthetic = WRAPPERS[path]

    message = wrap(origin)
    assert (message.sender_id, message.user_id, message.channel) == (synthetic, GROUP, "telegram")
    assert is_synthetic_sender(message.sender_id)
    assert message.metadata == {META_ORIGIN_SENDER_ID: ALICE}

    run = run_request_from_inbound(message)
    assert (run.sender_id, run.user_id, run.relayed_by) == (ALICE, GROUP, synthetic)
    ctx = context_for_run(run, world.scope.tenant_id, world.agent.id, world.agent.agent_key)
    assert (ctx.sender_id, ctx.user_id, ctx.actor_id) == (ALICE, GROUP, ALICE)
    decision = check_file_writer_permission(world.db, ctx, world.agent.id)
    assert (decision.allowed, decision.code) == (True, DecisionCode.GRANTED)
    # cron falls back to the same file_writer grant on the re-ingressed turn
    assert check_cron_permission(world.db, ctx, world.agent.id).code is DecisionCode.GRANTED_BY_FILE_WRITER


@PATHS
def test_without_propagation_the_re_ingressed_turn_is_denied(world: World, path: str) -> None:
    world.grant("file_writer", ALICE, True)
    wrap, synthetic = WRAPPERS[path]
    stripped = replace(wrap(_human_in_group(world)), metadata={})

    ctx = _next_turn(world, stripped)
    assert (ctx.sender_id, ctx.user_id) == (synthetic, GROUP)  # the wrapper, not the human
    decision = check_file_writer_permission(world.db, ctx, world.agent.id)
    assert (decision.allowed, decision.code) == (False, DecisionCode.SYNTHETIC_SENDER)
    assert decision.how_to_get_access and META_ORIGIN_SENDER_ID in decision.how_to_get_access


@PATHS
def test_propagation_never_elevates_a_member_without_a_grant(world: World, path: str) -> None:
    world.grant("file_writer", ALICE, True)
    wrap, _ = WRAPPERS[path]
    ctx = _next_turn(world, wrap(_human_in_group(world, BOB)))
    assert ctx.sender_id == BOB
    decision = check_file_writer_permission(world.db, ctx, world.agent.id)
    assert (decision.allowed, decision.code) == (False, DecisionCode.NO_GRANT)
    assert f"sender ID {BOB}" in (decision.how_to_get_access or "")


@PATHS
def test_a_wrapper_from_a_system_context_without_a_person_propagates_nothing(world: World, path: str) -> None:
    world.grant("file_writer", ALICE, True)
    wrap, synthetic = WRAPPERS[path]
    message = wrap(system_context(user_id=GROUP, **world.ids))  # the actor falls back to the group scope
    assert message.metadata == {}
    ctx = _next_turn(world, message)
    assert ctx.sender_id == synthetic
    assert check_file_writer_permission(world.db, ctx, world.agent.id).code is DecisionCode.SYNTHETIC_SENDER


def test_propagation_survives_nested_wrappers(world: World) -> None:
    world.grant("file_writer", ALICE, True)
    first = _next_turn(world, subagent_announce(_human_in_group(world), task_id="t1", content="x",
                                                channel="telegram"))
    second = _next_turn(world, teammate_dispatch(first, team_task_id="tt", content="x", channel="telegram"))
    third = _next_turn(world, session_send(second, content="x", channel="telegram"))
    assert (third.sender_id, third.user_id) == (ALICE, GROUP)
    assert check_file_writer_permission(world.db, third, world.agent.id).allowed


def test_session_send_to_another_group_needs_that_groups_grant(world: World) -> None:
    world.grant("file_writer", ALICE, True)  # in GROUP only
    message = session_send(_human_in_group(world), content="x", channel="telegram", target_user_id=OTHER_GROUP)
    assert (message.user_id, message.metadata[META_ORIGIN_SENDER_ID]) == (OTHER_GROUP, ALICE)
    ctx = _next_turn(world, message)
    assert check_file_writer_permission(world.db, ctx, world.agent.id).code is DecisionCode.NO_GRANT
    world.grant("file_writer", ALICE, True, OTHER_GROUP)
    assert check_file_writer_permission(world.db, ctx, world.agent.id).code is DecisionCode.GRANTED


def test_the_role_is_resolved_by_the_gateway_never_taken_from_metadata(world: World) -> None:
    message = subagent_announce(_human_in_group(world), task_id="t1", content="x", channel="telegram")
    forged = replace(message, metadata={**message.metadata, "origin_role": "owner"})
    assert check_file_writer_permission(world.db, _next_turn(world, forged), world.agent.id).code \
        is DecisionCode.NO_GRANT
    admin_turn = _next_turn(world, message, role="admin")
    assert check_file_writer_permission(world.db, admin_turn, world.agent.id).code is DecisionCode.PRIVILEGED_ROLE


# -- trust rules of run_request_from_inbound -------------------------------------------------------------
def test_a_real_senders_message_keeps_its_sender_whatever_the_metadata_says() -> None:
    from_bob = InboundMessage("telegram", GROUP, BOB, "let me in", {META_ORIGIN_SENDER_ID: ALICE})
    run = run_request_from_inbound(from_bob)
    assert (run.sender_id, run.relayed_by) == (BOB, None)


@pytest.mark.parametrize("origin", ["", "teammate:x", "session_send_tool", GROUP, "guild:1:user:2", "10\n01",
                                    "1" * 201])
def test_an_origin_that_is_not_a_person_is_ignored(origin: str) -> None:
    message = InboundMessage("telegram", GROUP, "subagent:t1", "x", {META_ORIGIN_SENDER_ID: origin})
    run = run_request_from_inbound(message)
    assert (run.sender_id, run.relayed_by) == ("subagent:t1", "subagent:t1")


def test_an_inbound_message_without_sender_runs_without_sender() -> None:
    run = run_request_from_inbound(InboundMessage("http", None, "", "x"))
    assert run == RunRequest("http", None, None, "x")


def test_origin_sender_is_the_actor_when_it_is_a_person() -> None:
    assert origin_sender_of(telegram_context(-1, 5, is_group=True)) == "5"
    assert origin_sender_of(telegram_context(5, 5, is_group=False)) == "5"
    assert origin_sender_of(http_context("user-42")) == "user-42"  # HTTP: the actor falls back to the user
    assert origin_sender_of(system_context(user_id=GROUP)) is None  # the fallback would be the group
    assert origin_sender_of(system_context(user_id=GROUP, sender_id="ticker:system")) is None
    assert origin_sender_of(system_context()) is None


def test_the_originating_scope_is_kept_even_when_empty() -> None:
    message = delegate_announce(system_context(sender_id=ALICE), task_id="t", content="x", channel="system")
    assert (message.user_id, message.metadata) == (None, {META_ORIGIN_SENDER_ID: ALICE})


def test_inbound_metadata_is_copied() -> None:
    metadata = {META_ORIGIN_SENDER_ID: ALICE}
    message = InboundMessage("telegram", GROUP, "subagent:t", "x", metadata)
    metadata[META_ORIGIN_SENDER_ID] = BOB
    assert message.metadata[META_ORIGIN_SENDER_ID] == ALICE


@pytest.mark.parametrize("build", [
    lambda o: subagent_announce(o, task_id="", content="x", channel="telegram"),
    lambda o: delegate_announce(o, task_id="t\n1", content="x", channel="telegram"),
    lambda o: teammate_dispatch(o, team_task_id="t", content="x", channel=""),
    lambda o: session_send(o, content="x", channel="telegram", target_user_id=""),
])
def test_wrapper_identities_are_validated(build: Wrapper) -> None:
    with pytest.raises(ValueError):
        build(telegram_context(-1, 5, is_group=True))


def test_context_for_run_validates_and_sets_the_tool_agent_key(world: World) -> None:
    run = RunRequest("telegram", GROUP, ALICE, "x")
    ctx = context_for_run(run, world.scope.tenant_id, world.agent.id, "bot")
    assert (ctx.tenant_id, ctx.agent_id, ctx.agent_key, ctx.tool_agent_key, ctx.role) == (
        world.scope.tenant_id, world.agent.id, "bot", "bot", None)
    with pytest.raises(InvalidIdError):
        context_for_run(run, "acme", world.agent.id, "bot")
    with pytest.raises(InvalidIdError):
        context_for_run(run, world.scope.tenant_id, "bot", "bot")
