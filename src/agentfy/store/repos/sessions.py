"""Sessions: conversations keyed by ``(tenant, session_key)``, and their ordered messages.

The session key is the session's only identifier (a session has no separate ID, so there is no second
identity to confuse it with), and it is validated as a label, not as an ID: non-empty, at most 200
characters, no control characters (:func:`agentfy.store.inputs.check_label`).  A session
records the memory SCOPE it belongs to (``user_id``: ``group:telegram:…`` in a group, the sender in a DM);
each message records its ACTOR (``sender_id``) when a person sent it.  The two are never interchangeable.

Tool use is stored as structures, so a later turn can replay it to the model: an ``assistant`` message may
carry ``tool_calls`` (each :class:`MessageToolCall`: the call's id, the tool's name, its JSON arguments;
stored as a JSON list), and a ``tool`` message carries the ``tool_call_id`` of the call it answers (its
``content`` is the result).  The database refuses either on another role.  Rows written before this was
stored (``tool`` messages holding ``name(args) -> result`` as text) have neither; readers must cope.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

import sqlalchemy as sa

from agentfy.identity import AgentId, OrgId, Scope, parse_id
from agentfy.store.db import Tx, now
from agentfy.store.errors import ConflictError, InvalidInputError, NotFoundError, UniqueViolation
from agentfy.store.inputs import check_json, check_json_size
from agentfy.store.paging import Keyset
from agentfy.store.repos import agents
from agentfy.store.repos._common import require_label, require_text
from agentfy.store.schema import session_messages, sessions
from agentfy.store.sql import insert

SESSION_KEY_MAX_LENGTH: Final = 200
MESSAGE_MAX_LENGTH: Final = 1_000_000
MESSAGE_ROLES: Final = ("user", "assistant", "system", "tool")
SESSION_STATUSES: Final = ("open", "completed")
#: A tool call's id and a tool name are labels of at most this many characters.
TOOL_CALL_ID_MAX_LENGTH: Final = 200

_COLUMNS: Final = (sessions.c.tenant_id, sessions.c.session_key, sessions.c.agent_id, sessions.c.user_id,
                   sessions.c.status, sessions.c.compaction_count, sessions.c.created_at, sessions.c.completed_at,
                   sessions.c.channel, sessions.c.conversation)
_THIS: Final = (sessions.c.tenant_id == sa.bindparam("tenant_id"),
                sessions.c.session_key == sa.bindparam("session_key"))
_INSERT: Final = insert(sessions, ["tenant_id", "session_key", "agent_id", "user_id", "status", "compaction_count",
                                   "created_at", "channel", "conversation"])
_GET: Final = sa.select(*_COLUMNS).where(*_THIS)
#: The session read with its row locked (``FOR UPDATE`` on PostgreSQL; SQLite's writing transaction holds the
#: database's write lock already): what :func:`append_to_locked` relies on.
_GET_LOCKED: Final = _GET.with_for_update()
_OPEN_CONVERSATIONS: Final = (sa.select(*_COLUMNS)
                              .where(sessions.c.tenant_id == sa.bindparam("tenant_id"),
                                     sessions.c.agent_id == sa.bindparam("agent_id"), sessions.c.status == "open",
                                     sessions.c.channel.is_not(None))
                              .order_by(sessions.c.created_at.desc(), sessions.c.session_key)
                              .limit(sa.bindparam("limit", type_=sa.Integer)))
# An agent's sessions for listing, each with its message count and last activity (its last message's time, or
# its opening's when it has none).  The newest activity comes first; the session key breaks ties, so the order
# is total.  Both figures are read from the messages' primary key (tenant, session key, seq): the last message
# is the one with the highest seq.  Ordering by activity has no index of its own (it is computed per session),
# so a listing reads all of one agent's sessions in the filter before it pages.  A session that becomes active
# while a caller pages moves to the front: this walk does not show it again (nor, if not yet shown, at all);
# the next walk from the first page does.
_MESSAGES_OF_ROW: Final = (session_messages.c.tenant_id == sessions.c.tenant_id,
                           session_messages.c.session_key == sessions.c.session_key)
_LAST_MESSAGE_AT: Final = (sa.select(session_messages.c.created_at).where(*_MESSAGES_OF_ROW)
                           .order_by(session_messages.c.seq.desc()).limit(1).correlate(sessions).scalar_subquery())
_MESSAGE_COUNT: Final = (sa.select(sa.func.count()).select_from(session_messages).where(*_MESSAGES_OF_ROW)
                         .correlate(sessions).scalar_subquery())


def _agent_pages(*, scoped: bool, stated: bool) -> Keyset[ListedSession]:
    """The keyset of one agent's sessions, only one scope's (``scoped``) and one status's (``stated``)."""
    where = [sessions.c.tenant_id == sa.bindparam("tenant_id"), sessions.c.agent_id == sa.bindparam("agent_id")]
    if scoped:
        where.append(sessions.c.user_id == sa.bindparam("user_id"))
    if stated:
        where.append(sessions.c.status == sa.bindparam("status"))
    listed = (sa.select(*_COLUMNS, _MESSAGE_COUNT.label("message_count"),
                        sa.func.coalesce(_LAST_MESSAGE_AT, sessions.c.created_at).label("last_activity_at"))
              .where(*where).subquery("listed"))
    return Keyset(sa.select(*listed.c), (listed.c.last_activity_at, listed.c.session_key),
                  lambda item: (item.last_activity_at, item.session.session_key), descending=True)


