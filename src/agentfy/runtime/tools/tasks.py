"""``task_create``, ``task_list``, ``task_claim``, ``task_complete``, ``task_fail``, ``task_dispatch``: an agent
works on its teams' tasks.

Only tasks of the teams the agent is on (as a member or the lead) are in reach; any other task ID is answered
like one that does not exist (:func:`agentfy.runtime.team_tasks.task_in_reach`).  The lifecycle is the
store's (:data:`agentfy.store.repos.tasks.TRANSITIONS`): a move it does not allow is told to the model with
the task's status and what may be done from there.  Every tool but ``task_list`` changes the team's work, so
it asks :func:`~agentfy.permissions.policy.check_file_writer_permission` first: in a group chat the sender
needs the ``file_writer`` grant; a denial writes nothing.  ``task_complete`` and ``task_fail`` are the
claimer's: another agent's claim is refused.  ``task_dispatch`` hands the task to a teammate
(:meth:`agentfy.runtime.runner.Runtime.dispatch_teammate`), a hand-off whose result is announced here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar

from agentfy.identity import InvalidAgentKeyError, InvalidIdError, Scope, parse_id
from agentfy.permissions.policy import check_file_writer_permission
from agentfy.runtime.model import ToolSpec
from agentfy.runtime.team_tasks import task_in_reach
from agentfy.runtime.tools import Tool, ToolEnv, ToolError, integer, parameters, refusal, string, text
from agentfy.store.db import Tx
from agentfy.store.errors import ConflictError, InvalidInputError, NotFoundError
from agentfy.store.repos import agents, links, tasks
from agentfy.store.repos.tasks import DEFAULT_TIMEOUT_SECONDS, MAX_TIMEOUT_SECONDS, TeamTask
from agentfy.store.schema import TASK_STATUSES, TASK_TEXT_MAX_LENGTH

LISTED: Final = 50
_Result = TypeVar("_Result")
#: What a caller's mistake in the store looks like; each becomes the tool's answer.
_MISTAKES: Final = (ConflictError, InvalidInputError, NotFoundError, InvalidIdError, InvalidAgentKeyError)


def _shown(task: TeamTask) -> str:
    worker = f", claimed by {task.claimed_by_agent_id}" if task.claimed_by_agent_id else ""
    return f"{task.id} [{task.status}] {task.title} (team {task.team_id}{worker})"


def _in_store(env: ToolEnv, tool: str, work: Callable[[Tx, Scope], _Result], *, write: bool = True) -> _Result:
    """Worker thread: ``work`` in one transaction; a mistake of the caller is a :class:`ToolError`."""
    try:
        with env.db.transaction(write=write) as tx:
            return work(tx, Scope(env.agent.tenant_id))
    except _MISTAKES as error:
        raise ToolError(f"{tool}: {error}") from None


def _writing(env: ToolEnv, tool: str, work: Callable[[Tx, Scope], TeamTask], verb: str) -> str:
    decision = check_file_writer_permission(env.db, env.context, env.agent.id)
    if not decision.allowed:
        return refusal(decision)
    return f"{tool}: {verb} {_shown(_in_store(env, tool, work))}"


def _on_team(tx: Tx, scope: Scope, env: ToolEnv, team_id: str) -> str:
    team = parse_team(team_id)
    if team not in links.teams_of(tx, scope, env.agent.id):
        raise NotFoundError("team", team_id)
    return team


def parse_team(value: str) -> str:
    return parse_id(value, "team", field="team")


def _create(env: ToolEnv, arguments: Mapping[str, Any]) -> str:
    def work(tx: Tx, scope: Scope) -> TeamTask:
        team = _on_team(tx, scope, env, text(arguments, "team"))
        assignee = arguments.get("assignee")
        assignee_id = None if assignee is None else agents.resolve_agent(tx, scope, str(assignee)).id
        return tasks.create_task(tx, scope, team, title=text(arguments, "title"),
                                 description=str(arguments.get("description", "")), created_by_agent_id=env.agent.id,
                                 assignee_agent_id=assignee_id,
                                 timeout_seconds=int(arguments.get("timeout_seconds", DEFAULT_TIMEOUT_SECONDS)))

    return _writing(env, "task_create", work, "created")


async def task_create(env: ToolEnv, arguments: Mapping[str, Any]) -> str:
    return await asyncio.to_thread(_create, env, arguments)


def _list(env: ToolEnv, team: str | None, status: str | None) -> str:
    def work(tx: Tx, scope: Scope) -> list[TeamTask]:
        team_ids = sorted(links.teams_of(tx, scope, env.agent.id)) if team is None else [_on_team(tx, scope, env, team)]
        return [task for team_id in team_ids for task in tasks.list_tasks(tx, scope, team_id, status=status)]

    found = _in_store(env, "task_list", work, write=False)
    if not found:
        return "task_list: no tasks" + ("" if status is None else f" in status {status}")
    more = f"\n(and {len(found) - LISTED} more)" if len(found) > LISTED else ""
    return "task_list:\n" + "\n".join(f"- {_shown(task)}" for task in found[:LISTED]) + more


async def task_list(env: ToolEnv, arguments: Mapping[str, Any]) -> str:
    team, status = arguments.get("team"), arguments.get("status")
    return await asyncio.to_thread(_list, env, None if team is None else str(team),
                                   None if status is None else str(status))


async def task_claim(env: ToolEnv, arguments: Mapping[str, Any]) -> str:
    task_id = text(arguments, "task_id")

    def work(tx: Tx, scope: Scope) -> TeamTask:
        return tasks.claim_task(tx, scope, task_in_reach(tx, scope, env.agent, task_id).id, env.agent.id)

    return await asyncio.to_thread(_writing, env, "task_claim", work, "claimed")


async def task_complete(env: ToolEnv, arguments: Mapping[str, Any]) -> str:
    task_id, result = text(arguments, "task_id"), text(arguments, "result")

    def work(tx: Tx, scope: Scope) -> TeamTask:
        task = task_in_reach(tx, scope, env.agent, task_id)
        return tasks.complete_task(tx, scope, task.id, result, by_agent_id=env.agent.id)

    return await asyncio.to_thread(_writing, env, "task_complete", work, "completed")


async def task_fail(env: ToolEnv, arguments: Mapping[str, Any]) -> str:
    task_id, error = text(arguments, "task_id"), text(arguments, "error")

    def work(tx: Tx, scope: Scope) -> TeamTask:
        task = task_in_reach(tx, scope, env.agent, task_id)
        return tasks.fail_task(tx, scope, task.id, error, by_agent_id=env.agent.id)

    return await asyncio.to_thread(_writing, env, "task_fail", work, "failed")


async def task_dispatch(env: ToolEnv, arguments: Mapping[str, Any]) -> str:
    task_id, agent = text(arguments, "task_id"), arguments.get("agent")
    decision = await asyncio.to_thread(check_file_writer_permission, env.db, env.context, env.agent.id)
    if not decision.allowed:
        return refusal(decision)
    try:
        task = await env.delegation.dispatch_teammate(env.context, task_id, None if agent is None else str(agent),
                                                      env=env)
    except _MISTAKES as error:
        raise ToolError(f"task_dispatch: {error}") from None
    return (f"task_dispatch: dispatched {_shown(task)} to {task.assignee_agent_id}; its result will be announced "
            "here")


_TASK_ID: Final = string("the task's ID, as task_create or task_list answered", max_length=100)
TASK_CREATE: Final = Tool(ToolSpec("task_create", "Create a task for one of this agent's teams.", parameters({
    "team": string("the team's ID", max_length=100),
    "title": string("what is to be done, in a line", max_length=tasks.TITLE_MAX_LENGTH),
    "description": string("the details the agent doing it is told", max_length=TASK_TEXT_MAX_LENGTH,
                          allow_empty=True),
    "assignee": string("the teammate it is for (agent_key or ID, on the team)", max_length=100),
    "timeout_seconds": integer(f"how long it may be worked on once claimed (default {DEFAULT_TIMEOUT_SECONDS})",
                               minimum=1, maximum=MAX_TIMEOUT_SECONDS)}, ("team", "title"))), task_create)
TASK_LIST: Final = Tool(ToolSpec("task_list", "List the tasks of this agent's teams (or of one team).", parameters({
    "team": string("only this team's tasks (its ID)", max_length=100),
    "status": string(f"only tasks in this status: {', '.join(TASK_STATUSES)}", max_length=32)})), task_list)
TASK_CLAIM: Final = Tool(ToolSpec("task_claim", "Take an open task of one of this agent's teams, to work on it.",
                                  parameters({"task_id": _TASK_ID}, ("task_id",))), task_claim)
TASK_COMPLETE: Final = Tool(ToolSpec("task_complete", "Finish a task this agent claimed, with its result.",
                                     parameters({"task_id": _TASK_ID,
                                                 "result": string("the result", max_length=TASK_TEXT_MAX_LENGTH)},
                                                ("task_id", "result"))), task_complete)
TASK_FAIL: Final = Tool(ToolSpec("task_fail", "Give up a task this agent claimed, saying why.",
                                 parameters({"task_id": _TASK_ID,
                                             "error": string("why it failed", max_length=TASK_TEXT_MAX_LENGTH)},
                                            ("task_id", "error"))), task_fail)
TASK_DISPATCH: Final = Tool(ToolSpec("task_dispatch", "Have a teammate do a task of one of this agent's teams now "
                                     "and announce its result in this chat.",
                                     parameters({"task_id": _TASK_ID,
                                                 "agent": string("the teammate (agent_key or ID; default: the "
                                                                 "task's assignee)", max_length=100)},
                                                ("task_id",))), task_dispatch, hands_off=True)
