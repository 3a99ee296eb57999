"""Operations, credentials: the organization's named secrets — their names and dates, masked; store (or rotate)
one, delete one.

Each is the API's ``/v1/credentials`` (``GET``, ``PUT``/``DELETE`` ``{name}``).  No secret is ever shown: the API
never answers one, the list shows a fixed mask, the secret field is a password field the browser does not
fill in, and after storing one the page says only whether it was new or replaced one (not even the API's
hint).  A server without the credentials key answers storing with its 503, shown as the API's error.
"""

from __future__ import annotations

from typing import Any, Final

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from agentfy.gateway.console.api import segment
from agentfy.gateway.console.layout import esc, field, post_form, table
from agentfy.gateway.console.screens.ops_forms import SCREEN, done, posted
from agentfy.gateway.console.visit import Visit, text_of

router = APIRouter()
#: What stands for every secret: the same whatever the secret, so it says nothing of it.
MASK: Final = "••••••••"
_NO_AUTOCOMPLETE: Final = ' autocomplete="off"'


def _row(current: Visit, credential: dict[str, Any]) -> list[str]:
    name = str(credential["name"])
    delete = "" if not current.may("credentials.delete") else post_form(
        f"{SCREEN}/credentials/{segment(name)}/delete", current.viewer.csrf, "", label=f"Delete {name}",
        extra=' class="inline danger"')
    return [f"<code>{esc(name)}</code>", f'<span class="masked" aria-label="hidden">{MASK}</span>',
            esc(credential["created_at"]), esc(credential["rotated_at"] or "never"), delete]


async def section(current: Visit) -> str:
    """The credentials' part of the Operations screen (``credentials.list`` is what makes an admin)."""
    found = await current.api.get("/credentials")
    body = table(("Name", "Secret", "Stored", "Rotated", ""), (_row(current, c) for c in found["items"]),
                 table_id="credentials", empty="No credentials.")
    if current.may("credentials.put"):
        body += ("<h3>Store or rotate a credential</h3>" + post_form(
            f"{SCREEN}/credentials", current.viewer.csrf,
            field("credential_name", "Name (a lower-case slug, e.g. openai)", required=True, extra=_NO_AUTOCOMPLETE)
            + field("secret", "Secret (never shown again)", kind="password", required=True,
                    extra=' autocomplete="new-password"'), label="Store credential", extra=' id="store-credential"'))
    return '<h2 id="credentials-heading">Credentials</h2>' + body


@router.post("/operations/credentials")
async def store(request: Request) -> Response:
    current, form = await posted(request)
    name = text_of(form, "credential_name").strip()
    answer = await current.api.call("PUT", f"/credentials/{segment(name)}", json={"secret": text_of(form, "secret")})
    word = "credential_rotated" if answer.get("rotated") else "credential_stored"
    return done(request, word, "credentials")


@router.post("/operations/credentials/{name}/delete")
async def delete(request: Request, name: str) -> Response:
    current, _ = await posted(request)
    await current.api.delete(f"/credentials/{segment(name)}")
    return done(request, "credential_deleted", "credentials")
