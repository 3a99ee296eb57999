"""Conversations: talk to an agent and read a session's messages, tool calls and their results shown as such.

Sending is the chat route (``POST /v1/agents/{id}/messages``: the conversation is the signed-in key's
person's, one session per conversation name); its answer names the session, whose messages
(``GET /v1/sessions/{key}/messages``) are then shown.  Any session the key may read can be opened by its key.
With the page's script (``static/conversation.js``) the message is sent to the console's relay of the streamed
chat route (``POST …/messages/stream``: :mod:`agentfy.gateway.console.stream`) and the reply's pieces are
appended as they arrive; once the reply is in, the session's messages (tool calls and results as such) replace
them.  Without the script the form is an ordinary POST and the browser is redirected to the session; with htmx
alone (an ``HX-Request``) the answer is the session's messages as a fragment.
"""

from __future__ import annotations

from typing import Any, Final

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from agentfy.gateway.chat import sse
from agentfy.gateway.console.api import ApiFailure, ConsoleApi, segment
from agentfy.gateway.console.layout import STATIC, csrf_field, error_box, esc, field, json_block, page
from agentfy.gateway.console.responses import html, is_htmx, redirect, to_sign_in
from agentfy.gateway.console.screens.agents import agent_url
from agentfy.gateway.console.stream import open_stream
from agentfy.gateway.console.visit import Visit, checked_form, gateway_app_of, text_of, visit

router = APIRouter()
#: Messages per page of a session.
PAGE_SIZE: Final = 100
DEFAULT_CONVERSATION: Final = "default"
#: Once the reply is in, the message box is emptied for the next one.
#: How the relayed stream is answered (as the API's: never cached, never held back by a proxy).
_STREAM_HEADERS: Final = {"cache-control": "no-store", "x-accel-buffering": "no"}


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
            f'data-stream="{esc(agent_url(agent_id, "/messages/stream"))}" '
            f'data-view="{esc(agent_url(agent_id, "/conversations"))}">'
            f'{csrf_field(current.viewer.csrf)}{fields}'
            '<button type="submit" id="send">Send</button></form>'
            '<p id="stream-status" role="status" data-state="idle"></p>'
            f'<script src="{STATIC}/conversation.js" defer></script>')


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


def _error_event(failure: ApiFailure) -> str:
    """The API's refusal as the stream's ``error`` event (the shape of the API's own, its status inside)."""
    error: dict[str, Any] = {"code": failure.code, "message": failure.message, "status": failure.status}
    if failure.field is not None:
        error.update(field=failure.field, value=failure.value)
    return sse("error", {"error": error})


@router.post("/agents/{agent_id}/messages/stream")
async def stream_message(request: Request, agent_id: str) -> Response:
    """The chat route's streamed answer (``stream: true``) relayed as it comes: the API's ``delta`` events, then
    its ``reply`` or ``error``.  A refusal before the stream is one ``error`` event with the API's status; the
    API's 401 signs the browser out (a redirect to sign-in, which the page's script follows)."""
    current = await visit(request)
    form = await checked_form(request, current.session)
    conversation = text_of(form, "conversation").strip() or DEFAULT_CONVERSATION
    assert current.session.api_key is not None  # visit() answers sign-in otherwise
    body = {"text": text_of(form, "text"), "conversation": conversation, "stream": True}
    try:
        chunks = await open_stream(gateway_app_of(request), current.session.api_key,  # type: ignore[arg-type]
                                   f"/v1/agents/{segment(agent_id)}/messages", body)
    except ApiFailure as failure:
        if failure.status == 401:
            return to_sign_in(request, refused=True)
        return Response(_error_event(failure), status_code=failure.status, media_type="text/event-stream",
                        headers=_STREAM_HEADERS)
    return StreamingResponse(chunks, media_type="text/event-stream", headers=_STREAM_HEADERS)
