"""One signed-in request to the console: its session, the API as its key, and who it is for the frame.

:func:`visit` is every screen's first step: no session (or an expired, forged one) is :class:`SignInNeeded`;
the organization's slug comes from the API (``GET /v1/org``), so a key revoked since sign-in is the API's 401
and back to sign-in.  Which links and buttons the frame shows is read from the one access policy for the
key's principal (the same look-up the API makes) — a matter of display only: every action still goes to the
API, which decides.  :func:`checked_form` is every POST's first step: the form, once its CSRF token matched
(:func:`submitted`: both, and where a refusal goes back to).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from fastapi.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.requests import HTTPConnection, Request

from agentfy.gateway.console.api import ConsoleApi
from agentfy.gateway.console.layout import Viewer
from agentfy.gateway.console.session import ConsoleSession, SessionSeal, csrf_matches
from agentfy.gateway.deps import GatewayState, lookup_principal
from agentfy.permissions.access import RULES, AccessDenied, authorize

#: The operation whose permission marks an admin of the console (the Operations screens).
ADMIN_OPERATION: Final = "credentials.list"
#: The operation the Usage screen calls (its link is shown to the roles that may).
USAGE_OPERATION: Final = "usage.list"


class SignInNeeded(Exception):
    """No usable session: the answer is the sign-in page."""


class CsrfRefused(Exception):
    """A POST without this session's CSRF token."""


@dataclass(frozen=True, slots=True)
class Visit:
    request: Request
    session: ConsoleSession
    api: ConsoleApi
    viewer: Viewer
    allowed: frozenset[str]

    def may(self, operation: str) -> bool:
        """Whether the access policy lets this key call ``operation`` (for showing its button)."""
        return operation in self.allowed


def seal_of(request: HTTPConnection) -> SessionSeal:
    seal: SessionSeal = request.app.state.seal
    return seal


def gateway_app_of(request: HTTPConnection) -> object:
    """The gateway application the console calls (the console is mounted inside it)."""
    return request.app.state.gateway_app


def _role_and_operations(gateway: GatewayState, api_key: str) -> tuple[str, frozenset[str]]:
    """The key's role and the operations the access policy lets it call."""
    who = lookup_principal(gateway, api_key)
    allowed = set()
    for operation in RULES:
        try:
            authorize(who, operation)
        except AccessDenied:
            continue
        allowed.add(operation)
    return who.role, frozenset(allowed)


async def visit(request: Request) -> Visit:
    """The signed-in visit, or :class:`SignInNeeded`; an API refusal of the key is its :class:`ApiFailure`."""
    session = seal_of(request).read(request)
    if session is None or session.api_key is None:
        raise SignInNeeded()
    gateway_app = gateway_app_of(request)
    api = ConsoleApi(gateway_app, session.api_key)  # type: ignore[arg-type]
    org = await api.get("/org")
    gateway: GatewayState = gateway_app.state.gateway  # type: ignore[attr-defined]
    role, allowed = await run_in_threadpool(_role_and_operations, gateway, session.api_key)
    viewer = Viewer(str(org["slug"]), role, session.csrf, ADMIN_OPERATION in allowed, USAGE_OPERATION in allowed)
    request.state.viewer = viewer
    return Visit(request, session, api, viewer, allowed)


async def checked_form(request: Request, session: ConsoleSession | None) -> FormData:
    """The POSTed form, or :class:`CsrfRefused` when its ``csrf`` field is not this session's token."""
    form = await request.form()
    if not csrf_matches(session, form.get("csrf")):
        raise CsrfRefused()
    return form


async def submitted(request: Request, back: str) -> tuple[Visit, FormData]:
    """Every form handler's first steps, in order: the signed-in :func:`visit`, its form once the CSRF token
    matched (:func:`checked_form`), and ``back`` — the screen a refusal of the API offers to go back to."""
    current = await visit(request)
    form = await checked_form(request, current.session)
    request.state.back = back
    return current, form


def text_of(form: FormData, name: str) -> str:
    """A form field as text (absent: empty)."""
    value = form.get(name)
    return value if isinstance(value, str) else ""
