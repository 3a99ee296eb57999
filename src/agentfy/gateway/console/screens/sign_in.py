"""Signing in with an API key and out again.

The key is checked by asking the API for the key's organization (``GET /v1/org``): a key the API refuses is
shown the API's error, and no session is made.  A good key starts a new session (a new CSRF token too), sealed
into the cookie; signing out clears it.  The sign-in form carries the token of a session without a key, made
when the form is shown, so a login form posted from elsewhere is refused as well.
"""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from agentfy.gateway.console.api import ApiFailure, ConsoleApi
from agentfy.gateway.console.layout import error_box, field, notice, page, post_form
from agentfy.gateway.console.responses import html, redirect, to_sign_in
from agentfy.gateway.console.session import ConsoleSession, new_session
from agentfy.gateway.console.visit import checked_form, gateway_app_of, seal_of, text_of

router = APIRouter()
HOME = "/console/agents"
_FORM_ID = ' id="sign-in"'
_REFUSED = "The API no longer accepts the key you signed in with; sign in again."


def _form(session: ConsoleSession, *, top: str = "", status: int = 200) -> Response:
    fields = field("api_key", "API key", kind="password", required=True, extra=' autocomplete="off"')
    body = (f"{top}<p>Sign in with an API key of your organization. The key stays in this browser's session "
            "cookie (unreadable to scripts, sent to this console only).</p>"
            f"{post_form('/console/sign-in', session.csrf, fields, label='Sign in', extra=_FORM_ID)}")
    return html(page("Sign in", body, viewer=None), status)


@router.get("/sign-in")
async def sign_in_form(request: Request, refused: str | None = None) -> Response:
    seal = seal_of(request)
    session = seal.read(request)
    if session is None or session.signed_in:
        session = new_session(None)
    response = _form(session, top=notice(_REFUSED) if refused else "")
    seal.write(response, request, session)
    return response


@router.post("/sign-in")
async def sign_in(request: Request) -> Response:
    seal = seal_of(request)
    session = seal.read(request)
    form = await checked_form(request, session)
    assert session is not None
    key = text_of(form, "api_key").strip()
    try:
        await ConsoleApi(gateway_app_of(request), key).get("/org")  # type: ignore[arg-type]
    except ApiFailure as failure:
        box = error_box(failure.status, failure.code, failure.message, field=failure.field, value=failure.value)
        return _form(session, top=box, status=failure.status)
    response = redirect(request, HOME)
    seal.write(response, request, new_session(key))
    return response


@router.post("/sign-out")
async def sign_out(request: Request) -> Response:
    await checked_form(request, seal_of(request).read(request))
    return to_sign_in(request)