# The row lock serializes appends to one session on PostgreSQL (SQLite's BEGIN IMMEDIATE already does; its
# compiler leaves FOR UPDATE out), so two writers never compute the same next seq.
_LOCK_STATUS: Final = sa.select(sessions.c.status).where(*_THIS).with_for_update()
_COMPLETE: Final = (sa.update(sessions).where(*_THIS, sessions.c.status == sa.bindparam("open"))
                    .values(status=sa.bindparam("completed"), completed_at=sa.bindparam("now")))
_COMPLETE_OPEN: Final = (sa.update(sessions).where(*_THIS, sessions.c.status == sa.bindparam("open"))
                         .values(status=sa.bindparam("completed"), completed_at=sa.bindparam("now"))
                         .returning(sessions.c.completed_at))
_DELETE: Final = sa.delete(sessions).where(*_THIS)
_INCREMENT_COMPACTION: Final = (sa.update(sessions).where(*_THIS)
                                .values(compaction_count=sessions.c.compaction_count
                                        + sa.bindparam("step", type_=sa.Integer))
                                .returning(sessions.c.compaction_count))

_MESSAGE_COLUMNS: Final = (session_messages.c.session_key, session_messages.c.seq, session_messages.c.role,
                           session_messages.c.sender_id, session_messages.c.content, session_messages.c.created_at,
                           session_messages.c.tool_calls, session_messages.c.tool_call_id)
_MESSAGES_OF: Final = (session_messages.c.tenant_id == sa.bindparam("tenant_id"),
                       session_messages.c.session_key == sa.bindparam("session_key"))
_INSERT_MESSAGE: Final = insert(session_messages, ["tenant_id", "session_key", "seq", "role", "sender_id", "content",
                                                   "created_at", "tool_calls", "tool_call_id"])
# The message under the next seq, computed by the INSERT itself (one round trip, not a read then a write).  It
# runs after the status row is locked, as a statement of its own: on PostgreSQL a new statement sees every
# append committed before the lock was granted (a subquery of the locking SELECT would not).
_MESSAGE_FIELDS: Final = ("role", "sender_id", "content", "created_at", "tool_calls", "tool_call_id")
_INSERT_NEXT_MESSAGE: Final = (
    sa.insert(session_messages)
    .from_select(["tenant_id", "session_key", "seq", *_MESSAGE_FIELDS], sa.select(
        sa.bindparam("tenant_id", type_=session_messages.c.tenant_id.type),
        sa.bindparam("session_key", type_=session_messages.c.session_key.type),
        sa.func.coalesce(sa.func.max(session_messages.c.seq), 0) + 1,
        *(sa.bindparam(name, type_=session_messages.c[name].type) for name in _MESSAGE_FIELDS),
    ).where(*_MESSAGES_OF))
    .returning(session_messages.c.seq))
