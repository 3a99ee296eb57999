"""``sessions_list`` and ``session_send``: an agent posts into another of its own conversations.

``session_send`` hands the text to the runtime as a message into the other conversation (sender
``session_send_tool``, the person who asked propagated as the origin sender), so the agent's run there acts
for that person — in a group, with that person's grant of that group — and its reply goes to that chat.  Only
the agent's own conversations: another agent's session, or one of another organization (the same answer as a
key that names nothing), is refused; so is the conversation the run is in (answer there instead).  Counts as
a hand-off (the runtime's depth and per-agent limits apply): two conversations cannot ping-pong forever.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Final

from agentfy.identity import Scope
from agentfy.runtime.model import ToolSpec
from agentfy.runtime.tools import Tool, ToolEnv, ToolError, parameters, string, text
from agentfy.store.errors import InvalidInputError, NotFoundError
from agentfy.store.repos import sessions
from agentfy.store.repos.sessions import Session

LISTED: Final = 20
TEXT_MAX_LENGTH: Final = 20_000


def _listed(env: ToolEnv) -> list[Session]:
    with env.db.transaction(write=False) as tx:
        return sessions.open_conversations(tx, Scope(env.agent.tenant_id), env.agent.id, limit=LISTED + 1)


async def sessions_list(env: ToolEnv, arguments: Mapping[str, Any]) -> str:
    found = [s for s in await asyncio.to_thread(_listed, env) if s.conversation != env.conversation][:LISTED]
    if not found:
        return "sessions_list: no other open conversation"
    return "sessions_list:\n" + "\n".join(f"- {s.session_key} ({s.channel} {s.conversation})" for s in found)


def _target(env: ToolEnv, session_key: str) -> Session:
    """The open session ``session_key`` of this agent, else a :class:`ToolError` saying why not."""
    try:
        with env.db.transaction(write=False) as tx:
            session = sessions.get_session(tx, Scope(env.agent.tenant_id), session_key)
    except (NotFoundError, InvalidInputError):
        session = None
    if session is None or session.agent_id != env.agent.id:
        raise ToolError(f"session_send: {session_key!r} is not a conversation of @{env.agent.agent_key} (expected a "
                        "session key from sessions_list)")
    if session.status != "open" or session.channel is None or session.conversation is None:
        raise ToolError(f"session_send: conversation {session_key!r} is closed or has no chat to post to")
    if session.conversation == env.conversation and session.channel == env.channel:
        raise ToolError("session_send: that is this conversation; answer here instead")
    return session


async def session_send(env: ToolEnv, arguments: Mapping[str, Any]) -> str:
    key, message = text(arguments, "session"), text(arguments, "text")
    target = await asyncio.to_thread(_target, env, key)
    env.delegation.send_to_session(env, target, message)
    return f"session_send: sent to {target.conversation}; the reply goes to that chat"


SESSIONS_LIST: Final = Tool(ToolSpec("sessions_list", "List this agent's other open conversations (their session "
                                     "keys, channels and chats), for session_send.", parameters({}, ())),
                            sessions_list)
SESSION_SEND: Final = Tool(ToolSpec("session_send", "Post a message into another of this agent's conversations; the "
                                    "agent answers it there, for the person who asked.",
                                    parameters({"session": string("the session key, from sessions_list",
                                                                  max_length=200),
                                                "text": string("what to post", max_length=TEXT_MAX_LENGTH)},
                                               ("session", "text"))), session_send, hands_off=True)
