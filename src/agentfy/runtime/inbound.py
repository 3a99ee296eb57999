"""The one shape in which every channel (Telegram, Discord, web chat, the terminal) hands a message to the
runtime, and the one shape of what comes back.

Channels own the platform: parsing updates, verifying signatures, building the request context with the
constructors of :mod:`agentfy.permissions.channels` (SCOPE vs ACTOR), and sending the reply.  The runtime
owns everything between: the agent's loop, the model, tools and the session.  Keeping the seam this narrow
is what lets the two sides be tested apart, and lets a new channel reuse every identity rule unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Final, Protocol

from agentfy.identity import AgentKey
from agentfy.identity.context import RequestContext
from agentfy.identity.ids import OrgId
from agentfy.runtime.model import TextSink, Usage

#: A message has something to say: at least one character that is not white space as Python's ``str.isspace``
#: knows it (which includes the separators U+001C-U+001F and U+0085, unlike a regular expression's ``\s``).  The
#: characters are spelled out so the same text is the JSON schema's ``pattern`` of every message field and the
#: runtime's check: an API client learns the rule from the document, and a channel's message obeys the same one.
VISIBLE_TEXT_PATTERN: Final = (r"[^\u0009-\u000d\u001c-\u0020\u0085\u00a0\u1680\u2000-\u200a"
                               r"\u2028\u2029\u202f\u205f\u3000]")
_VISIBLE: Final = re.compile(VISIBLE_TEXT_PATTERN)
EMPTY_TEXT_PROBLEM: Final = "the message text is empty; expected the words to send to the agent"


def has_visible_text(text: str) -> bool:
    """Whether ``text`` has something to say (see :data:`VISIBLE_TEXT_PATTERN`)."""
    return _VISIBLE.search(text) is not None


@dataclass(frozen=True, slots=True)
class Inbound:
    """One message addressed to one agent of one tenant.

    ``context`` carries the SCOPE (``user_id``) and ACTOR (``sender_id``) as the channel's constructor built
    them, with ``tenant_id`` and ``agent_key`` set.  ``conversation`` names the chat on its platform
    (``telegram:-100123``, ``discord:guild:1:channel:2``, ``web:<user>``); together with the tenant and the
    agent it picks the session, so two tenants (or two agents) never share one.
    """

    tenant_id: OrgId
    agent_key: AgentKey
    context: RequestContext
    channel: str
    conversation: str
    text: str
    message_id: str | None = None
    #: Hand-offs (subagent, delegate) between a person's message and this one: 0 for the person's own.
    depth: int = 0


@dataclass(frozen=True, slots=True)
class Reply:
    """What the agent answered, and the session it was recorded in (``text`` ``None`` when nothing was said).

    ``text`` is everything the person was shown: the text of every model call of the run, in order, separated
    by a blank line (a model may say something before it calls a tool), so a stream's pieces join to exactly
    ``text``.  ``usage``: the run's tokens summed over its model calls (``None`` when no call reported any).
    """

    text: str | None
    session_key: str
    usage: Usage | None = None


class MessageHandler(Protocol):
    """The runtime's entry point as channels see it: ``on_text``, when given, receives the reply's text as
    the model streams it (the pieces join to the reply's ``text``)."""

    def __call__(self, inbound: Inbound, *, on_text: TextSink | None = None) -> Awaitable[Reply]: ...
