"""Group-chat permissions: who may write an agent's files, cron and context files, and which identity of a
request (ACTOR or SCOPE) each purpose uses.  See ``docs/permissions.md``.

Modules, one job each:

* :mod:`~agentfy.permissions.senders` — what an identity string is (chat scope, synthetic sender, person);
* :mod:`~agentfy.permissions.decision` — :class:`Decision` and its stable codes;
* :mod:`~agentfy.permissions.policy` — the write checks (``check_file_writer_permission`` …);
* :mod:`~agentfy.permissions.propagation` — carrying the person through tool wrappers;
* :mod:`~agentfy.permissions.ownership` — owner, audit, memory and file identities of a request;
* :mod:`~agentfy.permissions.channels` — request contexts per channel (which identity each channel sets).
"""

from agentfy.permissions.channels import discord_context, http_context, new_context, system_context, telegram_context
from agentfy.permissions.decision import Decision, DecisionCode
from agentfy.permissions.ownership import (
    NoActorError,
    audit_actor,
    can_manage_skill_in_context,
    file_scope,
    memory_scope,
    owner_for_new_row,
)
from agentfy.permissions.policy import (
    CONFIG_TYPES,
    DEFAULT_SETTINGS,
    PRIVILEGED_ROLES,
    GrantStore,
    PermissionSettings,
    check_context_file_permission,
    check_cron_permission,
    check_file_writer_permission,
    check_permission,
)
from agentfy.permissions.propagation import (
    META_ORIGIN_SENDER_ID,
    InboundMessage,
    RunRequest,
    context_for_run,
    delegate_announce,
    origin_sender_of,
    run_request_from_inbound,
    session_send,
    subagent_announce,
    teammate_dispatch,
)
from agentfy.permissions.senders import (
    SESSION_SEND_SENDER,
    SYNTHETIC_SENDER_PREFIXES,
    is_chat_scope,
    is_person,
    is_synthetic_sender,
)

__all__ = [
    "CONFIG_TYPES",
    "DEFAULT_SETTINGS",
    "META_ORIGIN_SENDER_ID",
    "PRIVILEGED_ROLES",
    "SESSION_SEND_SENDER",
    "SYNTHETIC_SENDER_PREFIXES",
    "Decision",
    "DecisionCode",
    "GrantStore",
    "InboundMessage",
    "NoActorError",
    "PermissionSettings",
    "RunRequest",
    "audit_actor",
    "can_manage_skill_in_context",
    "check_context_file_permission",
    "check_cron_permission",
    "check_file_writer_permission",
    "check_permission",
    "context_for_run",
    "delegate_announce",
    "discord_context",
    "file_scope",
    "http_context",
    "is_chat_scope",
    "is_person",
    "is_synthetic_sender",
    "memory_scope",
    "new_context",
    "origin_sender_of",
    "owner_for_new_row",
    "run_request_from_inbound",
    "session_send",
    "subagent_announce",
    "system_context",
    "teammate_dispatch",
    "telegram_context",
]
