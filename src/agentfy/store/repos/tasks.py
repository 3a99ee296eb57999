"""Team tasks and their attachments.

A task belongs to a team; its creator and assignee are optional agents of the same tenant.  When one of
those agents is deleted the task survives with the reference set to NULL (it is the team's work, not the
agent's).  An attachment belongs to a task and may point at a vault document of the tenant; deleting that
document, or the agent that created the attachment, leaves the attachment with the reference set to NULL.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

import sqlalchemy as sa

from agentfy.identity import AgentId, OrgId, Scope, TeamId, TeamTaskAttachmentId, TeamTaskId, VaultDocumentId, parse_id
from agentfy.store.db import Tx, now
from agentfy.store.errors import InvalidInputError, NotFoundError
from agentfy.store.repos import agents
from agentfy.store.repos._common import require_text
from agentfy.store.schema import team_task_attachments, team_tasks, teams, vault_documents
from agentfy.store.sql import insert_returning_id

# Not (yet) in agentfy.identity; defined here until they move there with the other typed IDs.

DEFAULT_TASK_STATUS: Final = "open"
#: A status is a short lower-case word (``open``, ``in_progress``, ``done``…); the workflow is the caller's.
_STATUS: Final = re.compile(r"[a-z][a-z_]{0,31}")

_TEAM_EXISTS: Final = sa.select(teams.c.id).where(teams.c.tenant_id == sa.bindparam("tenant_id"),
                                                  teams.c.id == sa.bindparam("team_id"))
_VAULT_DOCUMENT_EXISTS: Final = sa.select(vault_documents.c.id).where(
    vault_documents.c.tenant_id == sa.bindparam("tenant_id"), vault_documents.c.id == sa.bindparam("document_id"))

_TASK_IN_TENANT: Final = team_tasks.c.tenant_id == sa.bindparam("tenant_id")
_TASK_COLUMNS: Final = (team_tasks.c.id, team_tasks.c.tenant_id, team_tasks.c.team_id,
                        team_tasks.c.created_by_agent_id, team_tasks.c.assignee_agent_id, team_tasks.c.title,
                        team_tasks.c.status, team_tasks.c.created_at)
_INSERT_TASK: Final = insert_returning_id(team_tasks, ["tenant_id", "team_id", "created_by_agent_id",
                                                       "assignee_agent_id", "title", "status", "created_at"])
_TASK_BY_ID: Final = sa.select(*_TASK_COLUMNS).where(_TASK_IN_TENANT, team_tasks.c.id == sa.bindparam("task_id"))
_LIST_TASKS: Final = (sa.select(*_TASK_COLUMNS)
                      .where(_TASK_IN_TENANT, team_tasks.c.team_id == sa.bindparam("team_id"))
                      .order_by(team_tasks.c.created_at, team_tasks.c.id))
_SET_STATUS: Final = (sa.update(team_tasks).where(_TASK_IN_TENANT, team_tasks.c.id == sa.bindparam("task_id"))
                      .values(status=sa.bindparam("status")))
_SET_ASSIGNEE: Final = (sa.update(team_tasks).where(_TASK_IN_TENANT, team_tasks.c.id == sa.bindparam("task_id"))
                        .values(assignee_agent_id=sa.bindparam("assignee_agent_id")))
_DELETE_TASK: Final = sa.delete(team_tasks).where(_TASK_IN_TENANT, team_tasks.c.id == sa.bindparam("task_id"))

_ATTACHMENT_IN_TENANT: Final = team_task_attachments.c.tenant_id == sa.bindparam("tenant_id")
_ATTACHMENT_COLUMNS: Final = (team_task_attachments.c.id, team_task_attachments.c.tenant_id,
                              team_task_attachments.c.task_id, team_task_attachments.c.created_by_agent_id,
                              team_task_attachments.c.vault_document_id, team_task_attachments.c.name,
                              team_task_attachments.c.created_at)
_INSERT_ATTACHMENT: Final = insert_returning_id(team_task_attachments, [
    "tenant_id", "task_id", "created_by_agent_id", "vault_document_id", "name", "created_at"])
_ATTACHMENT_BY_ID: Final = sa.select(*_ATTACHMENT_COLUMNS).where(
    _ATTACHMENT_IN_TENANT, team_task_attachments.c.id == sa.bindparam("attachment_id"))
_LIST_ATTACHMENTS: Final = (sa.select(*_ATTACHMENT_COLUMNS)
                            .where(_ATTACHMENT_IN_TENANT, team_task_attachments.c.task_id == sa.bindparam("task_id"))
                            .order_by(team_task_attachments.c.created_at, team_task_attachments.c.id))
_DELETE_ATTACHMENT: Final = sa.delete(team_task_attachments).where(
    _ATTACHMENT_IN_TENANT, team_task_attachments.c.id == sa.bindparam("attachment_id"))


@dataclass(frozen=True, slots=True)
class TeamTask:
    id: TeamTaskId
    tenant_id: OrgId
    team_id: TeamId
    created_by_agent_id: AgentId | None
    assignee_agent_id: AgentId | None
    title: str
    status: str
    created_at: str


@dataclass(frozen=True, slots=True)
class TeamTaskAttachment:
    id: TeamTaskAttachmentId
    tenant_id: OrgId
    task_id: TeamTaskId
    created_by_agent_id: AgentId | None
    vault_document_id: VaultDocumentId | None
    name: str
    created_at: str


def _agent_or_none(value: str | None) -> AgentId | None:
    return None if value is None else AgentId(value)


def _task(row: tuple[Any, ...]) -> TeamTask:
    return TeamTask(TeamTaskId(row[0]), OrgId(row[1]), TeamId(row[2]), _agent_or_none(row[3]),
                    _agent_or_none(row[4]), row[5], row[6], row[7])


def _attachment(row: tuple[Any, ...]) -> TeamTaskAttachment:
    return TeamTaskAttachment(TeamTaskAttachmentId(row[0]), OrgId(row[1]), TeamTaskId(row[2]),
                              _agent_or_none(row[3]), None if row[4] is None else VaultDocumentId(row[4]),
                              row[5], row[6])


def _status(value: object) -> str:
    if not isinstance(value, str) or not _STATUS.fullmatch(value):
        raise InvalidInputError(f"status {value!r} must be a lower-case word of letters and underscores "
                                "(at most 32), e.g. 'open' or 'in_progress'", field="status", value=value)
    return value


def _optional_agent(value: str | None, field: str) -> str | None:
    return None if value is None else parse_id(value, "agent", field=field)


def _require_team(tx: Tx, scope: Scope, team_id: str) -> None:
    if tx.one(_TEAM_EXISTS, {"tenant_id": scope.tenant_id, "team_id": team_id}) is None:
        raise NotFoundError("team", team_id)


def _require_task(tx: Tx, scope: Scope, task_id: str) -> TeamTask:
    row = tx.one(_TASK_BY_ID, {"tenant_id": scope.tenant_id, "task_id": task_id})
    if row is None:
        raise NotFoundError("team task", task_id)
    return _task(row)


# -- tasks ------------------------------------------------------------------------------------------------
def create_task(tx: Tx, scope: Scope, team_id: str, *, title: str, created_by_agent_id: str | None = None,
                assignee_agent_id: str | None = None, status: str = DEFAULT_TASK_STATUS) -> TeamTask:
    """A task of a team of the tenant; the creator and assignee, if given, are agents of the tenant."""
    team_id = parse_id(team_id, "team")
    creator = _optional_agent(created_by_agent_id, "created_by_agent_id")
    assignee = _optional_agent(assignee_agent_id, "assignee_agent_id")
    task_title = require_text(title, field="title", max_length=500)
    task_status = _status(status)
    _require_team(tx, scope, team_id)
    for agent_id in (creator, assignee):
        if agent_id is not None:
            agents.get_agent(tx, scope, agent_id)
    stamp = now()
    task_id = tx.insert_minted("team-task", _INSERT_TASK, {
        "tenant_id": scope.tenant_id, "team_id": team_id, "created_by_agent_id": creator,
        "assignee_agent_id": assignee, "title": task_title, "status": task_status, "created_at": stamp})
    return TeamTask(TeamTaskId(task_id), scope.tenant_id, TeamId(team_id), _agent_or_none(creator),
                    _agent_or_none(assignee), task_title, task_status, stamp)


def get_task(tx: Tx, scope: Scope, task_id: str) -> TeamTask:
    return _require_task(tx, scope, parse_id(task_id, "team-task", field="task_id"))


def list_tasks(tx: Tx, scope: Scope, team_id: str) -> list[TeamTask]:
    """The team's tasks, oldest first; a team not in the tenant is :class:`NotFoundError`."""
    team_id = parse_id(team_id, "team")
    _require_team(tx, scope, team_id)
    return [_task(row) for row in tx.all(_LIST_TASKS, {"tenant_id": scope.tenant_id, "team_id": team_id})]


