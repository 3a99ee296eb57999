"""``spawn_subagent`` and ``delegate``: work handed to another run, whose result comes back to this chat.

The tools only validate and hand the task to the runtime (:class:`~agentfy.runtime.tools.Delegation`), which
runs it in the background and announces the result into this conversation through
:mod:`agentfy.permissions.propagation` (``subagent:<task>`` / ``delegate:<task>`` senders carrying the
person in ``origin_sender_id``): the announced turn, and the task's own run, act for the person who asked,
so their grants — and only theirs — apply.  A delegate is another agent of the same organization, named by
its ``agent_key`` (or ID); it can never be another organization's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Final

from agentfy.identity import InvalidAgentKeyError, InvalidIdError, Scope
from agentfy.runtime.model import ToolSpec
from agentfy.runtime.tools import Tool, ToolEnv, ToolError, parameters, string, text
from agentfy.store.errors import NotFoundError
from agentfy.store.repos import agents
from agentfy.store.repos.agents import Agent

TASK_MAX_LENGTH: Final = 20_000


async def spawn_subagent(env: ToolEnv, arguments: Mapping[str, Any]) -> str:
    task = text(arguments, "task")
    task_id = env.delegation.spawn_subagent(env, task)
    return f"spawned subagent task {task_id}; its result will be announced here"


def _target(env: ToolEnv, name: str) -> Agent:
    try:
        with env.db.transaction(write=False) as tx:
            return agents.resolve_agent(tx, Scope(env.agent.tenant_id), name)
    except (NotFoundError, InvalidIdError, InvalidAgentKeyError):
        raise ToolError(f"delegate: there is no agent {name!r} in this organization (expected an agent_key or "
                        "an agent ID of a live agent)") from None


async def delegate(env: ToolEnv, arguments: Mapping[str, Any]) -> str:
    name, task = text(arguments, "agent"), text(arguments, "task")
    target = await asyncio.to_thread(_target, env, name)
    if target.id == env.agent.id:
        raise ToolError("delegate: an agent cannot delegate to itself; use spawn_subagent")
    task_id = env.delegation.delegate(env, target, task)
    return f"delegated task {task_id} to @{target.agent_key}; its result will be announced here"


SPAWN_SUBAGENT: Final = Tool(ToolSpec("spawn_subagent", "Run a task in a subagent (this agent, in its own session) "
                                      "and announce its result in this chat.",
                                      parameters({"task": string("what the subagent is told",
                                                                 max_length=TASK_MAX_LENGTH)}, ("task",))),
                             spawn_subagent)
DELEGATE: Final = Tool(ToolSpec("delegate", "Hand a task to a teammate agent of this organization and announce its "
                                "result in this chat.",
                                parameters({"agent": string("the teammate's agent_key", max_length=100),
                                            "task": string("what the teammate is told", max_length=TASK_MAX_LENGTH)},
                                           ("agent", "task"))), delegate)
