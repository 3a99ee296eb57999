"""``read_skill``: the body of one of the organization's skills, by name.

The system prompt lists the skills (name and description, :func:`agentfy.runtime.prompting.skills_section`);
the body is read only when the model asks, so a long skill costs nothing on turns that do not use it.  Only
the run's own organization is read: a name another organization uses is simply not there.  Reading needs no
grant — a skill is published for the organization's agents to use; publishing one is what the policy guards.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Final

from agentfy.identity import Scope
from agentfy.runtime.model import ToolSpec
from agentfy.runtime.tools import Tool, ToolEnv, ToolError, parameters, string, text
from agentfy.store.errors import InvalidInputError, NotFoundError
from agentfy.store.repos import skills

#: How many names a "no such skill" answer suggests.
NAMES_SUGGESTED: Final = 20


def _read_skill(env: ToolEnv, name: str) -> str:
    scope = Scope(env.agent.tenant_id)
    with env.db.transaction(write=False) as tx:
        try:
            return skills.get_skill_by_name(tx, scope, name).content
        except (NotFoundError, InvalidInputError):
            names = [skill.name for skill in skills.list_skills(tx, scope, limit=NAMES_SUGGESTED)]
    known = ", ".join(names) if names else "none: the organization has published no skill"
    raise ToolError(f"read_skill: there is no skill {name!r}; the skills are {known}")


async def read_skill(env: ToolEnv, arguments: Mapping[str, Any]) -> str:
    return await asyncio.to_thread(_read_skill, env, text(arguments, "name"))


READ_SKILL: Final = Tool(ToolSpec("read_skill", "Load the instructions of one of the organization's skills (listed in "
                                  "the system prompt) by its name.",
                                  parameters({"name": string("the skill's name, as listed", max_length=200)},
                                             ("name",))), read_skill)
