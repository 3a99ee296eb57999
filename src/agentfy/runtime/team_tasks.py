"""Team tasks worked on by agents: who may reach a task, starting a dispatch, and recording how its run ended.

A dispatched task runs as its teammate (the assignee, on the task's team) in the conversation
``teammate:<task ID>`` with the synthetic sender ``teammate:<task ID>``
(:func:`agentfy.permissions.propagation.teammate_dispatch`), the dispatching person carried as the origin
sender: the run's ACTOR is that person, its SCOPE the dispatcher's.  The task is ``in_progress`` from the
dispatch (:func:`start_dispatch`); when the run ends :func:`settle` records it — ``done`` with the reply as
its result, ``failed`` with the error, ``cancelled`` when the run was cancelled.  A task whose status no
longer allows that (an admin cancelled it meanwhile, or the sweep timed it out) keeps its status: the run's
end is logged, not forced onto it.

An agent reaches only the tasks of the teams it is on (:func:`agentfy.store.repos.links.teams_of`); any
other task — another team's, another organization's, one that does not exist — is answered the same way.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

from agentfy.identity import Scope
from agentfy.runtime.inbound import Reply
from agentfy.runtime.model import ModelError
from agentfy.runtime.providers import ModelConfigError
from agentfy.store.db import Database, Tx
from agentfy.store.errors import ConflictError, InvalidInputError, NotFoundError, StoreError
from agentfy.store.repos import agents, links, tasks
from agentfy.store.repos.agents import Agent
from agentfy.store.repos.tasks import TeamTask

logger: Final = logging.getLogger("agentfy.runtime.tasks")

#: The channel of a dispatched task's run.
TEAMMATE_CHANNEL: Final = "teammate"
ERROR_MAX_LENGTH: Final = 500


def conversation_of(task_id: str) -> str:
    """The conversation a dispatched task's run speaks in (its own, per task)."""
    return f"teammate:{task_id}"


def task_in_reach(tx: Tx, scope: Scope, agent: Agent, task_id: str) -> TeamTask:
    """The task, if it belongs to a team ``agent`` is on; otherwise :class:`NotFoundError`, exactly like a
    task that does not exist."""
    task = tasks.get_task(tx, scope, task_id)
    if task.team_id not in links.teams_of(tx, scope, agent.id):
        raise NotFoundError("team task", task_id)
    return task


@dataclass(frozen=True, slots=True)
class Dispatch:
    """A started dispatch: the task (now ``in_progress``) and the teammate that runs it."""

    task: TeamTask
    teammate: Agent


def start_dispatch(db: Database, scope: Scope, task_id: str, teammate: str | None, *,
                   by_agent: Agent | None = None) -> Dispatch:
    """Worker thread: the teammate (``teammate`` by ID or agent_key, else the task's assignee) starts the
    task — ``in_progress``, assigned to and claimed by it, with a fresh deadline.  ``by_agent``: the agent
    dispatching, which must be on the task's team.  The teammate must be on it too; a task without an
    assignee needs ``teammate``."""
    with db.transaction() as tx:
        task = tasks.get_task(tx, scope, task_id) if by_agent is None else task_in_reach(tx, scope, by_agent, task_id)
        name = teammate if teammate is not None else task.assignee_agent_id
        if name is None:
            raise InvalidInputError(f"team task {task.id!r} has no assignee; name the agent to dispatch it to",
                                    field="agent", value=None)
        agent = agents.resolve_agent(tx, scope, name)
        started = tasks.start_task(tx, scope, task.id, agent.id)
    return Dispatch(started, agent)


def failure_text(error: BaseException) -> str:
    """A short reason for the task's record, which API callers read: what the model or the input said, else
    only the kind of failure (an unexpected error's text may quote anything; it goes to the log)."""
    if isinstance(error, ModelError | ModelConfigError | ValueError | NotFoundError):
        text = f"{type(error).__name__}: {error}"
    elif isinstance(error, StoreError):
        text = f"{type(error).__name__}: the database failed (see the server log)"
    else:
        text = f"{type(error).__name__} (see the server log)"
    return text[:ERROR_MAX_LENGTH]


def _record(db: Database, task: TeamTask, end: Callable[[Tx, Scope], TeamTask]) -> None:
    scope = Scope(task.tenant_id)
    try:
        with db.transaction() as tx:
            end(tx, scope)
    except (ConflictError, NotFoundError) as error:  # cancelled, timed out or deleted meanwhile
        logger.info("tasks.end_not_recorded", extra={"task_id": task.id, "reason": str(error)})


async def settle(db: Database, task: TeamTask, working: Awaitable[Reply]) -> Reply:
    """Wait for the dispatched run and record its end on the task (see the module docstring); then answer
    as the run did: its reply, its error, or its cancellation."""
    try:
        reply = await working
    except asyncio.CancelledError:
        await asyncio.to_thread(_record, db, task, lambda tx, scope: tasks.cancel_task(
            tx, scope, task.id, "its dispatched run was cancelled"))
        raise
    except Exception as error:
        reason = failure_text(error)
        await asyncio.to_thread(_record, db, task, lambda tx, scope: tasks.fail_task(tx, scope, task.id, reason))
        raise
    await asyncio.to_thread(_record, db, task, lambda tx, scope: tasks.complete_task(
        tx, scope, task.id, reply.text or "", session_key=reply.session_key))
    return reply


async def settle_alone(db: Database, task: TeamTask, working: Awaitable[Reply],
                       close: Callable[[], Awaitable[object]]) -> None:
    """:func:`settle` for a dispatch no conversation waits for (the HTTP API): the result is on the task
    only; the run's session is completed afterwards (``close``) like a hand-off's."""
    try:
        await settle(db, task, working)
    except Exception:
        logger.exception("tasks.dispatch_failed", extra={"task_id": task.id})
    finally:
        try:
            await close()
        except Exception:
            logger.exception("tasks.dispatch_end_failed", extra={"task_id": task.id})
