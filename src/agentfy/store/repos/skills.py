"""Skills: named instructions an agent can load, owned by the person who published them.

``owner_id`` is the ACTOR (``RequestContext.actor_id``: the individual sender), never the group scope, so a
skill published in a group belongs to the person, not the group.  Rows written before that rule
hold the SCOPE (``group:telegram:…``) instead; :func:`can_manage_skill` accepts either so those rows stay
manageable without a destructive backfill.  The repository stores; callers decide with
:func:`can_manage_skill` before :func:`update_skill` or :func:`delete_skill`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import sqlalchemy as sa

from agentfy.identity import OrgId, Scope, SkillId, parse_id
from agentfy.store.db import Tx, now
from agentfy.store.errors import ConflictError, InvalidInputError, NotFoundError, UniqueViolation
from agentfy.store.paging import Keyset
from agentfy.store.repos._common import require_label, require_text
from agentfy.store.schema import skills
from agentfy.store.sql import insert_returning_id

#: Prefixes of SCOPE strings (group and guild chats); an owner written today must be an actor instead.
SCOPE_PREFIXES: Final = ("group:", "guild:")
SKILL_CONTENT_MAX_LENGTH: Final = 200_000

_IN_TENANT: Final = skills.c.tenant_id == sa.bindparam("tenant_id")
_COLUMNS: Final = (skills.c.id, skills.c.tenant_id, skills.c.owner_id, skills.c.name, skills.c.content,
                   skills.c.created_at)
_INSERT: Final = insert_returning_id(skills, ["tenant_id", "owner_id", "name", "content", "created_at"])
_BY_ID: Final = sa.select(*_COLUMNS).where(_IN_TENANT, skills.c.id == sa.bindparam("skill_id"))
_BY_NAME: Final = sa.select(*_COLUMNS).where(_IN_TENANT, skills.c.name == sa.bindparam("name"))
PAGES: Final[Keyset[Skill]] = Keyset(sa.select(*_COLUMNS).where(_IN_TENANT), (skills.c.name, skills.c.id),
                                       lambda skill: (skill.name, skill.id))
_UPDATE_CONTENT: Final = (sa.update(skills).where(_IN_TENANT, skills.c.id == sa.bindparam("skill_id"))
                          .values(content=sa.bindparam("content")))
_DELETE: Final = sa.delete(skills).where(_IN_TENANT, skills.c.id == sa.bindparam("skill_id"))


@dataclass(frozen=True, slots=True)
class Skill:
    """A skill; ``owner_id`` is the publishing actor (legacy rows: the scope it was published in)."""

    id: SkillId
    tenant_id: OrgId
    owner_id: str
    name: str
    content: str
    created_at: str


def _skill(row: tuple[Any, ...]) -> Skill:
    return Skill(SkillId(row[0]), OrgId(row[1]), row[2], row[3], row[4], row[5])


def _owner(value: object) -> str:
    owner = require_label(value, field="owner_id")
    if owner.startswith(SCOPE_PREFIXES):
        raise InvalidInputError(f"owner_id {owner!r} is a chat scope; a skill is owned by the acting person "
                                "(ActorID: the sender), not by the group", field="owner_id", value=owner)
    return owner


def can_manage_skill(skill: Skill, actor_id: str | None, user_id_scope: str | None) -> bool:
    """Whether the request may patch or delete ``skill``: its owner is the acting person (rows written since
    ownership moved to the person) or the request's scope (older rows stored the chat scope).  Empty
    identities never match, so a system context without an actor cannot claim a skill whose owner is somehow
    empty."""
    owner = skill.owner_id
    if not owner:
        return False
    return owner in {value for value in (actor_id, user_id_scope) if value}


def create_skill(tx: Tx, scope: Scope, *, owner_id: str, name: str, content: str) -> Skill:
    """Publish a skill owned by the actor ``owner_id``; a name already used in the tenant is a conflict."""
    owner = _owner(owner_id)
    skill_name = require_label(name, field="name")
    text = require_text(content, field="content", max_length=SKILL_CONTENT_MAX_LENGTH)
    stamp = now()
    try:
        skill_id = tx.insert_minted("skill", _INSERT, {"tenant_id": scope.tenant_id, "owner_id": owner,
                                                       "name": skill_name, "content": text, "created_at": stamp})
    except UniqueViolation as error:
        if "name" in error.columns:
            raise ConflictError(f"name {skill_name!r} is already used by another skill of tenant "
                                f"{scope.tenant_id}", field="name", value=skill_name) from None
        raise
    return Skill(SkillId(skill_id), scope.tenant_id, owner, skill_name, text, stamp)


def get_skill(tx: Tx, scope: Scope, skill_id: str) -> Skill:
    skill_id = parse_id(skill_id, "skill")
    row = tx.one(_BY_ID, {"tenant_id": scope.tenant_id, "skill_id": skill_id})
    if row is None:
        raise NotFoundError("skill", skill_id)
    return _skill(row)


def get_skill_by_name(tx: Tx, scope: Scope, name: str) -> Skill:
    skill_name = require_label(name, field="name")
    row = tx.one(_BY_NAME, {"tenant_id": scope.tenant_id, "name": skill_name})
    if row is None:
        raise NotFoundError("skill", skill_name)
    return _skill(row)


def list_skills(tx: Tx, scope: Scope, *, after: Sequence[Any] | None = None, limit: int | None = None) -> list[Skill]:
    """The tenant's skills by name (all, or a page)."""
    return PAGES.fetch(tx, {"tenant_id": scope.tenant_id}, _skill, after=after, limit=limit)


def update_skill(tx: Tx, scope: Scope, skill_id: str, *, content: str) -> Skill:
    """Replace the skill's content (ownership unchanged); check :func:`can_manage_skill` first."""
    skill_id = parse_id(skill_id, "skill")
    text = require_text(content, field="content", max_length=SKILL_CONTENT_MAX_LENGTH)
    if tx.execute(_UPDATE_CONTENT, {"tenant_id": scope.tenant_id, "skill_id": skill_id,
                                    "content": text}).rowcount == 0:
        raise NotFoundError("skill", skill_id)
    return get_skill(tx, scope, skill_id)


def delete_skill(tx: Tx, scope: Scope, skill_id: str) -> None:
    """Delete the skill; check :func:`can_manage_skill` first."""
    skill_id = parse_id(skill_id, "skill")
    if tx.execute(_DELETE, {"tenant_id": scope.tenant_id, "skill_id": skill_id}).rowcount == 0:
        raise NotFoundError("skill", skill_id)
