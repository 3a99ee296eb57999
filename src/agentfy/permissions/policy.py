"""Group-chat write policy: may the person behind this request change the agent's files, cron or context?

The rules, in order:

1. no tenant in the context → DENY (nothing is looked up by a bare key);
2. ``ctx.role`` is owner, admin or operator of the tenant → ALLOW (a role belongs to the person);
3. the SCOPE (``ctx.user_id``) is not a group or guild chat (DM, HTTP API, cron-direct) → ALLOW: there is no
   per-user writer gate outside group chats;
4. in a group or guild: the ACTOR (``ctx.sender_id``, never the group) decides —

   * empty → DENY (a system context must not gain write access silently),
   * synthetic (``subagent:``, ``delegate:``, ``notification:``, ``teammate:``, ``system:``, ``ticker:``,
     ``session_send_tool``) → DENY (a wrapper is not a person; see :mod:`agentfy.permissions.propagation`),
   * a person → the grant in the store for (agent, chat scope, config type, sender): allow → ALLOW;
     explicit deny or none → DENY.  ``cron`` and ``context_file`` fall back to the ``file_writer`` grant
     when they have none of their own; an explicit deny of their own type wins over the fallback;

5. the store fails → DENY by default (fail closed).  Failing open (availability over strictness) is
   :attr:`PermissionSettings.fail_open_on_store_error`, off by default, because
   a fail-open turns a degraded database into every group member silently gaining write access, which is
   worse than a write refused for a few minutes.  Either way the failure is logged as a warning.

A value the store refuses as an identity (a sender shaped like a chat scope, control characters) is a
DENY, never a store error, so it can never ride the fail-open setting.  An ``agent_id`` that is not an
agent ID is a bug of the caller and raises :class:`~agentfy.identity.InvalidIdError`.

Every decision is logged at DEBUG on the ``agentfy.permissions`` logger with structured fields
(``extra``): ``agent_id``, ``tenant``, ``agent`` (the key, only next to its tenant), ``config_type``,
``allowed``, ``decision``, ``chat_scope``, ``sender_id``, ``role``.
"""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Final, Protocol

from agentfy.identity import AgentId, Scope, parse_id
from agentfy.identity.context import RequestContext
from agentfy.identity.roles import roles_from
from agentfy.logs import current_identity
from agentfy.permissions.access import ALL_SCOPES_ROLE
from agentfy.permissions.decision import Decision, DecisionCode
from agentfy.permissions.senders import is_chat_scope, is_synthetic_sender
from agentfy.store.db import Tx
from agentfy.store.errors import InvalidInputError, StoreError
from agentfy.store.repos import permissions as grants

FILE_WRITER: Final = "file_writer"
CRON: Final = "cron"
CONTEXT_FILE: Final = "context_file"
CONFIG_TYPES: Final = (FILE_WRITER, CRON, CONTEXT_FILE)

#: Roles of the tenant that need no per-chat grant: those that see every scope of their organization.
PRIVILEGED_ROLES: Final = roles_from(ALL_SCOPES_ROLE)

logger = logging.getLogger("agentfy.permissions")

#: What counts as "the store failed": the store translates every driver failure, connecting and ``BEGIN``
#: included, into a StoreError.
_STORE_FAILURES: Final = (StoreError,)


@dataclass(frozen=True, slots=True)
class PermissionSettings:
    """Operator settings of the policy.

    ``fail_open_on_store_error``: when the grant look-up fails, ALLOW (availability first)
    instead of DENY (the default: no silent privilege escalation while the database is degraded).
    """

    fail_open_on_store_error: bool = False


DEFAULT_SETTINGS: Final = PermissionSettings()


class GrantStore(Protocol):
    """What the policy needs of a database: a read transaction (``Database`` fits; tests pass fakes)."""

    def transaction(self, *, write: bool = ...) -> AbstractContextManager[Tx]: ...


# -- public checks ---------------------------------------------------------------------------------------
def check_file_writer_permission(db: GrantStore, ctx: RequestContext, agent_id: str, *,
                                 settings: PermissionSettings = DEFAULT_SETTINGS) -> Decision:
    """May the request's person write the agent's files in this chat?  See the module docstring."""
    return check_permission(db, ctx, agent_id, FILE_WRITER, settings=settings)


def check_cron_permission(db: GrantStore, ctx: RequestContext, agent_id: str, *,
                          settings: PermissionSettings = DEFAULT_SETTINGS) -> Decision:
    """May the request's person create or change the agent's cron jobs in this chat?  Without a ``cron``
    grant of their own, a ``file_writer`` grant decides (an explicit ``cron`` deny wins)."""
    return check_permission(db, ctx, agent_id, CRON, settings=settings)


def check_context_file_permission(db: GrantStore, ctx: RequestContext, agent_id: str, *,
                                  settings: PermissionSettings = DEFAULT_SETTINGS) -> Decision:
    """May the request's person change the agent's context files in this chat?  Without a
    ``context_file`` grant of their own, a ``file_writer`` grant decides (an explicit deny wins)."""
    return check_permission(db, ctx, agent_id, CONTEXT_FILE, settings=settings)


