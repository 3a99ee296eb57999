"""``spawn_subagent``, ``delegate`` and ``cancel_task``: work handed to another run, whose result comes
back to this chat.

The tools only validate and hand the task to the runtime (:class:`~agentfy.runtime.tools.Delegation`), which
runs it in the background and announces the result into this conversation through
:mod:`agentfy.permissions.propagation` (``subagent:<task>`` / ``delegate:<task>`` senders carrying the
person in ``origin_sender_id``): the announced turn, and the task's own run, act for the person who asked,
so their grants — and only theirs — apply.  A delegate is another agent of the same organization, named by
its ``agent_key`` (or ID), that this agent may reach: a ``delegate`` link from this agent to it, or a team
both are on (:func:`agentfy.store.repos.links.delegation_route`); it can never be another organization's.
How deep hand-offs may nest and how many of one agent may run at once are the runtime's limits
(``runtime.max_delegation_depth``, ``runtime.max_delegations_per_agent``): a refusal is told to the model,
and, like every hand-off started, recorded as a run event and an audit entry (:mod:`agentfy.runtime.activity`).
``cancel_task`` stops a hand-off this conversation started that is still running.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Final

from agentfy.identity import InvalidAgentKeyError, InvalidIdError, Scope
from agentfy.runtime.model import ToolSpec
from agentfy.runtime.tools import Tool, ToolEnv, ToolError, parameters, string, text
from agentfy.store.errors import NotFoundError
from agentfy.store.repos import agents, links
from agentfy.store.repos.agents import Agent

TASK_MAX_LENGTH: Final = 20_000


async def spawn_subagent(env: ToolEnv, arguments: Mapping[str, Any]) -> str:
    task = text(arguments, "task")
    task_id = env.delegation.spawn_subagent(env, task)
    return f"spawned subagent task {task_id}; its result will be announced here"


def _target(env: ToolEnv, name: str) -> Agent:
    """The agent ``name`` if this agent may hand it work, else a :class:`ToolError` saying why not."""
    scope = Scope(env.agent.tenant_id)
    try:
        with env.db.transaction(write=False) as tx:
            target = agents.resolve_agent(tx, scope, name)
            route = None if target.id == env.agent.id else links.delegation_route(tx, scope, env.agent.id, target.id)
    except (NotFoundError, InvalidIdError, InvalidAgentKeyError):
        raise ToolError(f"delegate: there is no agent {name!r} in this organization (expected an agent_key or "
                        "an agent ID of a live agent)") from None
    if target.id == env.agent.id:
        raise ToolError("delegate: an agent cannot delegate to itself; use spawn_subagent")
    if route is None:
        raise ToolError(f"delegate: @{target.agent_key} is out of reach of @{env.agent.agent_key}: there is no "
                        f"'delegate' link from @{env.agent.agent_key} to it and no team has both (an admin links "
                        f"them: POST /v1/agents/{env.agent.agent_key}/links)")
    return target


async def delegate(env: ToolEnv, arguments: Mapping[str, Any]) -> str:
    name, task = text(arguments, "agent"), text(arguments, "task")
    target = await asyncio.to_thread(_target, env, name)
    task_id = env.delegation.delegate(env, target, task)
    return f"delegated task {task_id} to @{target.agent_key}; its result will be announced here"


async def cancel_task(env: ToolEnv, arguments: Mapping[str, Any]) -> str:
    task_id = text(arguments, "task_id")
    if not env.delegation.cancel(env, task_id):
        raise ToolError(f"cancel_task: no task {task_id!r} of this conversation is running (it may have finished, "
                        "or run in another server process)")
    return f"cancelled task {task_id}; its cancellation will be announced here"


SPAWN_SUBAGENT: Final = Tool(ToolSpec("spawn_subagent", "Run a task in a subagent (this agent, in its own session) "
                                      "and announce its result in this chat.",
                                      parameters({"task": string("what the subagent is told",
                                                                 max_length=TASK_MAX_LENGTH)}, ("task",))),
                             spawn_subagent, hands_off=True)
DELEGATE: Final = Tool(ToolSpec("delegate", "Hand a task to a teammate agent of this organization and announce its "
                                "result in this chat.",
                                parameters({"agent": string("the teammate's agent_key", max_length=100),
                                            "task": string("what the teammate is told", max_length=TASK_MAX_LENGTH)},
                                           ("agent", "task"))), delegate, hands_off=True)
CANCEL_TASK: Final = Tool(ToolSpec("cancel_task", "Stop a subagent or delegated task this chat started that is still "
                                   "running.",
                                   parameters({"task_id": string("the task's ID, as spawn_subagent or delegate "
                                                                 "answered", max_length=64)}, ("task_id",))),
                          cancel_task)
