"""Team tasks: ``/v1/teams/{team_id}/tasks``, ``/v1/tasks/{task_id}`` and its lifecycle actions and attachments.

The lifecycle is the store's (:data:`agentfy.store.repos.tasks.TRANSITIONS`): an action its table does not allow
from the task's status is 409 naming the status and what is allowed, and writes nothing.  A task, team or
attachment of another organization is 404, exactly like a missing one.  ``dispatch`` runs the task as its
teammate now (:meth:`agentfy.runtime.runner.Runtime.dispatch_teammate`) with the API caller as the ACTOR and
answers 202 with the task ``in_progress``; the run's end is recorded on the task (read it back with GET).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response
from fastapi.concurrency import run_in_threadpool

from agentfy.errors import ApiError
from agentfy.gateway.deps import Authenticated
from agentfy.gateway.pages import Cursor, Limit, Page, paged
from agentfy.gateway.resolve import agent_in
from agentfy.gateway.routes.schemas_admin import TeamIdPath
from agentfy.gateway.routes.schemas_tasks import (
    AttachmentIdPath,
    AttachmentIn,
    AttachmentOut,
    TaskAssignIn,
    TaskClaimIn,
    TaskCompleteIn,
    TaskDispatchIn,
    TaskFailIn,
    TaskIdPath,
    TaskIn,
    TaskOut,
    TaskStatus,
)
from agentfy.gateway.routing import ApiRoute
from agentfy.identity import parse_id
from agentfy.store.errors import NotFoundError
from agentfy.store.paging import DEFAULT_LIMIT
from agentfy.store.repos import tasks
from agentfy.store.repos.tasks import TeamTask, TeamTaskAttachment

router = APIRouter(tags=["tasks"], route_class=ApiRoute)
StatusFilter = Annotated[TaskStatus | None, Query(description="Only the tasks in this status.")]


def task_out(task: TeamTask) -> TaskOut:
    return TaskOut(id=task.id, tenant_id=task.tenant_id, team_id=task.team_id, title=task.title,
                   description=task.description, status=task.status,  # type: ignore[arg-type]  # CHECKed set
                   created_by_agent_id=task.created_by_agent_id, assignee_agent_id=task.assignee_agent_id,
                   claimed_by_agent_id=task.claimed_by_agent_id, claimed_at=task.claimed_at,
                   timeout_seconds=task.timeout_seconds, deadline_at=task.deadline_at, result=task.result,
                   error=task.error, session_key=task.session_key, created_at=task.created_at,
                   updated_at=task.updated_at)


def attachment_out(attachment: TeamTaskAttachment) -> AttachmentOut:
    return AttachmentOut(id=attachment.id, task_id=attachment.task_id, name=attachment.name,
                         vault_document_id=attachment.vault_document_id,
                         created_by_agent_id=attachment.created_by_agent_id, created_at=attachment.created_at)


# -- tasks --------------------------------------------------------------------------------------------------
@router.post("/teams/{team_id}/tasks", operation_id="tasks.create", status_code=201, response_model=TaskOut)
def create_task(team_id: TeamIdPath, body: TaskIn, call: Authenticated) -> TaskOut:
    """Create an open task for the team (operator), optionally for an agent on it (``assignee``)."""
    with call.gateway.db.transaction() as tx:
        assignee = None if body.assignee is None else agent_in(tx, call.who, body.assignee, field="assignee").id
        return task_out(tasks.create_task(tx, call.who.scope, team_id, title=body.title, description=body.description,
                                          assignee_agent_id=assignee, timeout_seconds=body.timeout_seconds))


@router.get("/teams/{team_id}/tasks", operation_id="tasks.list", response_model=Page[TaskOut])
def list_tasks(team_id: TeamIdPath, call: Authenticated, status: StatusFilter = None,
               limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None) -> Page[TaskOut]:
    """The team's tasks, oldest first, a page at a time (only those in ``status``, if given)."""
    return paged(call.gateway, call.who, "tasks.list", tasks.TASK_PAGES, fetch=lambda tx, **page: tasks.list_tasks(
        tx, call.who.scope, team_id, status=status, **page), out=task_out, limit=limit, cursor=cursor)


@router.get("/tasks/{task_id}", operation_id="tasks.get", response_model=TaskOut)
def get_task(task_id: TaskIdPath, call: Authenticated) -> TaskOut:
    """One task.  Another organization's: 404, like a missing one."""
    with call.gateway.db.transaction(write=False) as tx:
        return task_out(tasks.get_task(tx, call.who.scope, task_id))


@router.delete("/tasks/{task_id}", operation_id="tasks.delete", status_code=204, response_class=Response)
def delete_task(task_id: TaskIdPath, call: Authenticated) -> Response:
    """Delete a task and its attachments (admin); the vault documents they point at stay."""
    with call.gateway.db.transaction() as tx:
        tasks.delete_task(tx, call.who.scope, task_id)
    return Response(status_code=204)


@router.post("/tasks/{task_id}/assign", operation_id="tasks.assign", response_model=TaskOut)
def assign_task(task_id: TaskIdPath, body: TaskAssignIn, call: Authenticated) -> TaskOut:
    """Assign an open task to an agent on its team, or unassign it with null (operator)."""
    with call.gateway.db.transaction() as tx:
        agent = None if body.agent is None else agent_in(tx, call.who, body.agent).id
        return task_out(tasks.assign_task(tx, call.who.scope, task_id, agent))