_LIST_MESSAGES: Final = (sa.select(*_MESSAGE_COLUMNS)
                         .where(*_MESSAGES_OF, session_messages.c.seq > sa.bindparam("after_seq", type_=sa.Integer))
                         .order_by(session_messages.c.seq)
                         .limit(sa.bindparam("limit", type_=sa.Integer)))
# The newest ``limit`` messages, newest first (the run's history window: a long session costs what the window
# holds, not what the session ever stored).
_NEWEST_MESSAGES: Final = (sa.select(*_MESSAGE_COLUMNS)
                           .where(*_MESSAGES_OF)
                           .order_by(session_messages.c.seq.desc())
                           .limit(sa.bindparam("limit", type_=sa.Integer)))


@dataclass(frozen=True, slots=True)
class Session:
    """A conversation.  ``user_id`` is the memory SCOPE (never the actor); ``agent_id`` the agent's ID."""

    tenant_id: OrgId
    session_key: str
    agent_id: AgentId
    user_id: str
    status: str
    compaction_count: int
    created_at: str
    completed_at: str | None
    #: Where the conversation happens and its name there (``telegram``, ``telegram:-100123``), as the
    #: runtime opened it; ``None`` for a session opened without (the sessions API, older sessions).
    channel: str | None = None
    conversation: str | None = None


@dataclass(frozen=True, slots=True)
class ListedSession:
    """A session as a listing shows it: with how many messages it has and when it was last active (its last
    message's time, or its opening's)."""

    session: Session
    message_count: int
    last_activity_at: str


@dataclass(frozen=True, slots=True)
class MessageToolCall:
    """One tool call of an assistant message: ``id`` pairs it with the ``tool`` message that answers it;
    ``arguments`` is a JSON object (string values from the offline model, any JSON value from others)."""

    id: str
    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class SessionMessage:
    """One message; ``seq`` counts from 1 within the session; ``sender_id`` is the ACTOR, if a person.
    ``tool_calls`` only on an assistant message that called tools; ``tool_call_id`` only on a tool result."""

    session_key: str
    seq: int
    role: str
    sender_id: str | None
    content: str
    created_at: str
    tool_calls: tuple[MessageToolCall, ...] = ()
    tool_call_id: str | None = None


def _session(row: tuple[Any, ...]) -> Session:
    return Session(OrgId(row[0]), row[1], AgentId(row[2]), row[3], row[4], int(row[5]), row[6], row[7], row[8],
                   row[9])


def _listed(row: tuple[Any, ...]) -> ListedSession:
    return ListedSession(_session(row[:10]), int(row[10]), row[11])


def _message(row: tuple[Any, ...]) -> SessionMessage:
    return SessionMessage(row[0], int(row[1]), row[2], row[3], row[4], row[5], _stored_calls(row[6]), row[7])


def _stored_calls(text: str | None) -> tuple[MessageToolCall, ...]:
    """The stored JSON list as calls; what cannot be read (never written by :func:`append_message`) is left
    out rather than failing a reader of the whole session."""
    if not text:
        return ()
    try:
        items = json.loads(text)
    except ValueError:
        return ()
    calls: list[MessageToolCall] = []
    for item in items if isinstance(items, list) else ():
        if (isinstance(item, dict) and isinstance(item.get("id"), str) and isinstance(item.get("name"), str)
                and isinstance(item.get("arguments"), dict)):
            calls.append(MessageToolCall(item["id"], item["name"], item["arguments"]))
    return tuple(calls)


