"""``/v1/sessions``: open a session, append and read its messages, complete it (publishing
``session.completed`` in the same transaction), delete it; ``/v1/agents/{agent}/sessions``: an agent's
sessions.  Each route is one transaction that reads each row once.

A session is addressed by its key, its only identifier (unique per organization; it may contain ``/``, so
the path parameter takes the rest of the path). Another organization's session and a missing one get the
same 404.  The session's ``user_id`` is the memory SCOPE; each message's ``sender_id`` is the ACTOR (the
key's user), never taken from the request.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query, Response

from agentfy.events.consolidation.episodic import publish_completed
from agentfy.gateway.auth import Principal
from agentfy.gateway.deps import Authenticated
from agentfy.gateway.errors import fields_as_sent
from agentfy.gateway.pages import Cursor, Limit, Page, decode_cursor, empty, encode_cursor, invalid_cursor, paged
from agentfy.gateway.resolve import agent_in, agent_loop
from agentfy.gateway.routes.agents import AgentRef
from agentfy.gateway.routes.schemas_data import (
    MessageIn,
    MessageOut,
    SessionCompletedOut,
    SessionIn,
    SessionListedOut,
    SessionOut,
    ToolCallOut,
)
from agentfy.gateway.routing import ApiRoute
from agentfy.permissions.access import authorize, require_scope, scope_filter
from agentfy.store.db import Tx
from agentfy.store.inputs import INT64_MAX, LABEL_MAX_LENGTH, LABEL_PATTERN
from agentfy.store.paging import DEFAULT_LIMIT
from agentfy.store.repos import sessions
from agentfy.store.repos.sessions import SESSION_KEY_MAX_LENGTH, ListedSession, Session, SessionMessage

router = APIRouter(tags=["sessions"], route_class=ApiRoute)
SessionKey = Annotated[str, Path(description="The session's key (it may contain `/`; no control characters).",
                                 min_length=1, max_length=SESSION_KEY_MAX_LENGTH,
                                 json_schema_extra={"pattern": LABEL_PATTERN})]
ScopeFilter = Annotated[str | None, Query(max_length=LABEL_MAX_LENGTH, json_schema_extra={"pattern": LABEL_PATTERN},
                                          description=("Only the sessions in this memory scope: a person's user ID "
                                                       "(a direct chat), `group:…` (a group chat), empty (the "
                                                       "agent's own)."))]
StatusFilter = Annotated[Literal["open", "completed"] | None, Query(description="Only the sessions in this state.")]


def session_out(session: Session) -> SessionOut:
    return SessionOut(session_key=session.session_key, agent_id=session.agent_id, user_id=session.user_id,
                      status=session.status, compaction_count=session.compaction_count, created_at=session.created_at,
                      completed_at=session.completed_at, channel=session.channel, conversation=session.conversation)


def listed_out(listed: ListedSession) -> SessionListedOut:
    return SessionListedOut(**session_out(listed.session).model_dump(), message_count=listed.message_count,
                            last_activity_at=listed.last_activity_at)


def message_out(message: SessionMessage) -> MessageOut:
    return MessageOut(session_key=message.session_key, seq=message.seq, role=message.role,
                      sender_id=message.sender_id, content=message.content, created_at=message.created_at,
                      tool_calls=[ToolCallOut(id=c.id, name=c.name, arguments=dict(c.arguments))
                                  for c in message.tool_calls],
                      tool_call_id=message.tool_call_id)


def _session_in_reach(tx: Tx, who: Principal, operation: str, session_key: str) -> Session:
    """The session, if the caller may use its scope; a session in a scope it may not use is "not found"."""
    session = sessions.get_session(tx, who.scope, session_key)
    require_scope(who, operation, session.user_id, row=("session", session_key))
    return session


@router.post("/sessions", operation_id="sessions.open", status_code=201, response_model=SessionOut)
def open_session(body: SessionIn, call: Authenticated) -> SessionOut:
    """Open a session of an agent (named by ID or key) in a memory scope.

    ``user_id`` (the scope) defaults to the person the key acts as.  A member may open sessions in its own
    person's scope only (another person's, a group's or the agent's own: 403); owners, admins and operators
    in any scope.  A session key already used in the organization is 409.
    """
    scope = body.user_id if body.user_id is not None else (call.who.user_id or "")
    require_scope(call.who, "sessions.open", scope)
    with call.gateway.db.transaction() as tx:
        agent = agent_in(tx, call.who, body.agent)
        with fields_as_sent(user_id_scope="user_id"):
            session = sessions.open_session_of(tx, call.who.scope, body.session_key, agent, scope)
    return session_out(session)


@router.get("/agents/{agent}/sessions", operation_id="sessions.list", response_model=Page[SessionListedOut])
def list_agent_sessions(agent: AgentRef, call: Authenticated, *, user_id: ScopeFilter = None,
                        status: StatusFilter = None, limit: Limit = DEFAULT_LIMIT,
                        cursor: Cursor = None) -> Page[SessionListedOut]:
    """The agent's sessions, newest activity first, a page at a time; one memory scope's with ``user_id``, one
    state's with ``status``.  Only sessions the caller could read one by one (``GET /v1/sessions/{key}``) are
    listed: a member acting as a person sees its own person's scope's, and naming another scope is 403; a key
    acting as nobody sees none.  Another organization's agent is 404, like a missing one."""
    agent_id = agent_loop(call.gateway, call.who, agent).agent.id
    nothing, scope = scope_filter(call.who, "sessions.list", user_id)
    if nothing:
        return empty()
    return paged(call.gateway, call.who, "sessions.list", sessions.AGENT_PAGES, fetch=lambda tx, **page:
                 sessions.list_agent_sessions(tx, call.who.scope, agent_id, user_id=scope, status=status, **page),
                 out=listed_out, limit=limit, cursor=cursor)