def check_permission(db: GrantStore, ctx: RequestContext, agent_id: str, config_type: str, *,
                     settings: PermissionSettings = DEFAULT_SETTINGS) -> Decision:
    """The policy for any ``config_type`` of :data:`CONFIG_TYPES`; the three ``check_…`` functions name it.

    Raises :class:`~agentfy.identity.InvalidIdError` for an ``agent_id`` that is not an agent ID and
    :class:`ValueError` for an unknown ``config_type`` (both caller bugs, refused before any rule runs, so a
    privileged role cannot hide them).
    """
    agent = parse_id(agent_id, AgentId)
    if config_type not in CONFIG_TYPES:
        raise ValueError(f"config_type {config_type!r} is unknown; expected one of {', '.join(CONFIG_TYPES)}")
    decision = _decide(db, ctx, agent, config_type, settings)
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("permission %s %s: %s (agent_id=%s tenant_id=%s)", config_type,
                     "allowed" if decision.allowed else "denied", decision.code.value, agent, ctx.tenant_id,
                     extra=log_fields(ctx, agent, decision))
    return decision


def log_fields(ctx: RequestContext, agent_id: str, decision: Decision) -> dict[str, object]:
    """The structured fields of a decision's log record.

    ``tenant`` is the organization's slug (when the request has resolved it) and ``tenant_id`` its ID; the
    agent key is only added next to the tenant (a key is unique only within a tenant), and only when the
    context's key belongs to the agent being checked; the agent ID is always there.
    """
    fields: dict[str, object] = {
        "agent_id": agent_id, "tenant_id": ctx.tenant_id, "config_type": decision.config_type,
        "allowed": decision.allowed, "decision": decision.code.value, "chat_scope": ctx.user_id,
        "sender_id": ctx.sender_id, "role": ctx.role,
    }
    if ctx.tenant_id is not None and ctx.agent_key is not None and ctx.agent_id in (None, agent_id):
        fields["agent"] = ctx.agent_key
    slug = current_identity().tenant  # the slug, once the request's tenant is known (people search by it)
    if slug is not None:
        fields["tenant"] = slug
    return fields


# -- the rules -------------------------------------------------------------------------------------------
def _decide(db: GrantStore, ctx: RequestContext, agent: AgentId, config_type: str,
            settings: PermissionSettings) -> Decision:
    if ctx.tenant_id is None:
        return _deny(DecisionCode.MISSING_TENANT, ctx, agent, config_type,
                     "the request context has no tenant; nothing is looked up without one")
    scope = ctx.scope()
    if ctx.role in PRIVILEGED_ROLES:
        return _allow(DecisionCode.PRIVILEGED_ROLE, config_type,
                      f"the acting person is {ctx.role} of the tenant; no per-chat grant is needed")
    chat = ctx.user_id
    if chat is None or not is_chat_scope(chat):
        return _allow(DecisionCode.OUTSIDE_GROUP, config_type,
                      "not a group or guild chat (direct message, HTTP API or cron); no per-user gate applies")
    sender = ctx.sender_id
    if not sender:
        return _deny(DecisionCode.EMPTY_SENDER, ctx, agent, config_type,
                     f"no individual sender in {chat}; a system context does not gain write access")
    if is_synthetic_sender(sender):
        return _deny(DecisionCode.SYNTHETIC_SENDER, ctx, agent, config_type,
                     f"sender {sender!r} is a tool wrapper, not a person, and the acting person was not "
                     "propagated (metadata origin_sender_id)")
    try:
        own, fallback = _look_up(db, scope, agent, chat=chat, config_type=config_type, sender=sender)
    except InvalidInputError as error:
        return _deny(DecisionCode.INVALID_IDENTITY, ctx, agent, config_type,
                     f"the grant look-up refused the request's identity: {error}")
    except _STORE_FAILURES as error:
        return _store_failed(error, ctx, agent, config_type, settings)
    if own is True:
        return _allow(DecisionCode.GRANTED, config_type, f"sender {sender} has a {config_type} grant in {chat}")
    if own is False:
        return _deny(DecisionCode.DENIED_BY_GRANT, ctx, agent, config_type,
                     f"sender {sender} is explicitly denied {config_type} in {chat}")
    if fallback is True:
        return _allow(DecisionCode.GRANTED_BY_FILE_WRITER, config_type,
                      f"sender {sender} has no {config_type} grant in {chat}; their file_writer grant applies")
    if fallback is False:
        return _deny(DecisionCode.DENIED_BY_FILE_WRITER_GRANT, ctx, agent, config_type,
                     f"sender {sender} has no {config_type} grant in {chat} and is explicitly denied "
                     "file_writer, which it falls back to")
    return _deny(DecisionCode.NO_GRANT, ctx, agent, config_type,
                 f"sender {sender} has no {_grant_names(config_type)} grant in {chat}")


def _look_up(db: GrantStore, scope: Scope, agent: AgentId, *, chat: str, config_type: str,
             sender: str) -> tuple[bool | None, bool | None]:
    """The sender's own grant and, when there is none and the type falls back, the file_writer grant, in one
    read transaction (one connection checkout; the second query runs only when the first finds nothing)."""
    with db.transaction(write=False) as tx:
        own = grants.find_grant(tx, scope, agent, chat, config_type, sender)
        if own is not None or config_type == FILE_WRITER:
            return own, None
        return None, grants.find_grant(tx, scope, agent, chat, FILE_WRITER, sender)


