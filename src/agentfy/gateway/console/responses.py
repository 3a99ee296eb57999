"""How the console answers: a page, a fragment for htmx, a redirect, and the error pages.

An API refusal is shown as the API gave it (its message, code and status) on a page with a way back; the
API's 401 (a key revoked since sign-in) and a missing session send the browser to sign-in, the session cookie
cleared.  htmx requests are redirected with ``HX-Redirect`` (a whole-page move), others with a 303.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from agentfy.gateway.console.api import ApiFailure
from agentfy.gateway.console.layout import Viewer, error_box, esc, page
from agentfy.gateway.console.session import SessionSeal
from agentfy.gateway.console.visit import CsrfRefused, SignInNeeded

SIGN_IN_PATH = "/console/sign-in"


def is_htmx(request: Request) -> bool:
    return request.headers.get("hx-request") == "true"


def html(content: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(content, status_code=status, headers={"cache-control": "no-store"})


def redirect(request: Request, url: str) -> Response:
    if is_htmx(request):
        return Response(status_code=200, headers={"hx-redirect": url})
    return Response(status_code=303, headers={"location": url, "cache-control": "no-store"})


def back_of(request: Request) -> str:
    """Where an error page links back to: the screen the request was about (set by the screen), else agents."""
    back = getattr(request.state, "back", None)
    return back if isinstance(back, str) else "/console/agents"


def failure_page(request: Request, failure: ApiFailure) -> Response:
    if failure.status == 401:
        return to_sign_in(request, refused=True)
    viewer: Viewer | None = getattr(request.state, "viewer", None)
    box = error_box(failure.status, failure.code, failure.message, field=failure.field,
                    value=failure.value)
    if is_htmx(request):
        return html(box, failure.status)
    body = f'{box}<p><a href="{esc(back_of(request))}">Back</a></p>'
    return html(page("Error", body, viewer=viewer), failure.status)


def to_sign_in(request: Request, *, refused: bool = False) -> Response:
    """To the sign-in page, the session cleared; ``refused``: the API no longer takes the key (the page says so,
    with a fixed sentence: nothing of the reason goes into the URL)."""
    response = redirect(request, f"{SIGN_IN_PATH}?refused=1" if refused else SIGN_IN_PATH)
    SessionSeal.clear(response, request)
    return response


async def on_failure(request: Request, error: Exception) -> Response:
    assert isinstance(error, ApiFailure)
    return failure_page(request, error)


async def on_sign_in_needed(request: Request, error: Exception) -> Response:
    assert isinstance(error, SignInNeeded)
    return to_sign_in(request)


async def on_csrf_refused(request: Request, error: Exception) -> Response:
    assert isinstance(error, CsrfRefused)
    return failure_page(request, ApiFailure(403, "csrf_token_invalid", "The form's security token is missing or "
                                                                       "stale: reload the page and try again."))
