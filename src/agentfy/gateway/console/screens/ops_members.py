"""Operations, members: the organization's people and their roles — change a role, remove a member, add a new
person or invite an existing one.

Each is the API's ``/v1/org/members`` (``GET``, ``PATCH``/``DELETE`` ``{user_id}``, ``POST``).  Which forms show
is the access policy's (``current.may``); the rest is the API's to decide: no key hands out or takes away a role
above its own, and the last owner stays — an admin asking to make someone an owner sees the API's 403, a
demotion of the last owner its 409.  Every role is offered for that reason: the console does not guess.
"""

from __future__ import annotations

from typing import Any, Final

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from agentfy.gateway.console.api import segment
from agentfy.gateway.console.layout import copyable, esc, field, post_form, table
from agentfy.gateway.console.screens.ops_forms import SCREEN, done, posted
from agentfy.gateway.console.visit import Visit, text_of
from agentfy.identity.roles import ROLES

router = APIRouter()
PAGE_SIZE: Final = 200


def role_select(name: str, label: str, *, chosen: str, visible: bool = True) -> str:
    """A labelled choice of every role (``name`` is its ``id``); ``visible=False``: labelled for assistive
    technology only (a table row's, whose column head says what it is)."""
    options = "".join(f'<option value="{esc(role)}"{" selected" if role == chosen else ""}>{esc(role)}</option>'
                      for role in ROLES)
    if not visible:
        return f'<select id="{esc(name)}" name="role" aria-label="{esc(label)}">{options}</select>'
    return f'<label for="{esc(name)}">{esc(label)}</label><select id="{esc(name)}" name="role">{options}</select>'


def _member_row(current: Visit, member: dict[str, Any]) -> list[str]:
    user_id = str(member["user_id"])
    change = "" if not current.may("org.members.update") else post_form(
        f"{SCREEN}/members/{segment(user_id)}/role", current.viewer.csrf,
        role_select(f"role-{user_id}", f"New role of {user_id}", chosen=str(member["role"]), visible=False),
        label="Change role",
        extra=' class="inline"')
    remove = "" if not current.may("org.members.remove") else post_form(
        f"{SCREEN}/members/{segment(user_id)}/remove", current.viewer.csrf, "", label="Remove",
        extra=f' class="inline danger" aria-label="Remove {esc(user_id)}"')
    return [copyable(user_id), f'<span class="role">{esc(member["role"])}</span>', change, remove]


async def section(current: Visit) -> str:
    """The members' part of the Operations screen."""
    found = await current.api.get("/org/members", limit=str(PAGE_SIZE))
    more = "" if found["next_cursor"] is None else f'<p class="meta">Only the first {PAGE_SIZE} are shown.</p>'
    body = table(("Person", "Role", "Change role", ""), (_member_row(current, m) for m in found["items"]),
                 table_id="members", empty="No members.") + more
    if current.may("org.members.add"):
        body += ("<h3>Add a new person</h3>" + post_form(
            f"{SCREEN}/members", current.viewer.csrf, field("display_name", "Name", required=True)
            + field("email", "Email (optional)", kind="email") + role_select("new_role", "Role", chosen="member"),
            label="Add member")
            + "<h3>Invite an existing person</h3>" + post_form(
            f"{SCREEN}/members/invite", current.viewer.csrf, field("invite_user_id", "Their user ID", required=True)
            + role_select("invite_role", "Role", chosen="member"), label="Invite",
            extra=' id="invite"'))
    return '<h2 id="members-heading">Members and roles</h2>' + body


@router.post("/operations/members/{user_id}/role")
async def change_role(request: Request, user_id: str) -> Response:
    current, form = await posted(request)
    await current.api.patch(f"/org/members/{segment(user_id)}", {"role": text_of(form, "role")})
    return done(request, "role", "members")


@router.post("/operations/members/{user_id}/remove")
async def remove(request: Request, user_id: str) -> Response:
    current, _ = await posted(request)
    await current.api.delete(f"/org/members/{segment(user_id)}")
    return done(request, "removed", "members")


@router.post("/operations/members")
async def add(request: Request) -> Response:
    current, form = await posted(request)
    email = text_of(form, "email").strip()
    body: dict[str, Any] = {"display_name": text_of(form, "display_name").strip(), "role": text_of(form, "role")}
    if email:
        body["email"] = email
    await current.api.post("/org/members", body)
    return done(request, "added", "members")


@router.post("/operations/members/invite")
async def invite(request: Request) -> Response:
    current, form = await posted(request)
    await current.api.post("/org/members", {"user_id": text_of(form, "invite_user_id").strip(),
                                            "role": text_of(form, "role")})
    return done(request, "invited", "members")