def set_task_status(tx: Tx, scope: Scope, task_id: str, status: str) -> TeamTask:
    task_id = parse_id(task_id, "team-task", field="task_id")
    task_status = _status(status)
    if tx.execute(_SET_STATUS, {"tenant_id": scope.tenant_id, "task_id": task_id,
                                "status": task_status}).rowcount == 0:
        raise NotFoundError("team task", task_id)
    return _require_task(tx, scope, task_id)


def assign_task(tx: Tx, scope: Scope, task_id: str, agent_id: str | None) -> TeamTask:
    """Assign the task to an agent of the tenant (``None``: unassigned)."""
    task_id = parse_id(task_id, "team-task", field="task_id")
    assignee = _optional_agent(agent_id, "assignee_agent_id")
    _require_task(tx, scope, task_id)
    if assignee is not None:
        agents.get_agent(tx, scope, assignee)
    tx.execute(_SET_ASSIGNEE, {"tenant_id": scope.tenant_id, "task_id": task_id, "assignee_agent_id": assignee})
    return _require_task(tx, scope, task_id)


def delete_task(tx: Tx, scope: Scope, task_id: str) -> None:
    """Delete the task and its attachments (not the vault documents they point at)."""
    task_id = parse_id(task_id, "team-task", field="task_id")
    if tx.execute(_DELETE_TASK, {"tenant_id": scope.tenant_id, "task_id": task_id}).rowcount == 0:
        raise NotFoundError("team task", task_id)


