"""Operations (admins): members and roles, credentials (masked), model prices, the organization's API keys —
issue one (its key shown this once), revoke one —, the event bus (counts, dead letters to requeue, the orphan
scan) and the ID explainer (any value: which kind of ID, valid or why not, whether it is one of yours).

This module is the screen itself (``GET /console/operations``, which puts the sections together), its keys and
its explainer; members, credentials, prices and the bus are sections of their own modules (``ops_members``,
``ops_credentials``, ``ops_prices``, ``ops_bus``), whose forms post to routes of theirs under ``/console/operations/…``.
Keys are the API's ``/v1/org/api-keys`` (owners, by the access policy: an admin sees why not), the explainer its
``GET /v1/ids/{value}`` (the same explanation as ``agentfy ids``).  The screen is shown to the roles the access
policy makes admins; the API still decides every call.  After a change the screen says what was done with one
of :data:`DONE`'s fixed sentences (nothing of the URL is shown).
"""

from __future__ import annotations

from typing import Any, Final

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from agentfy.gateway.console.api import ApiFailure, segment
from agentfy.gateway.console.layout import (
    copyable,
    error_box,
    esc,
    field,
    json_block,
    notice,
    page,
    post_form,
    table,
)
from agentfy.gateway.console.responses import failure_page, html, redirect
from agentfy.gateway.console.screens import ops_bus, ops_credentials, ops_members, ops_prices
from agentfy.gateway.console.visit import Visit, submitted, text_of, visit
from agentfy.identity.roles import ROLES

router = APIRouter()
for _section in (ops_members, ops_credentials, ops_prices, ops_bus):
    router.include_router(_section.router)
SCREEN: Final = "/console/operations"
_NO_AUTOCOMPLETE: Final = ' autocomplete="off"'
_KEYS_HEADING: Final = '<h2 id="api-keys-heading">API keys</h2>'
_EXPLAIN_HEADING: Final = '<h2 id="explain-heading">Explain an ID</h2>'
#: What the screen says after a change (``?done=``); an unknown word says nothing.
DONE: Final = {
    "role": "The member's role was changed.",
    "removed": "The member was removed; every key acting as them is revoked.",
    "added": "The person was added as a member.",
    "invited": "The person was invited: they become a member when they accept.",
    "credential_stored": "The credential was stored.",
    "credential_rotated": "The credential was replaced: the next run of every agent naming it uses the new one.",
    "credential_deleted": "The credential was deleted.",
    "price_set": "The price was set: usage from its time on is costed with it.",
    "price_replaced": "The price was replaced: usage from its time on is costed with the new one.",
    "price_deleted": "The price was deleted: the usage it costed is costed by the price before it, or unknown.",
    "requeued": "The dead letter was requeued: a worker takes it again, with a fresh set of attempts.",
}


def _key_row(current: Visit, key: dict[str, Any]) -> list[str]:
    revoke = "" if key["revoked_at"] or not current.may("org.api_keys.revoke") else post_form(
        f"{SCREEN}/api-keys/{segment(key['id'])}/revoke", current.viewer.csrf, "", label=f"Revoke {key['name']}",
        extra=' class="inline danger"')
    return [esc(key["name"]), esc(key["role"]), f"<code>{esc(key['key_prefix'])}…</code>", copyable(key["id"]),
            esc(key["revoked_at"] or "live"), revoke]


async def _keys_section(current: Visit) -> str:
    if not current.may("org.api_keys.list"):
        return (f"{_KEYS_HEADING}<p>Issuing, listing and revoking API keys needs the owner role.</p>")
    found = await current.api.get("/org/api-keys", limit="100")
    options = "".join(f'<option value="{esc(role)}"{" selected" if role == "member" else ""}>{esc(role)}</option>'
                      for role in ROLES)
    create = post_form(f"{SCREEN}/api-keys", current.viewer.csrf, field("key_name", "Name", required=True)
                       + f'<label for="key_role">Role</label><select id="key_role" name="key_role">{options}</select>',
                       label="Issue key")
    return (_KEYS_HEADING + table(("Name", "Role", "Starts", "ID", "State", ""),
                                        (_key_row(current, key) for key in found["items"]), table_id="api-keys",
                                        empty="No keys.") + "<h3>Issue a key</h3>" + create)


async def _explainer(current: Visit, value: str) -> str:
    form = (f'<form method="get" action="{SCREEN}" class="inline" id="explain">'
            f'{field("id", "Value", value=value, required=True, extra=_NO_AUTOCOMPLETE)}'
            '<button type="submit">Explain</button></form>')
    if not value:
        return _EXPLAIN_HEADING + form
    try:
        report = await current.api.get(f"/ids/{segment(value)}")
    except ApiFailure as failure:
        return _EXPLAIN_HEADING + form + error_box(failure.status, failure.code, failure.message,
                                                           field=failure.field, value=failure.value)
    return f'{_EXPLAIN_HEADING}{form}<div id="explanation">{json_block(report)}</div>'


_CONTENTS: Final = ('<nav aria-label="Sections"><ul class="links">'
                    '<li><a href="#members-heading">Members</a></li>'
                    '<li><a href="#credentials-heading">Credentials</a></li>'
                    '<li><a href="#prices-heading">Prices</a></li>'
                    '<li><a href="#api-keys-heading">API keys</a></li>'
                    '<li><a href="#bus-heading">Event bus</a></li>'
                    '<li><a href="#explain-heading">Explain an ID</a></li></ul></nav>')


async def _screen(request: Request, current: Visit, *, value: str = "", issued: str = "", done: str = "",
                  dead_after: str = "", scan: bool = False) -> Response:
    if not current.viewer.admin:
        return failure_page(request, ApiFailure(403, "forbidden", "the Operations screen is for admins and owners; "
                                                                  f"this key's role is {current.viewer.role}"))
    shown = "" if not issued else (
        '<div class="notice" role="status" id="issued"><p>The new key, shown this once — copy it now:</p>'
        f"<p>{copyable(issued)}</p></div>")
    said = notice(DONE[done]) if done in DONE else ""
    body = (said + shown + _CONTENTS + await ops_members.section(current) + await ops_credentials.section(current)
            + await ops_prices.section(current)
            + await _keys_section(current) + await ops_bus.section(current, dead_after=dead_after, scan=scan)
            + await _explainer(current, value))
    return html(page("Operations", body, viewer=current.viewer, section="operations"))


@router.get("/operations")
async def operations(request: Request, id: str = "", done: str = "", dead_after: str = "",
                     scan: str = "") -> Response:
    request.state.back = SCREEN  # a refused parameter (a stale dead-letter cursor): back to the plain screen
    return await _screen(request, await visit(request), value=id.strip(), done=done, dead_after=dead_after,
                         scan=scan == "orphans")


@router.post("/operations/api-keys")
async def issue_key(request: Request) -> Response:
    current, form = await submitted(request, SCREEN)
    issued = await current.api.post("/org/api-keys", {"name": text_of(form, "key_name").strip(),
                                                      "role": text_of(form, "key_role")})
    return await _screen(request, current, issued=str(issued["key"]))


@router.post("/operations/api-keys/{key_id}/revoke")
async def revoke_key(request: Request, key_id: str) -> Response:
    current, _ = await submitted(request, SCREEN)
    await current.api.delete(f"/org/api-keys/{segment(key_id)}")
    return redirect(request, SCREEN)
