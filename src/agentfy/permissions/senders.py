"""What kind of identity a string is: a chat SCOPE, a synthetic (wrapper) sender, or a real person.

The permission policy and the propagation helpers must agree exactly on these shapes, so they live in one
place.  The rules, and why:

* a SCOPE (``user_id``) of a group or guild chat starts with ``group:`` or ``guild:``; its members share
  memory and files, so per-user write grants apply only there;
* a synthetic sender carries the routing identity of a tool wrapper that re-ingresses a message
  (``subagent:<taskID>``, ``delegate:<taskID>``, ``teammate:<…>``, ``session_send_tool`` …), never a person,
  so it can never hold a grant: a turn relayed by a wrapper is refused as a wrapper, not looked up as if
  ``delegate:<taskID>`` were a person who might have been granted something by mistake.

Every identity string is a *label* by the store's one rule (:func:`agentfy.store.inputs.label_problem`): the
policy refuses exactly what the store would refuse to record.
"""

from __future__ import annotations

from typing import Final

from agentfy.store.inputs import check_label, label_problem

#: Prefixes of a SCOPE that is a group or guild chat (the store's ``CHAT_SCOPE_PREFIXES``).
CHAT_SCOPE_PREFIXES: Final = ("group:", "guild:")

#: The exact synthetic sender of the ``session_send`` tool.
SESSION_SEND_SENDER: Final = "session_send_tool"

#: Prefixes of synthetic senders (tool wrappers and internal producers); see the module docstring.
SYNTHETIC_SENDER_PREFIXES: Final = ("subagent:", "delegate:", "notification:", "teammate:", "system:", "ticker:")


def identity_problem(value: object) -> str | None:
    """Why ``value`` cannot be an identity string (a sender, a scope, a task ID), or ``None``: it must be a
    non-empty label (such strings end up in logs, keys and grant look-ups, where a newline or NUL would forge
    or split an entry)."""
    return label_problem(value)


def require_identity(value: object, field: str) -> str:
    """``value`` if it is a well-formed identity string, else :class:`~agentfy.store.errors.InvalidInputError`
    (a :class:`ValueError`) naming ``field`` and the value."""
    return check_label(value, field)


def is_chat_scope(user_id: str | None) -> bool:
    """Whether ``user_id`` is a group or guild SCOPE (where the per-user write gate applies)."""
    return user_id is not None and user_id.startswith(CHAT_SCOPE_PREFIXES)


def is_synthetic_sender(sender_id: str | None) -> bool:
    """Whether ``sender_id`` is a wrapper's routing identity rather than a person.  An empty sender is not
    synthetic: it is *absent* (a separate rule)."""
    if not sender_id:
        return False
    return sender_id == SESSION_SEND_SENDER or sender_id.startswith(SYNTHETIC_SENDER_PREFIXES)


def is_person(sender_id: str | None) -> bool:
    """Whether ``sender_id`` can name an individual: a well-formed identity, not synthetic, not a chat
    scope.  Only such a value may be propagated as the acting sender or own a row."""
    return identity_problem(sender_id) is None and not is_synthetic_sender(sender_id) \
        and not is_chat_scope(sender_id)
