"""What kind of identity a string is: a chat SCOPE, a synthetic (wrapper) sender, or a real person.

The permission policy and the propagation helpers must agree exactly on these shapes, so they live in one
place.  The seed ("ActorID vs UserID in Group Chats") names the rules:

* a SCOPE (``user_id``) of a group or guild chat starts with ``group:`` or ``guild:``; per-user grants
  apply only there;
* a synthetic sender carries routing identity of a tool wrapper (``subagent:<taskID>``,
  ``teammate:<…>``, ``session_send_tool`` …), never a person, so it can never hold a grant.

``delegate:`` is synthetic here too although the seed's list omits it: the delegate tool announces as
``delegate:<taskID>`` (the seed's related code), and a delegate-relayed turn must be refused as a wrapper,
not looked up as if ``delegate:<taskID>`` were a person who might have been granted something by mistake.
"""

from __future__ import annotations

import re
from typing import Final

#: Prefixes of a SCOPE that is a group or guild chat (the store's ``CHAT_SCOPE_PREFIXES``).
CHAT_SCOPE_PREFIXES: Final = ("group:", "guild:")

#: The exact synthetic sender of the ``session_send`` tool.
SESSION_SEND_SENDER: Final = "session_send_tool"

#: Prefixes of synthetic senders (tool wrappers and internal producers); see the module docstring.
SYNTHETIC_SENDER_PREFIXES: Final = ("subagent:", "delegate:", "notification:", "teammate:", "system:", "ticker:")

#: Identity strings are at most this long (the store's ``LABEL_MAX_LENGTH``).
IDENTITY_MAX_LENGTH: Final = 200
#: Refused like the store refuses them: control characters (Cc), surrogates (Cs), line/paragraph separators.
_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def identity_problem(value: object) -> str | None:
    """Why ``value`` cannot be an identity string (a sender, a scope, a task ID), or ``None``.

    Such strings end up in logs, keys and grant look-ups, where a newline or NUL would forge or split an
    entry; the store refuses the same shapes.
    """
    if not isinstance(value, str):
        return f"must be a string, got {type(value).__name__}"
    if not value:
        return "must not be empty"
    if len(value) > IDENTITY_MAX_LENGTH:
        return f"is {len(value)} characters; at most {IDENTITY_MAX_LENGTH} are allowed"
    if _CONTROL.search(value):
        return "contains a control character"
    return None


def require_identity(value: object, field: str) -> str:
    """``value`` if it is a well-formed identity string, else :class:`ValueError` naming ``field``."""
    problem = identity_problem(value)
    if problem is None and isinstance(value, str):
        return value
    shown = value[:50] if isinstance(value, str) else value
    raise ValueError(f"{field} {shown!r} {problem}")


def is_chat_scope(user_id: str | None) -> bool:
    """Whether ``user_id`` is a group or guild SCOPE (where the per-user write gate applies)."""
    return user_id is not None and user_id.startswith(CHAT_SCOPE_PREFIXES)


def is_synthetic_sender(sender_id: str | None) -> bool:
    """Whether ``sender_id`` is a wrapper's routing identity rather than a person (the seed's
    ``bus.IsInternalSender``).  An empty sender is not synthetic: it is *absent* (a separate rule)."""
    if not sender_id:
        return False
    return sender_id == SESSION_SEND_SENDER or sender_id.startswith(SYNTHETIC_SENDER_PREFIXES)


def is_person(sender_id: str | None) -> bool:
    """Whether ``sender_id`` can name an individual: a well-formed identity, not synthetic, not a chat
    scope.  Only such a value may be propagated as the acting sender or own a row."""
    return identity_problem(sender_id) is None and not is_synthetic_sender(sender_id) \
        and not is_chat_scope(sender_id)