@router.post("/tasks/{task_id}/claim", operation_id="tasks.claim", response_model=TaskOut)
def claim_task(task_id: TaskIdPath, body: TaskClaimIn, call: Authenticated) -> TaskOut:
    """An agent on the task's team takes the open task; its deadline starts (operator).  Already taken: 409."""
    with call.gateway.db.transaction() as tx:
        return task_out(tasks.claim_task(tx, call.who.scope, task_id, agent_in(tx, call.who, body.agent).id))


@router.post("/tasks/{task_id}/complete", operation_id="tasks.complete", response_model=TaskOut)
def complete_task(task_id: TaskIdPath, body: TaskCompleteIn, call: Authenticated) -> TaskOut:
    """Finish a claimed or in-progress task with its result (operator)."""
    with call.gateway.db.transaction() as tx:
        return task_out(tasks.complete_task(tx, call.who.scope, task_id, body.result))


@router.post("/tasks/{task_id}/fail", operation_id="tasks.fail", response_model=TaskOut)
def fail_task(task_id: TaskIdPath, body: TaskFailIn, call: Authenticated) -> TaskOut:
    """Mark a claimed or in-progress task failed, saying why (operator)."""
    with call.gateway.db.transaction() as tx:
        return task_out(tasks.fail_task(tx, call.who.scope, task_id, body.error))


@router.post("/tasks/{task_id}/cancel", operation_id="tasks.cancel", response_model=TaskOut)
def cancel_task(task_id: TaskIdPath, call: Authenticated) -> TaskOut:
    """Give a task up for good (admin): from open, claimed, in progress, failed or timed out."""
    with call.gateway.db.transaction() as tx:
        return task_out(tasks.cancel_task(tx, call.who.scope, task_id))


@router.post("/tasks/{task_id}/retry", operation_id="tasks.retry", response_model=TaskOut)
def retry_task(task_id: TaskIdPath, call: Authenticated) -> TaskOut:
    """Open a failed, timed-out or cancelled task again, unclaimed (admin)."""
    with call.gateway.db.transaction() as tx:
        return task_out(tasks.retry_task(tx, call.who.scope, task_id))


def _teammate(call: Authenticated, ref: str | None) -> str | None:
    if ref is None:
        return None
    with call.gateway.db.transaction(write=False) as tx:
        return agent_in(tx, call.who, ref).id


@router.post("/tasks/{task_id}/dispatch", operation_id="tasks.dispatch", status_code=202, response_model=TaskOut)
async def dispatch_task(task_id: TaskIdPath, body: TaskDispatchIn, call: Authenticated) -> TaskOut:
    """Have the teammate (``agent``, else the assignee; on the task's team) run the open or claimed task now,
    as the caller (operator).  Answers at once with the task in progress; its result or error is recorded on
    the task when the run ends."""
    runtime = call.gateway.runtime
    if runtime is None:
        raise ApiError(503, "unavailable", "this server runs no agent runtime")
    task_id = parse_id(task_id, "team-task", field="task_id")
    teammate = await run_in_threadpool(_teammate, call, body.agent)
    return task_out(await runtime.dispatch_teammate(call.who.context(), task_id, teammate))


# -- attachments --------------------------------------------------------------------------------------------
@router.post("/tasks/{task_id}/attachments", operation_id="tasks.attachments.add", status_code=201,
             response_model=AttachmentOut)
def add_attachment(task_id: TaskIdPath, body: AttachmentIn, call: Authenticated) -> AttachmentOut:
    """Attach something to the task (operator), optionally a vault document of the organization."""
    with call.gateway.db.transaction() as tx:
        return attachment_out(tasks.add_attachment(tx, call.who.scope, task_id, name=body.name,
                                                   vault_document_id=body.vault_document_id))


@router.get("/tasks/{task_id}/attachments", operation_id="tasks.attachments.list", response_model=Page[AttachmentOut])
def list_attachments(task_id: TaskIdPath, call: Authenticated,
                     limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None) -> Page[AttachmentOut]:
    """The task's attachments, oldest first, a page at a time."""
    return paged(call.gateway, call.who, "tasks.attachments.list", tasks.ATTACHMENT_PAGES,
                 fetch=lambda tx, **page: tasks.list_attachments(tx, call.who.scope, task_id, **page),
                 out=attachment_out, limit=limit, cursor=cursor)


@router.delete("/tasks/{task_id}/attachments/{attachment_id}", operation_id="tasks.attachments.delete",
               status_code=204, response_class=Response)
def delete_attachment(task_id: TaskIdPath, attachment_id: AttachmentIdPath, call: Authenticated) -> Response:
    """Remove an attachment of the task (operator); a vault document it points at stays.  Another task's: 404."""
    task_id = parse_id(task_id, "team-task", field="task_id")
    with call.gateway.db.transaction() as tx:
        if tasks.get_attachment(tx, call.who.scope, attachment_id).task_id != task_id:
            raise NotFoundError("team task attachment", attachment_id)
        tasks.delete_attachment(tx, call.who.scope, attachment_id)
    return Response(status_code=204)