# The routes with a suffix come before GET /sessions/{session_key}: the key takes the rest of the path.
@router.post("/sessions/{session_key:path}/messages", operation_id="sessions.messages.append", status_code=201,
             response_model=MessageOut)
def append_message(session_key: SessionKey, body: MessageIn, call: Authenticated) -> MessageOut:
    """Append a message to an open session in a scope the caller may use (``user`` messages: member or higher;
    ``assistant``, ``system``, ``tool``: operator or higher). The sender is the key's user. A completed
    session is 409; a session the caller may not see is 404."""
    if body.role != "user":
        authorize(call.who, "sessions.messages.append", role="operator")
    with call.gateway.db.transaction() as tx:
        _session_in_reach(tx, call.who, "sessions.messages.append", session_key)
        message = sessions.append_message(tx, call.who.scope, session_key, body.role, body.content,
                                          sender_id=call.who.user_id)
    return message_out(message)


@router.get("/sessions/{session_key:path}/messages", operation_id="sessions.messages.list",
            response_model=Page[MessageOut])
def list_messages(session_key: SessionKey, call: Authenticated, *,
                  after_seq: Annotated[int, Query(ge=0, le=INT64_MAX, description="Only messages after this seq.")] = 0,
                  limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None) -> Page[MessageOut]:
    """The session's messages, oldest first, a page at a time (``cursor``, or ``after_seq``). A missing session,
    or one the caller may not see, is 404, not an empty list."""
    if cursor is not None:
        key = decode_cursor(call.gateway.signing_secret, call.who, "sessions.messages.list", cursor)
        if len(key) != 1 or type(key[0]) is not int:
            raise invalid_cursor()
        after_seq = key[0]
    with call.gateway.db.transaction(write=False) as tx:
        session = _session_in_reach(tx, call.who, "sessions.messages.list", session_key)
        messages = sessions.session_history(tx, call.who.scope, session, after_seq=after_seq, limit=limit + 1)
    following = None
    if len(messages) > limit:
        messages = messages[:limit]
        following = encode_cursor(call.gateway.signing_secret, call.who, "sessions.messages.list", [messages[-1].seq])
    return Page[MessageOut](items=[message_out(m) for m in messages], next_cursor=following)


@router.post("/sessions/{session_key:path}/complete", operation_id="sessions.complete",
             response_model=SessionCompletedOut)
def complete_session(session_key: SessionKey, call: Authenticated) -> SessionCompletedOut:
    """Complete the session and publish ``session.completed`` (with the agent's ID) in the same
    transaction. Completing it again changes nothing and publishes nothing."""
    with call.gateway.db.transaction() as tx:
        session = sessions.complete(tx, call.who.scope, _session_in_reach(tx, call.who, "sessions.complete",
                                                                          session_key))
        event = publish_completed(tx, call.who.scope, session)
    return SessionCompletedOut(**session_out(session).model_dump(), event_id=event.id if event else None)


@router.delete("/sessions/{session_key:path}", operation_id="sessions.delete", status_code=204,
               response_class=Response)
def delete_session(session_key: SessionKey, call: Authenticated) -> Response:
    """Delete the session and its messages (operator or higher, in any scope).  What the agent learned from it
    stays: its memory and the episodic summaries of its completed parts.  A message sent to the same
    conversation afterwards starts a new session.  A missing session, or one the caller may not see, is 404."""
    with call.gateway.db.transaction() as tx:
        _session_in_reach(tx, call.who, "sessions.delete", session_key)
        sessions.delete_session(tx, call.who.scope, session_key)
    return Response(status_code=204)


@router.get("/sessions/{session_key:path}", operation_id="sessions.get", response_model=SessionOut)
def get_session(session_key: SessionKey, call: Authenticated) -> SessionOut:
    """One session by key. Another organization's, one in a scope the caller may not see, and a missing one:
    the same 404."""
    with call.gateway.db.transaction(write=False) as tx:
        return session_out(_session_in_reach(tx, call.who, "sessions.get", session_key))
