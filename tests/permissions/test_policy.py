"""Every rule of the group write policy, for all three checks, against a real store on both engines."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

import pytest

from agentfy.identity import InvalidIdError, OrgId
from agentfy.identity.context import RequestContext
from agentfy.ids import format_id
from agentfy.permissions import (
    SESSION_SEND_SENDER,
    SYNTHETIC_SENDER_PREFIXES,
    Decision,
    DecisionCode,
    PermissionSettings,
    check_context_file_permission,
    check_cron_permission,
    check_file_writer_permission,
    check_permission,
    discord_context,
    http_context,
    system_context,
    telegram_context,
)
from agentfy.store.db import Database, Tx
from agentfy.store.errors import NotFoundError, StoreError
from agentfy.store.repos import permissions as grants_repo
from tests.helpers.tenants import make_tenant
from tests.permissions.helpers import ALICE, BOB, GROUP, GUILD, OTHER_GROUP, World
from tests.store.helpers import new_agent

Check = Callable[..., Decision]
CHECKS: dict[str, Check] = {
    "file_writer": check_file_writer_permission,
    "cron": check_cron_permission,
    "context_file": check_context_file_permission,
}
SELF = "<the checked type>"
C = DecisionCode


def group(w: World, sender: int | str = ALICE, role: str | None = None) -> RequestContext:
    return telegram_context(-100123, sender, is_group=True, role=role, **w.ids)


@dataclass(frozen=True)
class Case:
    id: str
    ctx: Callable[[World], RequestContext]
    expected: tuple[bool, DecisionCode]
    grants: tuple[tuple[str, str, bool, str], ...] = ()  # (config type or SELF, sender, allow, chat scope)


# The rules that read the same for the three checks (fallback rules: FALLBACK_CASES below).
CASES: list[Case] = [
    # owners, admins and operators of the tenant need no grant (even against an explicit deny)
    *(Case(f"role {role}", partial(group, role=role), (True, C.PRIVILEGED_ROLE))
      for role in ("owner", "admin", "operator")),
    Case("role owner beats an explicit deny", lambda w: group(w, role="owner"), (True, C.PRIVILEGED_ROLE),
         ((SELF, ALICE, False, GROUP),)),
    Case("role member, no grant", lambda w: group(w, role="member"), (False, C.NO_GRANT)),
    Case("role member, allow grant", lambda w: group(w, role="member"), (True, C.GRANTED),
         ((SELF, ALICE, True, GROUP),)),
    # a real sender in a group: the grant decides
    Case("allow grant", group, (True, C.GRANTED), ((SELF, ALICE, True, GROUP),)),
    Case("explicit deny grant", group, (False, C.DENIED_BY_GRANT), ((SELF, ALICE, False, GROUP),)),
    Case("no grant", group, (False, C.NO_GRANT)),
    Case("grant of another member only", group, (False, C.NO_GRANT), ((SELF, BOB, True, GROUP),)),
    Case("grant in another group only", group, (False, C.NO_GRANT), ((SELF, ALICE, True, OTHER_GROUP),)),
    Case("Discord guild, allow grant", lambda w: discord_context(42, ALICE, **w.ids), (True, C.GRANTED),
         ((SELF, ALICE, True, GUILD),)),
    Case("Discord guild, no grant", lambda w: discord_context(42, ALICE, **w.ids), (False, C.NO_GRANT)),
    # no person to check
    Case("empty sender in a group", lambda w: system_context(user_id=GROUP, **w.ids), (False, C.EMPTY_SENDER)),
    Case("empty sender in a guild, role member", lambda w: system_context(user_id=GUILD, role="member", **w.ids),
         (False, C.EMPTY_SENDER)),
    Case("sender shaped like a chat scope", lambda w: RequestContext(
        w.scope.tenant_id, w.agent.id, w.agent.agent_key, user_id=GROUP, sender_id=OTHER_GROUP),
        (False, C.INVALID_IDENTITY)),
    Case("sender with a control character", lambda w: RequestContext(
        w.scope.tenant_id, w.agent.id, w.agent.agent_key, user_id=GROUP, sender_id="10\n01"),
        (False, C.INVALID_IDENTITY)),
    # missing tenant: denied before anything else, whatever the role or chat
    Case("missing tenant in a group, even for an owner", lambda w: telegram_context(
        -100123, ALICE, is_group=True, role="owner", agent_id=w.agent.id), (False, C.MISSING_TENANT),
        ((SELF, ALICE, True, GROUP),)),
    Case("missing tenant in a DM", lambda w: telegram_context(ALICE, ALICE, is_group=False),
         (False, C.MISSING_TENANT)),
    # outside group and guild chats no per-user gate applies (grants there are irrelevant)
    Case("Telegram DM", lambda w: telegram_context(ALICE, ALICE, is_group=False, **w.ids), (True, C.OUTSIDE_GROUP)),
    Case("Telegram DM with a deny in a group", lambda w: telegram_context(ALICE, ALICE, is_group=False, **w.ids),
         (True, C.OUTSIDE_GROUP), ((SELF, ALICE, False, GROUP),)),
    Case("Discord DM", lambda w: discord_context(None, ALICE, **w.ids), (True, C.OUTSIDE_GROUP)),
    Case("HTTP API", lambda w: http_context("user-42", **w.ids), (True, C.OUTSIDE_GROUP)),
    Case("cron-direct (no scope, no sender)", lambda w: system_context(**w.ids), (True, C.OUTSIDE_GROUP)),
    Case("system context with a DM scope", lambda w: system_context(user_id=ALICE, **w.ids),
         (True, C.OUTSIDE_GROUP)),
]

SYNTHETIC_SENDERS = [f"{prefix}x-1" for prefix in SYNTHETIC_SENDER_PREFIXES] + [SESSION_SEND_SENDER]

# cron and context_file fall back to file_writer; file_writer falls back to nothing.
FALLBACK_CASES: list[tuple[str, tuple[tuple[str, bool], ...], dict[str, tuple[bool, DecisionCode]]]] = [
    ("file_writer allow only", (("file_writer", True),),
     {"file_writer": (True, C.GRANTED), "cron": (True, C.GRANTED_BY_FILE_WRITER),
      "context_file": (True, C.GRANTED_BY_FILE_WRITER)}),
    ("file_writer deny only", (("file_writer", False),),
     {"file_writer": (False, C.DENIED_BY_GRANT), "cron": (False, C.DENIED_BY_FILE_WRITER_GRANT),
      "context_file": (False, C.DENIED_BY_FILE_WRITER_GRANT)}),
    ("own deny wins over a file_writer allow", (("cron", False), ("context_file", False), ("file_writer", True)),
     {"file_writer": (True, C.GRANTED), "cron": (False, C.DENIED_BY_GRANT),
      "context_file": (False, C.DENIED_BY_GRANT)}),
    ("own allow wins over a file_writer deny", (("cron", True), ("context_file", True), ("file_writer", False)),
     {"file_writer": (False, C.DENIED_BY_GRANT), "cron": (True, C.GRANTED), "context_file": (True, C.GRANTED)}),
    ("cron allow only", (("cron", True),),
     {"file_writer": (False, C.NO_GRANT), "cron": (True, C.GRANTED), "context_file": (False, C.NO_GRANT)}),
    ("context_file allow only", (("context_file", True),),
     {"file_writer": (False, C.NO_GRANT), "cron": (False, C.NO_GRANT), "context_file": (True, C.GRANTED)}),
]


def _assert_decision(decision: Decision, config_type: str, expected: tuple[bool, DecisionCode]) -> None:
    assert (decision.allowed, decision.code) == expected, decision.reason
    assert decision.config_type == config_type and decision.reason
    if decision.allowed:
        assert decision.how_to_get_access is None
    else:
        assert decision.how_to_get_access  # every denial says how to get access


@pytest.mark.parametrize("config_type", list(CHECKS))
@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_policy_rules(world: World, case: Case, config_type: str) -> None:
    for grant_type, sender, allow, chat in case.grants:
        world.grant(config_type if grant_type == SELF else grant_type, sender, allow, chat)
    decision = CHECKS[config_type](world.db, case.ctx(world), world.agent.id)
    _assert_decision(decision, config_type, case.expected)


@pytest.mark.parametrize("config_type", list(CHECKS))
@pytest.mark.parametrize("sender", SYNTHETIC_SENDERS)
def test_synthetic_senders_are_denied_in_groups_even_with_a_grant_in_their_name(world: World, sender: str,
                                                                                config_type: str) -> None:
    world.grant(config_type, sender, True)  # a grant (mistakenly) naming the wrapper is never consulted
    world.grant("file_writer", sender, True)
    in_group = system_context(user_id=GROUP, sender_id=sender, **world.ids)  # a re-ingressed wrapper turn
    decision = CHECKS[config_type](world.db, in_group, world.agent.id)
    _assert_decision(decision, config_type, (False, C.SYNTHETIC_SENDER))
    assert "origin_sender_id" in (decision.how_to_get_access or "")
    # ... while in a DM the wrapper is not gated
    dm = system_context(user_id=ALICE, sender_id=sender, **world.ids)
    _assert_decision(CHECKS[config_type](world.db, dm, world.agent.id), config_type, (True, C.OUTSIDE_GROUP))


@pytest.mark.parametrize("config_type", list(CHECKS))
@pytest.mark.parametrize(("grants", "expected"), [(g, e) for _, g, e in FALLBACK_CASES],
                         ids=[name for name, _, _ in FALLBACK_CASES])
def test_cron_and_context_files_fall_back_to_file_writer(world: World, grants: tuple[tuple[str, bool], ...],
                                                         expected: dict[str, tuple[bool, DecisionCode]],
                                                         config_type: str) -> None:
    for grant_type, allow in grants:
        world.grant(grant_type, ALICE, allow)
    _assert_decision(CHECKS[config_type](world.db, group(world), world.agent.id), config_type,
                     expected[config_type])


@pytest.mark.parametrize("config_type", list(CHECKS))
def test_grants_of_another_tenant_do_not_count(db: Database, world: World, config_type: str) -> None:
    globex = make_tenant(db, "globex").scope
    their_bot = new_agent(db, globex, "bot")
    with db.transaction() as tx:
        for grant_type in CHECKS:
            grants_repo.grant(tx, globex, their_bot.id, chat_scope=GROUP, config_type=grant_type, sender_id=ALICE,
                              allow=True)
    ctx = group(world)
    _assert_decision(CHECKS[config_type](db, ctx, world.agent.id), config_type, (False, C.NO_GRANT))
    # Asking about their agent from our tenant does not find their grant either.
    _assert_decision(CHECKS[config_type](db, ctx, their_bot.id), config_type, (False, C.NO_GRANT))


# -- how to get access ---------------------------------------------------------------------------------
@pytest.mark.parametrize("config_type", list(CHECKS))
def test_no_grant_message_says_exactly_what_to_ask_for(world: World, config_type: str) -> None:
    decision = CHECKS[config_type](world.db, group(world), world.agent.id)
    message = decision.how_to_get_access or ""
    assert message.startswith(f"Ask an owner or admin of this organization to grant you {config_type}")
    for part in (GROUP, f"sender ID {ALICE}", f"config type {config_type}", world.agent.id, "agent bot"):
        assert part in message
    if config_type != "file_writer":
        assert f"or file_writer, which {config_type} falls back to" in message


def test_deny_messages_name_the_way_out(world: World) -> None:
    world.grant("file_writer", ALICE, False)
    world.grant("cron", BOB, False)
    denied = check_file_writer_permission(world.db, group(world), world.agent.id).how_to_get_access or ""
    assert "explicitly denied you file_writer" in denied and "granting again replaces the deny" in denied
    fallback = check_context_file_permission(world.db, group(world), world.agent.id).how_to_get_access or ""
    assert "explicitly denied you file_writer" in fallback and "grant you context_file" in fallback
    own = check_cron_permission(world.db, group(world, BOB), world.agent.id).how_to_get_access or ""
    assert "grant you cron for" in own and "falls back" not in own  # a file_writer grant would not help
    empty = check_cron_permission(world.db, system_context(user_id=GROUP, **world.ids),
                                  world.agent.id).how_to_get_access or ""
    assert "without an individual sender" in empty and "direct message" in empty
    missing = check_cron_permission(world.db, RequestContext(user_id=GROUP, sender_id=ALICE),
                                    world.agent.id).how_to_get_access or ""
    assert "outside any organization" in missing


# -- store errors --------------------------------------------------------------------------------------
class FailingDatabase:
    """A database whose every transaction fails (a degraded store), counting attempts."""

    def __init__(self, error: BaseException | None = None) -> None:
        self.error = error or StoreError("the database failed to run the statement")
        self.attempts = 0

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[Tx]:
        self.attempts += 1
        raise self.error
        yield  # pragma: no cover


@pytest.mark.parametrize("config_type", list(CHECKS))
def test_store_error_denies_by_default_and_logs_a_warning(config_type: str,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    tenant, agent = format_id("org"), format_id("agent")
    ctx = telegram_context(-100123, ALICE, is_group=True, tenant_id=tenant, agent_id=agent, agent_key="bot")
    store = FailingDatabase()
    with caplog.at_level(logging.WARNING, logger="agentfy.permissions"):
        decision = CHECKS[config_type](store, ctx, agent)
    _assert_decision(decision, config_type, (False, C.STORE_ERROR_FAIL_CLOSED))
    assert "try again" in (decision.how_to_get_access or "").lower()
    assert store.attempts == 1
    [record] = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert record.__dict__["fail_open"] is False and record.__dict__["decision"] == "store_error_fail_closed"
    assert (record.__dict__["tenant_id"], record.__dict__["agent"], record.__dict__["agent_id"]) == (
        tenant, "bot", agent)


@pytest.mark.parametrize("config_type", list(CHECKS))
def test_store_error_allows_when_fail_open_is_set_and_logs_a_warning(config_type: str,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    agent = format_id("agent")
    ctx = telegram_context(-100123, ALICE, is_group=True, tenant_id=format_id("org"), agent_id=agent)
    with caplog.at_level(logging.WARNING, logger="agentfy.permissions"):
        decision = CHECKS[config_type](FailingDatabase(), ctx, agent,
                                       settings=PermissionSettings(fail_open_on_store_error=True))
    _assert_decision(decision, config_type, (True, C.STORE_ERROR_FAIL_OPEN))
    [record] = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert record.__dict__["fail_open"] is True and record.__dict__["allowed"] is True
    assert "fail-open" in record.getMessage()


@pytest.mark.parametrize("fail_open", [False, True])
def test_store_error_in_the_middle_of_the_look_up_on_a_real_store(world: World, monkeypatch: pytest.MonkeyPatch,
                                                                  fail_open: bool) -> None:
    # The cron look-up finds no cron grant, then the file_writer fallback look-up fails.
    real = grants_repo.find_grant

    def flaky(tx: Tx, scope: Any, agent_id: str, chat: str, config_type: str, sender: str) -> bool | None:
        if config_type == "file_writer":
            raise StoreError("the database failed to run the statement")
        return real(tx, scope, agent_id, chat, config_type, sender)

    monkeypatch.setattr(grants_repo, "find_grant", flaky)
    decision = check_cron_permission(world.db, group(world), world.agent.id,
                                     settings=PermissionSettings(fail_open_on_store_error=fail_open))
    expected = (True, C.STORE_ERROR_FAIL_OPEN) if fail_open else (False, C.STORE_ERROR_FAIL_CLOSED)
    _assert_decision(decision, "cron", expected)
    # The read transaction was rolled back and its connection is reusable.
    monkeypatch.setattr(grants_repo, "find_grant", real)
    world.grant("cron", ALICE, True)
    _assert_decision(check_cron_permission(world.db, group(world), world.agent.id), "cron", (True, C.GRANTED))


@pytest.mark.parametrize("fail_open", [False, True])
def test_an_unreachable_database_counts_as_a_store_error(fail_open: bool) -> None:
    # Nothing listens on port 1: the connection fails before any statement (not a StoreError today).
    unreachable = Database("postgresql+psycopg://agentfy@127.0.0.1:1/agentfy?connect_timeout=2")
    agent = format_id("agent")
    ctx = telegram_context(-100123, ALICE, is_group=True, tenant_id=format_id("org"), agent_id=agent)
    try:
        decision = check_file_writer_permission(unreachable, ctx, agent,
                                                settings=PermissionSettings(fail_open_on_store_error=fail_open))
    finally:
        unreachable.dispose()
    assert decision.allowed is fail_open
    assert decision.code is (C.STORE_ERROR_FAIL_OPEN if fail_open else C.STORE_ERROR_FAIL_CLOSED)


@pytest.mark.parametrize("ctx", [
    telegram_context(ALICE, ALICE, is_group=False, tenant_id=format_id("org")),
    telegram_context(-100123, ALICE, is_group=True, tenant_id=format_id("org"), role="admin"),
    telegram_context(-100123, ALICE, is_group=True),  # no tenant
    system_context(user_id=GROUP, tenant_id=format_id("org")),
    RequestContext(OrgId(format_id("org")), user_id=GROUP, sender_id="teammate:t1"),
], ids=["DM", "admin", "no tenant", "empty sender", "synthetic sender"])
def test_rules_that_need_no_grant_never_touch_the_store(ctx: RequestContext) -> None:
    store = FailingDatabase()
    for check in CHECKS.values():
        decision = check(store, ctx, format_id("agent"), settings=PermissionSettings(fail_open_on_store_error=True))
        assert decision.code is not C.STORE_ERROR_FAIL_OPEN
    assert store.attempts == 0


def test_an_invalid_identity_is_denied_even_with_fail_open(world: World) -> None:
    ctx = RequestContext(world.scope.tenant_id, world.agent.id, user_id=GROUP, sender_id="guild:1:user:2")
    decision = check_file_writer_permission(world.db, ctx, world.agent.id,
                                            settings=PermissionSettings(fail_open_on_store_error=True))
    _assert_decision(decision, "file_writer", (False, C.INVALID_IDENTITY))


def test_errors_that_are_not_store_errors_propagate() -> None:
    agent = format_id("agent")
    ctx = telegram_context(-100123, ALICE, is_group=True, tenant_id=format_id("org"), agent_id=agent)
    with pytest.raises(RuntimeError, match="bug"):
        check_file_writer_permission(FailingDatabase(RuntimeError("bug")), ctx, agent,
                                     settings=PermissionSettings(fail_open_on_store_error=True))


def test_not_found_is_a_store_error_like_any_other() -> None:
    agent = format_id("agent")
    ctx = telegram_context(-100123, ALICE, is_group=True, tenant_id=format_id("org"), agent_id=agent)
    decision = check_file_writer_permission(FailingDatabase(NotFoundError("grant", "x")), ctx, agent)
    assert decision.code is C.STORE_ERROR_FAIL_CLOSED


# -- contract of the checks ----------------------------------------------------------------------------
@pytest.mark.parametrize("bad", ["bot", "", pytest.param(format_id("team"), id="minted-team-id")])
def test_an_agent_id_that_is_not_one_is_a_caller_bug(world: World, bad: str) -> None:
    for check in CHECKS.values():
        with pytest.raises(InvalidIdError):
            check(world.db, group(world, role="owner"), bad)


def test_an_unknown_config_type_is_a_caller_bug(world: World) -> None:
    with pytest.raises(ValueError, match="config_type 'admin'"):
        check_permission(world.db, group(world, role="owner"), world.agent.id, "admin")


def test_a_decision_is_not_a_boolean(world: World) -> None:
    decision = check_file_writer_permission(world.db, group(world), world.agent.id)
    with pytest.raises(TypeError, match=r"decision\.allowed"):
        bool(decision)
    with pytest.raises(TypeError):
        if decision:  # the bug this guards against: a dataclass is always truthy
            pass


# -- logging -------------------------------------------------------------------------------------------
def test_every_decision_is_logged_at_debug_with_agent_and_tenant_together(world: World,
                                                                          caplog: pytest.LogCaptureFixture) -> None:
    world.grant("file_writer", ALICE, True)
    with caplog.at_level(logging.DEBUG, logger="agentfy.permissions"):
        allowed = check_file_writer_permission(world.db, group(world), world.agent.id)
        denied = check_cron_permission(world.db, group(world, BOB), world.agent.id)
    records = [r for r in caplog.records if r.name == "agentfy.permissions" and r.levelno == logging.DEBUG]
    assert len(records) == 2
    for record, decision in zip(records, (allowed, denied), strict=True):
        fields = record.__dict__
        assert (fields["agent"], fields["tenant_id"], fields["agent_id"]) == ("bot", world.scope.tenant_id,
                                                                             world.agent.id)
        assert fields.get("tenant") is None  # no request bound the slug here (the identity filter, when
        # logging is configured, sets the unbound fields to None)
        assert (fields["allowed"], fields["decision"], fields["config_type"]) == (
            decision.allowed, decision.code.value, decision.config_type)
        assert fields["chat_scope"] == GROUP
        assert world.scope.tenant_id in record.getMessage()


def test_the_agent_key_is_never_logged_without_its_tenant(world: World, caplog: pytest.LogCaptureFixture) -> None:
    no_tenant = telegram_context(-100123, ALICE, is_group=True, agent_id=world.agent.id, agent_key="bot")
    other_agent = telegram_context(-100123, ALICE, is_group=True, agent_id=format_id("agent"), agent_key="bot",
                                   tenant_id=world.scope.tenant_id)
    with caplog.at_level(logging.DEBUG, logger="agentfy.permissions"):
        check_file_writer_permission(world.db, no_tenant, world.agent.id)
        check_file_writer_permission(world.db, other_agent, world.agent.id)  # the key names another agent
    records = [r for r in caplog.records if r.name == "agentfy.permissions"]
    assert len(records) == 2
    for record in records:
        assert "agent" not in record.__dict__ and record.__dict__["agent_id"] == world.agent.id
        assert "bot" not in record.getMessage()


def test_a_decision_log_names_the_tenant_by_slug_within_a_request(world: World,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    from agentfy.logs import log_identity

    with caplog.at_level(logging.DEBUG, logger="agentfy.permissions"), log_identity(tenant="acme"):
        check_cron_permission(world.db, group(world, BOB), world.agent.id)
    [record] = [r for r in caplog.records if r.name == "agentfy.permissions" and r.levelno == logging.DEBUG]
    assert record.__dict__["tenant"] == "acme" and record.__dict__["tenant_id"] == world.scope.tenant_id
