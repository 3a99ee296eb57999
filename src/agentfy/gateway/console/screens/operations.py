"""Operations (admins): the organization's API keys — issue one (its key shown this once), revoke one — and the
ID explainer (any value: which kind of ID, valid or why not, whether it is one of yours).

Keys are the API's ``/v1/org/api-keys`` (owners, by the access policy: an admin sees why not), the explainer its
``GET /v1/ids/{value}`` (the same explanation as ``agentfy ids``).  The screen is shown to the roles the access
policy makes admins; the API still decides every call.
"""

from __future__ import annotations

from typing import Any, Final

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from agentfy.gateway.console.api import ApiFailure, segment
from agentfy.gateway.console.layout import copyable, error_box, esc, field, json_block, page, post_form, table
from agentfy.gateway.console.responses import failure_page, html, redirect
from agentfy.gateway.console.visit import Visit, checked_form, text_of, visit
from agentfy.identity.roles import ROLES

router = APIRouter()
SCREEN: Final = "/console/operations"
_NO_AUTOCOMPLETE: Final = ' autocomplete="off"'


def _key_row(current: Visit, key: dict[str, Any]) -> list[str]:
    revoke = "" if key["revoked_at"] or not current.may("org.api_keys.revoke") else post_form(
        f"{SCREEN}/api-keys/{segment(key['id'])}/revoke", current.viewer.csrf, "", label=f"Revoke {key['name']}",
        extra=' class="inline danger"')
    return [esc(key["name"]), esc(key["role"]), f"<code>{esc(key['key_prefix'])}…</code>", copyable(key["id"]),
            esc(key["revoked_at"] or "live"), revoke]


async def _keys_section(current: Visit) -> str:
    if not current.may("org.api_keys.list"):
        return "<h2>API keys</h2><p>Issuing, listing and revoking API keys needs the owner role.</p>"
    found = await current.api.get("/org/api-keys", limit="100")
    options = "".join(f'<option value="{esc(role)}"{" selected" if role == "member" else ""}>{esc(role)}</option>'
                      for role in ROLES)
    create = post_form(f"{SCREEN}/api-keys", current.viewer.csrf, field("key_name", "Name", required=True)
                       + f'<label for="key_role">Role</label><select id="key_role" name="key_role">{options}</select>',
                       label="Issue key")
    return ("<h2>API keys</h2>" + table(("Name", "Role", "Starts", "ID", "State", ""),
                                        (_key_row(current, key) for key in found["items"]), table_id="api-keys",
                                        empty="No keys.") + "<h3>Issue a key</h3>" + create)


async def _explainer(current: Visit, value: str) -> str:
    form = (f'<form method="get" action="{SCREEN}" class="inline" id="explain">'
            f'{field("id", "Value", value=value, required=True, extra=_NO_AUTOCOMPLETE)}'
            '<button type="submit">Explain</button></form>')
    if not value:
        return "<h2>Explain an ID</h2>" + form
    try:
        report = await current.api.get(f"/ids/{segment(value)}")
    except ApiFailure as failure:
        return "<h2>Explain an ID</h2>" + form + error_box(failure.status, failure.code, failure.message,
                                                           field=failure.field, value=failure.value)
    return f'<h2>Explain an ID</h2>{form}<div id="explanation">{json_block(report)}</div>'


async def _screen(request: Request, current: Visit, *, value: str = "", issued: str = "") -> Response:
    if not current.viewer.admin:
        return failure_page(request, ApiFailure(403, "forbidden", "the Operations screen is for admins and owners; "
                                                                  f"this key's role is {current.viewer.role}"))
    shown = "" if not issued else (
        '<div class="notice" role="status" id="issued"><p>The new key, shown this once — copy it now:</p>'
        f"<p>{copyable(issued)}</p></div>")
    body = shown + await _keys_section(current) + await _explainer(current, value)
    return html(page("Operations", body, viewer=current.viewer, section="operations"))


@router.get("/operations")
async def operations(request: Request, id: str = "") -> Response:
    return await _screen(request, await visit(request), value=id.strip())


@router.post("/operations/api-keys")
async def issue_key(request: Request) -> Response:
    current = await visit(request)
    form = await checked_form(request, current.session)
    request.state.back = SCREEN
    issued = await current.api.post("/org/api-keys", {"name": text_of(form, "key_name").strip(),
                                                      "role": text_of(form, "key_role")})
    return await _screen(request, current, issued=str(issued["key"]))


@router.post("/operations/api-keys/{key_id}/revoke")
async def revoke_key(request: Request, key_id: str) -> Response:
    current = await visit(request)
    await checked_form(request, current.session)
    request.state.back = SCREEN
    await current.api.delete(f"/org/api-keys/{segment(key_id)}")
    return redirect(request, SCREEN)
