"""Which session a message belongs to, and what the model is shown of it.

A conversation is ``(tenant, agent, SCOPE, conversation name)``.  Its session key is derived, never chosen
by the channel, so two tenants, two agents of one tenant, or two people who name their chats alike can never
land in one session:

* the tenant is the session table's own key column (``(tenant_id, session_key)``);
* the key starts with the agent's **ID** (storage identity; a key could be renamed or reused);
* the SCOPE and the conversation name are each escaped by :func:`escape_part` — every character outside
  ``A-Z a-z 0-9 _ . : @ -`` becomes ``~`` and two hex digits per UTF-8 byte — so neither contains ``/``, the
  parts split back one way only, and the key needs no escaping in a URL (``~`` is unreserved); an empty
  scope (a cron-direct run) is ``~``, which no escaped value can be;
* a key over the 200-character limit becomes ``<agent id>/~<sha-256 of the parts>``.

A completed session takes no more messages; the next message of that conversation opens the next
generation, ``<key>#2``, ``#3``…, so completing a conversation never loses later messages and the completed
session stays as it was for the consolidation workers.

Compaction (the memory flush) appends a ``system`` message starting with :data:`COMPACTION_MARKER`; the
history shown to the model starts at the latest one.  A cut of the history never falls inside a tool
exchange: the flush runs between turns, when every assistant tool-call message already has its results (the
runner stores them together), and a window cut by :data:`HISTORY_LIMIT` starts after the results whose call
fell outside it.
"""

from __future__ import annotations

import hashlib
import re
from typing import Final

from agentfy.events.consolidation.episodic import publish_session_completed
from agentfy.events.event import DomainEvent
from agentfy.identity import Scope
from agentfy.store.db import Tx
from agentfy.store.errors import NotFoundError
from agentfy.store.repos import sessions
from agentfy.store.repos.agents import Agent
from agentfy.store.repos.sessions import SESSION_KEY_MAX_LENGTH, Session, SessionMessage

#: The start of the system message a compaction leaves in the session.
COMPACTION_MARKER: Final = "[compacted]"
#: At most this many messages are loaded as history (older ones are in memory after a compaction).
HISTORY_LIMIT: Final = 1000
_GENERATION: Final = "#"
_NO_SCOPE: Final = "~"
_KEPT: Final = re.compile(r"[A-Za-z0-9_.:@-]")
_ALL_KEPT: Final = re.compile(r"[A-Za-z0-9_.:@-]*")
#: Room left for the generation suffix (``#`` and up to 9 digits).
_SUFFIX_ROOM: Final = 10


def escape_part(value: str) -> str:
    """``value`` with every character outside ``A-Z a-z 0-9 _ . : @ -`` as ``~xx`` per UTF-8 byte (injective)."""
    if _ALL_KEPT.fullmatch(value):  # the usual name or ID: nothing to escape, one match instead of one a character
        return value
    return "".join(c if _KEPT.fullmatch(c) else "".join(f"~{b:02x}" for b in c.encode("utf-8", "surrogatepass"))
                   for c in value)


def conversation_key(agent: Agent, scope_user_id: str | None, conversation: str) -> str:
    """The session key of the conversation's first generation (see the module docstring)."""
    if not conversation:
        raise ValueError("the conversation name is empty; expected the chat's name on its platform")
    scope_part = escape_part(scope_user_id) if scope_user_id else _NO_SCOPE
    readable = f"{agent.id}/{scope_part}/{escape_part(conversation)}"
    if len(readable) <= SESSION_KEY_MAX_LENGTH - _SUFFIX_ROOM:
        return readable
    digest = hashlib.sha256(f"{scope_part}/{escape_part(conversation)}".encode()).hexdigest()
    return f"{agent.id}/~{digest}"


def _generation_key(base: str, generation: int) -> str:
    return base if generation == 1 else f"{base}{_GENERATION}{generation}"


def open_or_resume(tx: Tx, scope: Scope, agent: Agent, scope_user_id: str | None, base_key: str, *,
                   channel: str | None = None, conversation: str | None = None, lock: bool = False) -> Session:
    """The open session of the conversation: the newest generation if it is open, else a new one (opened with
    ``channel`` and ``conversation``, where it happens).

    ``lock`` (a writing ``tx``): the session's row is locked as it is read (a new one is the transaction's own),
    so the run's message goes in with :func:`~agentfy.store.repos.sessions.append_to_locked` — no second
    statement to lock it.

    A session under the key in another scope or of another agent cannot exist (the key encodes both), and is
    refused rather than used if one ever does.
    """
    generation = 1
    while True:
        key = _generation_key(base_key, generation)
        try:
            session = sessions.get_session(tx, scope, key, lock=lock)
        except NotFoundError:  # opened for the run's agent record, resolved in the tenant already: not read again
            return sessions.open_session_of(tx, scope, key, agent, scope_user_id or "", channel=channel,
                                            conversation=conversation)
        if session.agent_id != agent.id or session.user_id != (scope_user_id or ""):
            raise RuntimeError(f"session {key!r} belongs to another agent or scope; refusing to use it")
        if session.status == "open":
            return session
        generation += 1


def history(tx: Tx, scope: Scope, session: Session | str) -> list[SessionMessage]:
    """The messages the model is shown: from the latest compaction summary on (the newest
    :data:`HISTORY_LIMIT` messages at most, read as one window: a session of any length costs one read of
    the window).  ``session``: its record, read or opened in ``tx`` (a run's: it is not read again), or its
    key."""
    record = session if isinstance(session, Session) else sessions.get_session(tx, scope, session)
    messages = sessions.newest_history(tx, scope, record, limit=HISTORY_LIMIT)
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == "system" and message.content.startswith(COMPACTION_MARKER):
            return messages[index:]
    return whole_exchanges(messages)


def whole_exchanges(messages: list[SessionMessage]) -> list[SessionMessage]:
    """``messages`` from the first one that is not a tool result: results at the start of a window answer a
    call that was cut off, and a compaction or a replay must never see half an exchange."""
    start = 0
    while start < len(messages) and messages[start].role == "tool":
        start += 1
    return messages[start:]


def complete(tx: Tx, scope: Scope, session_key: str) -> tuple[Session, DomainEvent | None]:
    """Complete the session and publish ``session.completed`` in the same transaction (so the consolidation
    workers hear of exactly the sessions that were completed); completing it again publishes nothing."""
    session = sessions.complete_session(tx, scope, session_key)
    return session, publish_session_completed(tx, scope, session.session_key)