def _store_failed(error: Exception, ctx: RequestContext, agent: AgentId, config_type: str,
                  settings: PermissionSettings) -> Decision:
    # A StoreError's text is safe to show; a driver's may name hosts, so only its type is kept.
    cause = str(error) if isinstance(error, StoreError) else type(error).__name__
    if settings.fail_open_on_store_error:
        decision = _allow(DecisionCode.STORE_ERROR_FAIL_OPEN, config_type,
                          f"the grant look-up failed ({cause}); allowed because fail_open_on_store_error is set")
    else:
        decision = _deny(DecisionCode.STORE_ERROR_FAIL_CLOSED, ctx, agent, config_type,
                         f"the grant look-up failed ({cause}); denied (fail closed)")
    logger.warning("permission store error: %s %s for agent_id=%s tenant_id=%s (%s)", config_type,
                   "ALLOWED (fail-open)" if decision.allowed else "denied (fail-closed)", agent, ctx.tenant_id,
                   type(error).__name__,
                   extra={**log_fields(ctx, agent, decision), "error_type": type(error).__name__,
                          "fail_open": settings.fail_open_on_store_error})
    return decision


def _allow(code: DecisionCode, config_type: str, reason: str) -> Decision:
    return Decision(allowed=True, code=code, config_type=config_type, reason=reason)


def _deny(code: DecisionCode, ctx: RequestContext, agent: AgentId, config_type: str, reason: str) -> Decision:
    return Decision(allowed=False, code=code, config_type=config_type, reason=reason,
                    how_to_get_access=how_to_get_access(code, ctx, agent, config_type))


# -- what to tell the person -----------------------------------------------------------------------------
def _grant_names(config_type: str) -> str:
    if config_type == FILE_WRITER:
        return FILE_WRITER
    return f"{config_type} (or {FILE_WRITER}, which {config_type} falls back to)"


def _agent_label(ctx: RequestContext, agent: AgentId) -> str:
    if ctx.agent_key is not None and ctx.agent_id in (None, agent):
        return f"agent {ctx.agent_key} ({agent})"
    return f"agent {agent}"


def how_to_get_access(code: DecisionCode, ctx: RequestContext, agent: AgentId, config_type: str) -> str:
    """The message telling the person exactly how to get access after a denial with ``code``."""
    chat = ctx.user_id or "this chat"
    sender = ctx.sender_id or ""
    label = _agent_label(ctx, agent)

    def ask(names: str) -> str:
        return (f"Ask an owner or admin of this organization to grant you {names} for {chat}: an allow grant "
                f"for {label}, config type {config_type}, chat scope {chat}, sender ID {sender}")

    if code is DecisionCode.NO_GRANT:
        return f"{ask(_grant_names(config_type))}. Owners, admins and operators of the organization need no grant."
    if code is DecisionCode.DENIED_BY_GRANT:
        # The own deny wins over a file_writer fallback, so only a grant of this very type helps.
        return (f"An owner or admin has explicitly denied you {config_type} for {chat}. {ask(config_type)} "
                "(granting again replaces the deny).")
    if code is DecisionCode.DENIED_BY_FILE_WRITER_GRANT:
        return (f"An owner or admin has explicitly denied you {FILE_WRITER} for {chat}, and you have no "
                f"{config_type} grant of your own. Ask an owner or admin of this organization to grant you "
                f"{config_type} (or replace the {FILE_WRITER} deny with an allow) for {label}, chat scope "
                f"{chat}, sender ID {sender}.")
    if code is DecisionCode.EMPTY_SENDER:
        return (f"The request reached {label} in {chat} without an individual sender, so it cannot be "
                "attributed to you. Send it yourself from your own account in the chat, or in a direct "
                "message to the agent, where no per-user grant is needed.")
    if code is DecisionCode.SYNTHETIC_SENDER:
        return (f"The request was relayed by {sender!r} without the person who started it, so it cannot be "
                f"attributed to you. Send it yourself in {chat} (with a {config_type} grant) or in a direct "
                "message to the agent. Operators: the wrapper must carry the acting sender in the message "
                "metadata 'origin_sender_id'.")
    if code is DecisionCode.INVALID_IDENTITY:
        return (f"Your sender ID {sender!r} or the chat scope {chat!r} is not a valid identity, so no grant can "
                "match it. Write from a regular account; if this persists, report it to an operator.")
    if code is DecisionCode.MISSING_TENANT:
        return ("The request was made outside any organization. Use the agent through a channel or API key of "
                "its organization; if you did, report it to an operator (the request lost its tenant).")
    if code is DecisionCode.STORE_ERROR_FAIL_CLOSED:
        return (f"The permission store is unavailable, so writes in {chat} are refused to be safe. Try again in "
                "a few minutes; if it persists, tell an operator (the database is degraded).")
    raise ValueError(f"{code.value} is not a denial")