def _tool_calls(value: object, role: str) -> tuple[tuple[MessageToolCall, ...], str | None]:
    """The calls and their stored JSON, or :class:`InvalidInputError` naming the field (``tool_calls[i].id``…).

    Each call is a :class:`MessageToolCall` or a mapping with ``id``, ``name`` and ``arguments``; an empty
    sequence is no calls."""
    if value is None:
        return (), None
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence):
        raise InvalidInputError(f"tool_calls is a {type(value).__name__}; expected a list of "
                                "{id, name, arguments}", field="tool_calls", value=None)
    if not value:
        return (), None
    if role != "assistant":
        raise InvalidInputError(f"tool_calls are given on a {role!r} message; only an assistant message calls "
                                "tools", field="tool_calls", value=None)
    calls: list[MessageToolCall] = []
    for index, item in enumerate(value):
        where = f"tool_calls[{index}]"
        if isinstance(item, Mapping):
            fields = (item.get("id"), item.get("name"), item.get("arguments"))
        elif isinstance(item, MessageToolCall):
            fields = (item.id, item.name, item.arguments)
        else:
            raise InvalidInputError(f"{where} is a {type(item).__name__}; expected {{id, name, arguments}}",
                                    field=where, value=None)
        call_id = require_label(fields[0], field=f"{where}.id", max_length=TOOL_CALL_ID_MAX_LENGTH)
        name = require_label(fields[1], field=f"{where}.name", max_length=TOOL_CALL_ID_MAX_LENGTH)
        if not call_id or not name:
            empty = "id" if not call_id else "name"
            raise InvalidInputError(f"{where}.{empty} is empty", field=f"{where}.{empty}", value="")
        arguments = fields[2]
        if not isinstance(arguments, Mapping):
            raise InvalidInputError(f"{where}.arguments is a {type(arguments).__name__}; expected a JSON object",
                                    field=f"{where}.arguments", value=None)
        arguments = dict(arguments)
        check_json(arguments, f"{where}.arguments")
        if any(call.id == call_id for call in calls):
            raise InvalidInputError(f"{where}.id {call_id!r} is used by an earlier call of the message; each "
                                    "call needs its own id", field=f"{where}.id", value=call_id)
        calls.append(MessageToolCall(call_id, name, arguments))
    try:
        text = json.dumps([{"id": c.id, "name": c.name, "arguments": c.arguments} for c in calls],
                          separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise InvalidInputError(f"tool_calls is not JSON-serialisable: {error}", field="tool_calls",
                                value=None) from None
    return tuple(calls), check_json_size(text, "tool_calls", max_bytes=MESSAGE_MAX_LENGTH)


def _tool_call_id(value: object, role: str) -> str | None:
    if value is None:
        return None
    if role != "tool":
        raise InvalidInputError(f"tool_call_id is given on a {role!r} message; only a tool result answers a call",
                                field="tool_call_id", value=value)
    call_id = require_label(value, field="tool_call_id", max_length=TOOL_CALL_ID_MAX_LENGTH)
    if not call_id:
        raise InvalidInputError("tool_call_id is empty; expected the id of the call the result answers",
                                field="tool_call_id", value=value)
    return call_id


def parse_session_key(value: object) -> str:
    """``value`` as a session key (non-empty, at most 200 characters, no control characters)."""
    return require_label(value, field="session_key", max_length=SESSION_KEY_MAX_LENGTH)


def _role(value: object) -> str:
    if value not in MESSAGE_ROLES:
        raise InvalidInputError(f"role {value!r} is unknown; expected one of {', '.join(MESSAGE_ROLES)}",
                                field="role", value=value)
    return str(value)


def open_session(tx: Tx, scope: Scope, session_key: str, agent_id: str, user_id_scope: str, *,
                 channel: str | None = None, conversation: str | None = None) -> Session:
    """Start a session of an agent of the tenant in a memory scope; an existing key is a conflict.

    ``user_id_scope`` is the SCOPE (``group:telegram:<chat>`` in a group), not the sender: all members of a
    group share the session.  It may be empty (system contexts have none).  ``channel`` and ``conversation``
    say where it happens, so a message can be sent into it later (``session_send``).
    """
    key = parse_session_key(session_key)
    agent = agents.get_agent(tx, scope, parse_id(agent_id, "agent"))
    return open_session_of(tx, scope, key, agent, user_id_scope, channel=channel, conversation=conversation)


def open_session_of(tx: Tx, scope: Scope, session_key: str, agent: agents.Agent, user_id_scope: str, *,
                    channel: str | None = None, conversation: str | None = None) -> Session:
    """:func:`open_session` for an agent the caller read in ``tx`` (it is the scope's and live: no second
    read of it); the other values as :func:`open_session` checks them."""
    if agent.tenant_id != scope.tenant_id:
        raise NotFoundError("agent", agent.id)
    key = parse_session_key(session_key)
    user_scope = require_label(user_id_scope, field="user_id_scope", allow_empty=True)
    where = None if channel is None else require_label(channel, field="channel", max_length=50)
    name = None if conversation is None else require_label(conversation, field="conversation", max_length=500)
    stamp = now()
    try:
        tx.execute(_INSERT, {"tenant_id": scope.tenant_id, "session_key": key, "agent_id": agent.id,
                             "user_id": user_scope, "status": "open", "compaction_count": 0, "created_at": stamp,
                             "channel": where, "conversation": name})
    except UniqueViolation:  # the primary key (tenant_id, session_key) is the table's only unique rule
        raise ConflictError(f"session_key {key!r} is already used by another session of tenant {scope.tenant_id}",
                            field="session_key", value=key) from None
    return Session(scope.tenant_id, key, agent.id, user_scope, "open", 0, stamp, None, where, name)


def open_conversations(tx: Tx, scope: Scope, agent_id: str, *, limit: int = 50) -> list[Session]:
    """The agent's open sessions that know where they happen (a channel), newest first, at most ``limit``."""
    agent = parse_id(agent_id, "agent")
    return [_session(row) for row in tx.all(_OPEN_CONVERSATIONS, {"tenant_id": scope.tenant_id, "agent_id": agent,
                                                                  "limit": limit})]


def list_agent_sessions(tx: Tx, scope: Scope, agent_id: str, *, user_id: str | None = None,
                        status: str | None = None, after: Sequence[Any] | None = None,
                        limit: int | None = None) -> list[ListedSession]:
    """The agent's sessions (the agent must be in the tenant), newest activity first (all, or a page after the
    key ``after``): only those in the memory scope ``user_id`` if given, only ``status`` ones (``open``,
    ``completed``) if given.  Who may see which scope is the caller's to decide (the gateway filters by it)."""
    agent = agents.get_agent(tx, scope, parse_id(agent_id, "agent"))
    params: dict[str, Any] = {"tenant_id": scope.tenant_id, "agent_id": agent.id}
    if user_id is not None:
        params["user_id"] = require_label(user_id, field="user_id", allow_empty=True)
    if status is not None:
        if status not in SESSION_STATUSES:
            raise InvalidInputError(f"status {status!r} is unknown; expected one of {', '.join(SESSION_STATUSES)}",
                                    field="status", value=status)
        params["status"] = status
    pages = _AGENT_PAGES[user_id is not None, status is not None]
    return pages.fetch(tx, params, _listed, after=after, limit=limit)


def get_session(tx: Tx, scope: Scope, session_key: str, *, lock: bool = False) -> Session:
    """The session with this key in the scope's tenant, or :class:`NotFoundError`.

    ``lock``: its row is locked until ``tx`` ends (a writing transaction), as :func:`append_message` locks it, so
    a message can then be appended with :func:`append_to_locked` without locking it again — the read and the
    lock in one statement."""
    key = parse_session_key(session_key)
    row = tx.one(_GET_LOCKED if lock else _GET, {"tenant_id": scope.tenant_id, "session_key": key})
    if row is None:
        raise NotFoundError("session", key)
    return _session(row)


def append_message(tx: Tx, scope: Scope, session_key: str, role: str, content: str,  # noqa: PLR0917
                   sender_id: str | None = None, *, tool_calls: Sequence[MessageToolCall | Mapping[str, Any]]
                   | None = None, tool_call_id: str | None = None) -> SessionMessage:
    """Append a message under the session's next ``seq``; a completed session takes no more messages.

    ``sender_id`` is the ACTOR (the individual sender), never the group scope.  ``tool_calls`` (an assistant
    message only) and ``tool_call_id`` (a tool message only) store tool use as structures (see the module
    docstring); a value on another role, or one that is not well formed, is :class:`InvalidInputError`
    naming the field.  A caller storing a call and its results writes them in one transaction.
    """
    key = parse_session_key(session_key)
    role = _role(role)
    text = require_text(content, field="content", max_length=MESSAGE_MAX_LENGTH, allow_empty=True)
    sender = None if sender_id is None else require_label(sender_id, field="sender_id")
    calls, calls_json = _tool_calls(tool_calls, role)
    answers = _tool_call_id(tool_call_id, role)
    params = {"tenant_id": scope.tenant_id, "session_key": key}
    status = tx.scalar(_LOCK_STATUS, params)
    if status is None:
        raise NotFoundError("session", key)
    return _append(tx, key, status, params, role, sender, text, calls, calls_json, answers)


def append_to_locked(tx: Tx, scope: Scope, session: Session, role: str, content: str,  # noqa: PLR0917
                     sender_id: str | None = None, *, tool_calls: Sequence[MessageToolCall | Mapping[str, Any]]
                     | None = None, tool_call_id: str | None = None) -> SessionMessage:
    """:func:`append_message` to a session whose row ``tx`` has locked already — read with
    ``get_session(…, lock=True)`` or opened (inserted) in ``tx`` — so its status as read is still its status
    and the lock is not taken again: one statement instead of two (the opening transaction of every run).
    The same checks and the same refusals as :func:`append_message`."""
    if session.tenant_id != scope.tenant_id:
        raise NotFoundError("session", session.session_key)
    role = _role(role)
    text = require_text(content, field="content", max_length=MESSAGE_MAX_LENGTH, allow_empty=True)
    sender = None if sender_id is None else require_label(sender_id, field="sender_id")
    calls, calls_json = _tool_calls(tool_calls, role)
    answers = _tool_call_id(tool_call_id, role)
    params = {"tenant_id": scope.tenant_id, "session_key": session.session_key}
    return _append(tx, session.session_key, session.status, params, role, sender, text, calls, calls_json, answers)


def _append(tx: Tx, key: str, status: str, params: dict[str, Any], role: str,  # noqa: PLR0917
            sender: str | None, text: str, calls: tuple[MessageToolCall, ...], calls_json: str | None,
            answers: str | None) -> SessionMessage:
    """The message under the next ``seq`` of a session whose row is locked and whose ``status`` was read."""
    if status != "open":
        raise ConflictError(f"session {key!r} is {status}; it takes no more messages", field="session_key",
                            value=key)
    stamp = now()
    seq = int(tx.scalar(_INSERT_NEXT_MESSAGE, {**params, "role": role, "sender_id": sender, "content": text,
                                               "created_at": stamp, "tool_calls": calls_json,
                                               "tool_call_id": answers}))
    return SessionMessage(key, seq, role, sender, text, stamp, calls, answers)


def list_messages(tx: Tx, scope: Scope, session_key: str, *, after_seq: int = 0,
                  limit: int = 1000) -> list[SessionMessage]:
    """The session's messages with ``seq > after_seq``, oldest first, at most ``limit`` (1-10000).

    A missing session is :class:`NotFoundError`, not an empty list, so a wrong key cannot pass for a new one.
    """
    key = parse_session_key(session_key)
    _check_page(after_seq, limit)
    return session_history(tx, scope, get_session(tx, scope, key), after_seq=after_seq, limit=limit)


def session_history(tx: Tx, scope: Scope, session: Session, *, after_seq: int = 0,
                    limit: int = 1000) -> list[SessionMessage]:
    """:func:`list_messages` of a session the caller has read or opened in ``tx``: its record is the proof that
    it exists in the scope's tenant, so it is not read again (the history path of every run)."""
    if session.tenant_id != scope.tenant_id:
        raise NotFoundError("session", session.session_key)
    _check_page(after_seq, limit)
    rows = tx.all(_LIST_MESSAGES, {"tenant_id": scope.tenant_id, "session_key": session.session_key,
                                   "after_seq": after_seq, "limit": limit})
    return [_message(row) for row in rows]


def newest_history(tx: Tx, scope: Scope, session: Session, *, limit: int = 1000) -> list[SessionMessage]:
    """The session's newest ``limit`` messages (1-10000), oldest first: one indexed read of the window, however
    long the session is.  ``session`` is a record the caller read or opened in ``tx`` (see
    :func:`session_history`)."""
    if session.tenant_id != scope.tenant_id:
        raise NotFoundError("session", session.session_key)
    _check_page(0, limit)
    rows = tx.all(_NEWEST_MESSAGES, {"tenant_id": scope.tenant_id, "session_key": session.session_key,
                                     "limit": limit})
    return [_message(row) for row in reversed(rows)]


def _check_page(after_seq: object, limit: object) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 10_000:
        raise InvalidInputError(f"limit {limit!r} must be an integer from 1 to 10000", field="limit", value=limit)
    if isinstance(after_seq, bool) or not isinstance(after_seq, int) or after_seq < 0:
        raise InvalidInputError(f"after_seq {after_seq!r} must be a non-negative integer", field="after_seq",
                                value=after_seq)


def complete_session(tx: Tx, scope: Scope, session_key: str) -> Session:
    """Mark the session completed (status and ``completed_at`` only); completing it again changes nothing."""
    key = parse_session_key(session_key)
    tx.execute(_COMPLETE, {"tenant_id": scope.tenant_id, "session_key": key, "open": "open",
                           "completed": "completed", "now": now()})
    return get_session(tx, scope, key)


def complete(tx: Tx, scope: Scope, session: Session) -> Session:
    """:func:`complete_session` of a session the caller read in ``tx``: the completed session, without reading
    it again (one statement); one completed already is returned as it is."""
    if session.status != "open":
        return session
    stamp = tx.scalar(_COMPLETE_OPEN, {"tenant_id": scope.tenant_id, "session_key": session.session_key,
                                       "open": "open", "completed": "completed", "now": now()})
    if stamp is None:  # completed (or deleted) by another transaction since it was read
        return get_session(tx, scope, session.session_key)
    return replace(session, status="completed", completed_at=stamp)


def delete_session(tx: Tx, scope: Scope, session_key: str) -> None:
    """Delete the session and its messages (what was learned from it — memory, episodic summaries — stays);
    a missing one is :class:`NotFoundError`.  A message sent to its conversation later opens a new session."""
    key = parse_session_key(session_key)
    if tx.execute(_DELETE, {"tenant_id": scope.tenant_id, "session_key": key}).rowcount == 0:
        raise NotFoundError("session", key)


def increment_compaction(tx: Tx, scope: Scope, session_key: str) -> int:
    """Count one more compaction of the session, atomically; returns the new count."""
    key = parse_session_key(session_key)
    value = tx.scalar(_INCREMENT_COMPACTION, {"tenant_id": scope.tenant_id, "session_key": key, "step": 1})
    if value is None:
        raise NotFoundError("session", key)
    return int(value)


#: The keysets of :func:`list_agent_sessions`, by ``(scope given, status given)``.
_AGENT_PAGES: Final = {(scoped, stated): _agent_pages(scoped=scoped, stated=stated)
                       for scoped in (False, True) for stated in (False, True)}
#: The listing's keyset for the API's cursors: every filter's keyset orders and keys the same way.
AGENT_PAGES: Final = _AGENT_PAGES[False, False]
