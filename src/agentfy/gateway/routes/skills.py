"""``/v1/skills``: named instructions agents can load, owned by the person who published them.

The owner is the ACTOR of the request (the user the API key acts as), never taken from the body.  Only the
owner or an admin may change or delete a skill.
"""

from __future__ import annotations

from fastapi import APIRouter, Response

from agentfy.errors import ApiError
from agentfy.gateway.auth import Principal
from agentfy.gateway.deps import Authenticated
from agentfy.gateway.pages import Cursor, Limit, Page, paged
from agentfy.gateway.routes.schemas_admin import SkillIdPath, SkillIn, SkillOut, SkillPatch
from agentfy.gateway.routing import ApiRoute
from agentfy.identity.roles import role_rank
from agentfy.store.db import Tx
from agentfy.store.paging import DEFAULT_LIMIT
from agentfy.store.repos import skills
from agentfy.store.repos.skills import Skill

router = APIRouter(tags=["skills"], route_class=ApiRoute)


def skill_out(skill: Skill) -> SkillOut:
    return SkillOut(id=skill.id, owner_id=skill.owner_id, name=skill.name, content=skill.content,
                    created_at=skill.created_at)


def _managed_skill(tx: Tx, who: Principal, skill_id: str) -> Skill:
    """The skill, if the caller may change it: its owner (the acting person) or an admin; else 403."""
    skill = skills.get_skill(tx, who.scope, skill_id)
    ctx = who.context()
    if role_rank(who.role) < role_rank("admin") and not skills.can_manage_skill(skill, ctx.actor_id, ctx.user_id):
        raise ApiError(403, "forbidden", "only the skill's owner or an admin may change it")
    return skill


@router.post("/skills", operation_id="skills.create", status_code=201, response_model=SkillOut)
def create_skill(body: SkillIn, call: Authenticated) -> SkillOut:
    """Publish a skill (operator), owned by the person the API key acts as.  A key that acts as nobody
    cannot own one (403); a name already used in the organization is 409."""
    owner = call.who.context().actor_id
    assert owner is not None  # the access policy: skills.create needs a key that acts as a person
    with call.gateway.db.transaction() as tx:
        return skill_out(skills.create_skill(tx, call.who.scope, owner_id=owner, name=body.name, content=body.content))


@router.get("/skills", operation_id="skills.list", response_model=Page[SkillOut])
def list_skills(call: Authenticated,
                limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None) -> Page[SkillOut]:
    """The organization's skills, by name, a page at a time."""
    return paged(call.gateway, call.who, "skills.list", skills.PAGES, fetch=lambda tx, **page: skills.list_skills(
        tx, call.who.scope, **page), out=skill_out, limit=limit, cursor=cursor)


@router.get("/skills/{skill_id}", operation_id="skills.get", response_model=SkillOut)
def get_skill(skill_id: SkillIdPath, call: Authenticated) -> SkillOut:
    """One skill.  Another organization's: 404, like a missing one."""
    with call.gateway.db.transaction(write=False) as tx:
        return skill_out(skills.get_skill(tx, call.who.scope, skill_id))


@router.patch("/skills/{skill_id}", operation_id="skills.update", response_model=SkillOut)
def update_skill(skill_id: SkillIdPath, body: SkillPatch, call: Authenticated) -> SkillOut:
    """Replace a skill's content (its owner or an admin; anyone else: 403).  Ownership never changes."""
    with call.gateway.db.transaction() as tx:
        skill = _managed_skill(tx, call.who, skill_id)
        return skill_out(skills.update_skill(tx, call.who.scope, skill.id, content=body.content))


@router.delete("/skills/{skill_id}", operation_id="skills.delete", status_code=204, response_class=Response)
def delete_skill(skill_id: SkillIdPath, call: Authenticated) -> Response:
    """Delete a skill (its owner or an admin; anyone else: 403)."""
    with call.gateway.db.transaction() as tx:
        skill = _managed_skill(tx, call.who, skill_id)
        skills.delete_skill(tx, call.who.scope, skill.id)
    return Response(status_code=204)