# -- attachments ------------------------------------------------------------------------------------------
def add_attachment(tx: Tx, scope: Scope, task_id: str, *, name: str, created_by_agent_id: str | None = None,
                   vault_document_id: str | None = None) -> TeamTaskAttachment:
    """Attach something to a task of the tenant, optionally a vault document of the tenant."""
    task_id = parse_id(task_id, "team-task", field="task_id")
    creator = _optional_agent(created_by_agent_id, "created_by_agent_id")
    document = (None if vault_document_id is None
                else parse_id(vault_document_id, "vault-document", field="vault_document_id"))
    attachment_name = require_text(name, field="name", max_length=500)
    _require_task(tx, scope, task_id)
    if creator is not None:
        agents.get_agent(tx, scope, creator)
    if document is not None and tx.one(_VAULT_DOCUMENT_EXISTS, {"tenant_id": scope.tenant_id,
                                                                "document_id": document}) is None:
        raise NotFoundError("vault document", document)
    stamp = now()
    attachment_id = tx.insert_minted("team-task-attachment", _INSERT_ATTACHMENT, {
        "tenant_id": scope.tenant_id, "task_id": task_id, "created_by_agent_id": creator,
        "vault_document_id": document, "name": attachment_name, "created_at": stamp})
    return TeamTaskAttachment(TeamTaskAttachmentId(attachment_id), scope.tenant_id, TeamTaskId(task_id),
                              _agent_or_none(creator), None if document is None else VaultDocumentId(document),
                              attachment_name, stamp)


def get_attachment(tx: Tx, scope: Scope, attachment_id: str) -> TeamTaskAttachment:
    attachment_id = parse_id(attachment_id, "team-task-attachment", field="attachment_id")
    row = tx.one(_ATTACHMENT_BY_ID, {"tenant_id": scope.tenant_id, "attachment_id": attachment_id})
    if row is None:
        raise NotFoundError("team task attachment", attachment_id)
    return _attachment(row)


def list_attachments(tx: Tx, scope: Scope, task_id: str) -> list[TeamTaskAttachment]:
    """The task's attachments, oldest first; a task not in the tenant is :class:`NotFoundError`."""
    task = get_task(tx, scope, task_id)
    return [_attachment(row) for row in tx.all(_LIST_ATTACHMENTS, {"tenant_id": scope.tenant_id,
                                                                     "task_id": task.id})]


def delete_attachment(tx: Tx, scope: Scope, attachment_id: str) -> None:
    attachment_id = parse_id(attachment_id, "team-task-attachment", field="attachment_id")
    if tx.execute(_DELETE_ATTACHMENT, {"tenant_id": scope.tenant_id, "attachment_id": attachment_id}).rowcount == 0:
        raise NotFoundError("team task attachment", attachment_id)
