"""Conversations: talk to an agent and read a session's messages, tool calls and their results shown as such.

Sending is the chat route (``POST /v1/agents/{id}/messages``: the conversation is the signed-in key's
person's, one session per conversation name); its answer names the session, whose messages
(``GET /v1/sessions/{key}/messages``) are then shown.  Any session the key may read can be opened by its key.
With htmx the send form swaps in the session's messages; without it the browser is redirected to them.
"""

from __future__ import annotations

from typing import Any, Final

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from agentfy.gateway.console.api import ApiFailure, ConsoleApi, segment
from agentfy.gateway.console.layout import csrf_field, error_box, esc, field, json_block, page
from agentfy.gateway.console.responses import html, is_htmx, redirect
from agentfy.gateway.console.screens.agents import agent_url
from agentfy.gateway.console.visit import Visit, checked_form, text_of, visit

router = APIRouter()
#: Messages per page of a session.
PAGE_SIZE: Final = 100
DEFAULT_CONVERSATION: Final = "default"
#: Once the reply is in, the message box is emptied for the next one.
_CLEAR_AFTER_SENDING: Final = "hx-on::after-request=\"if (event.detail.successful) this.elements.text.value = ''\""


def conversation_url(agent_id: str, session_key: str | None = None, conversation: str | None = None) -> str:
    query = []
    if session_key is not None:
        query.append(f"session={segment(session_key)}")
    if conversation is not None:
        query.append(f"conversation={segment(conversation)}")
    return agent_url(agent_id, "/conversations") + ("?" + "&".join(query) if query else "")


def _tool_calls(message: dict[str, Any]) -> str:
    return "".join(
        f'<div class="tool-call"><span class="role">Tool call</span><code>{esc(call["name"])}</code> '
        f'<span class="meta">id <code>{esc(call["id"])}</code></span>{json_block(call["arguments"])}</div>'
        for call in message.get("tool_calls") or ())


def message_item(message: dict[str, Any]) -> str:
    """One message: its role and text; an assistant's tool calls with their arguments; a tool's result with the
    call it answers."""
    role = str(message["role"])
    if role == "tool":
        answers = message.get("tool_call_id")
        head = "Tool result" + (f' for <code>{esc(answers)}</code>' if answers else "")
        content = f"<pre>{esc(message['content'])}</pre>"
    else:
        head = esc(role)
        content = f'<p class="text">{esc(message["content"])}</p>' if message["content"] else ""
    return (f'<li class="msg {esc(role)}" data-seq="{esc(message["seq"])}"><span class="role">{head}</span>'
            f'<span class="meta">#{esc(message["seq"])} · {esc(message["created_at"])}</span>'
            f"{content}{_tool_calls(message)}</li>")


async def session_block(api: ConsoleApi, session_key: str, cursor: str | None = None) -> str:
    """The session's facts and one page of its messages (the API's 404 for one the key may not read)."""
    session = await api.get(f"/sessions/{segment(session_key)}")
    found = await api.get(f"/sessions/{segment(session_key)}/messages", limit=str(PAGE_SIZE), cursor=cursor)
    items = "".join(message_item(message) for message in found["items"])
    more = "" if found["next_cursor"] is None else (
        f'<p><a href="?session={esc(segment(session_key))}&amp;cursor={esc(segment(found["next_cursor"]))}">'
        "Later messages</a></p>")
    return (f'<section id="session-view" aria-live="polite"><h2>Session <code>{esc(session["session_key"])}</code>'
            f'</h2><p class="meta">{esc(session["status"])} · scope <code>{esc(session["user_id"] or "none")}</code>'
            f' · channel {esc(session.get("channel") or "none")}</p>'
            + (f'<ol class="messages" id="messages">{items}</ol>' if items else '<p class="empty">No messages.</p>')
            + more + "</section>")


def _send_form(current: Visit, agent_id: str, conversation: str) -> str:
    if not current.may("agents.messages.send"):
        return ""
    action = agent_url(agent_id, "/messages")
    fields = (field("conversation", "Conversation", value=conversation, required=True)
              + '<label for="text">Message</label><textarea id="text" name="text" required></textarea>')
    return (f'<h2>Send a message</h2><form method="post" action="{esc(action)}" id="send-form" '
            f'hx-post="{esc(action)}" hx-target="#session-view" hx-swap="outerHTML" '
            f'hx-disabled-elt="find button" {_CLEAR_AFTER_SENDING}>'
            f'{csrf_field(current.viewer.csrf)}{fields}'
            '<button type="submit" id="send">Send</button></form>')


@router.get("/agents/{agent_id}/conversations")
async def conversations(request: Request, agent_id: str, session: str | None = None,
                        conversation: str = DEFAULT_CONVERSATION, cursor: str | None = None) -> Response:
    current = await visit(request)
    request.state.back = agent_url(agent_id)
    agent = await current.api.get(f"/agents/{segment(agent_id)}")
    opened = (await session_block(current.api, session, cursor) if session
              else '<section id="session-view"><p class="empty">No session open.</p></section>')
    open_form = ('<h2>Open a session</h2><form method="get" class="inline" action="'
                 f'{esc(agent_url(agent["id"], "/conversations"))}">'
                 f'{field("session", "Session key", value=session or "", required=True)}'
                 '<button type="submit">Open</button></form>')
    body = (f'<p><a href="{esc(agent_url(agent["id"]))}">Agent {esc(agent["agent_key"])}</a></p>'
            + opened + _send_form(current, agent["id"], conversation) + open_form)
    return html(page(f"Conversations with {agent['agent_key']}", body, viewer=current.viewer, section="agents"))


@router.post("/agents/{agent_id}/messages")
async def send_message(request: Request, agent_id: str) -> Response:
    current = await visit(request)
    form = await checked_form(request, current.session)
    request.state.back = conversation_url(agent_id)
    conversation = text_of(form, "conversation").strip() or DEFAULT_CONVERSATION
    try:
        answer = await current.api.post(f"/agents/{segment(agent_id)}/messages",
                                        {"text": text_of(form, "text"), "conversation": conversation})
    except ApiFailure as failure:
        if not is_htmx(request):
            raise
        # The fragment keeps its place on the page, so the next message can be sent from the same form.
        box = error_box(failure.status, failure.code, failure.message, field=failure.field, value=failure.value)
        return html(f'<section id="session-view">{box}</section>', failure.status)
    if is_htmx(request):
        return html(await session_block(current.api, answer["session_key"]))
    return redirect(request, conversation_url(agent_id, answer["session_key"], conversation))
