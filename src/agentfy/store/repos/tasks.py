r"""Team tasks, their lifecycle, and their attachments.

A task belongs to a team; its creator, assignee and claimer are optional agents of the same tenant (the
assignee and the claimer must be on the task's team: :func:`agentfy.store.repos.links.teams_of`).  When one
of those agents is deleted the task survives with the reference set to NULL (it is the team's work, not the
agent's).  An attachment belongs to a task and may point at a vault document of the tenant; deleting that
document, or the agent that created the attachment, leaves the attachment with the reference set to NULL.

**Lifecycle.**  A task's status is one of :data:`~agentfy.store.schema.TASK_STATUSES` and changes only by the
named operations below; :data:`TRANSITIONS` is the one rule of which operation moves a task from which
statuses to which::

    open --claim--> claimed --start--> in_progress --complete--> done
      \-------------start-------------/           \--fail------> failed
    open | claimed | in_progress | failed | timed_out --cancel--> cancelled (given up for good)
    claimed | in_progress --expire (deadline passed)--> timed_out
    failed | timed_out | cancelled --retry--> open

Every operation is one conditional ``UPDATE … WHERE status IN (<its sources>)`` whose row count says
whether it happened, so two processes racing for one task (two claimers) cannot both win: the loser sees
the winner's status and gets :class:`~agentfy.store.errors.ConflictError` (HTTP 409) naming the task, its
status and what may be done from there; nothing is written.  Claiming or starting a task sets its deadline
(``timeout_seconds`` from then); :func:`expire_overdue`, called periodically by the server, times out the
claimed or in-progress tasks whose deadline has passed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import MappingProxyType
from typing import Any, Final

import sqlalchemy as sa

from agentfy.identity import AgentId, OrgId, Scope, TeamId, TeamTaskAttachmentId, TeamTaskId, VaultDocumentId, parse_id
from agentfy.schedule import from_utc_text, utc_text
from agentfy.store.db import Tx, now
from agentfy.store.errors import ConflictError, InvalidInputError, NotFoundError
from agentfy.store.paging import Keyset
from agentfy.store.repos import agents, links
from agentfy.store.repos._common import require_text
from agentfy.store.schema import (
    TASK_STATUSES,
    TASK_TEXT_MAX_LENGTH,
    team_task_attachments,
    team_tasks,
    teams,
    vault_documents,
)
from agentfy.store.sql import insert_returning_id

DEFAULT_TASK_STATUS: Final = "open"
DEFAULT_TIMEOUT_SECONDS: Final = 3600
MAX_TIMEOUT_SECONDS: Final = 7 * 24 * 3600
TITLE_MAX_LENGTH: Final = 500


@dataclass(frozen=True, slots=True)
class Transition:
    """An operation's rule: the statuses it may start from and the status it leaves the task in."""

    sources: tuple[str, ...]
    target: str


#: The lifecycle (see the module docstring): operation -> the statuses it applies to and where it leads.
TRANSITIONS: Final = MappingProxyType({
    "assign": Transition(("open",), "open"),
    "claim": Transition(("open",), "claimed"),
    "start": Transition(("open", "claimed"), "in_progress"),
    "complete": Transition(("claimed", "in_progress"), "done"),
    "fail": Transition(("claimed", "in_progress"), "failed"),
    "cancel": Transition(("open", "claimed", "in_progress", "failed", "timed_out"), "cancelled"),
    "expire": Transition(("claimed", "in_progress"), "timed_out"),
    "retry": Transition(("failed", "timed_out", "cancelled"), "open"),
})


def allowed_from(status: str) -> list[str]:
    """The operations :data:`TRANSITIONS` allows on a task in ``status`` (``expire`` is the sweep's)."""
    return [name for name, rule in TRANSITIONS.items() if status in rule.sources and name != "expire"]


_TEAM_EXISTS: Final = sa.select(teams.c.id).where(teams.c.tenant_id == sa.bindparam("tenant_id"),
                                                  teams.c.id == sa.bindparam("team_id"))
_VAULT_DOCUMENT_EXISTS: Final = sa.select(vault_documents.c.id).where(
    vault_documents.c.tenant_id == sa.bindparam("tenant_id"), vault_documents.c.id == sa.bindparam("document_id"))

_TASK_IN_TENANT: Final = team_tasks.c.tenant_id == sa.bindparam("tenant_id")
_THE_TASK: Final = team_tasks.c.id == sa.bindparam("task_id")
_TASK_COLUMNS: Final = (team_tasks.c.id, team_tasks.c.tenant_id, team_tasks.c.team_id,
                        team_tasks.c.created_by_agent_id, team_tasks.c.assignee_agent_id, team_tasks.c.title,
                        team_tasks.c.status, team_tasks.c.created_at, team_tasks.c.description, team_tasks.c.result,
                        team_tasks.c.error, team_tasks.c.claimed_by_agent_id, team_tasks.c.claimed_at,
                        team_tasks.c.timeout_seconds, team_tasks.c.deadline_at, team_tasks.c.updated_at,
                        team_tasks.c.session_key)
_INSERT_TASK: Final = insert_returning_id(team_tasks, ["tenant_id", "team_id", "created_by_agent_id",
                                                       "assignee_agent_id", "title", "status", "created_at",
                                                       "description", "timeout_seconds", "updated_at"])
_TASK_BY_ID: Final = sa.select(*_TASK_COLUMNS).where(_TASK_IN_TENANT, _THE_TASK)
_TASK_ORDER: Final = (team_tasks.c.created_at, team_tasks.c.id)
#: A team's tasks, oldest first, optionally only those in one status (``status`` NULL: all).
TASK_PAGES: Final[Keyset[TeamTask]] = Keyset(
    sa.select(*_TASK_COLUMNS).where(_TASK_IN_TENANT, team_tasks.c.team_id == sa.bindparam("team_id"),
                                    sa.or_(team_tasks.c.status == sa.bindparam("status"),
                                           sa.cast(sa.bindparam("status"), sa.Text).is_(None))),
    _TASK_ORDER, lambda task: (task.created_at, task.id))
_DELETE_TASK: Final = sa.delete(team_tasks).where(_TASK_IN_TENANT, _THE_TASK)
#: What each operation writes besides the status and ``updated_at`` (bound by name at execution).
_WRITES: Final[dict[str, tuple[str, ...]]] = {
    "assign": ("assignee_agent_id",),
    "claim": ("claimed_by_agent_id", "claimed_at", "deadline_at"),
    "start": ("assignee_agent_id", "claimed_by_agent_id", "claimed_at", "deadline_at", "session_key"),
    "complete": ("result", "deadline_at", "session_key"),
    "fail": ("error", "deadline_at", "session_key"),
    "cancel": ("error", "deadline_at"),
    "expire": ("error", "deadline_at"),
    "retry": ("result", "error", "claimed_by_agent_id", "claimed_at", "deadline_at"),
}
#: Only the claimer may complete or fail a claimed task when the caller says who it is (an agent's tool).
_BY_CLAIMER: Final = sa.or_(team_tasks.c.claimed_by_agent_id == sa.bindparam("by_agent_id"),
                            sa.cast(sa.bindparam("by_agent_id"), sa.Text).is_(None))


def _status_in(statuses: tuple[str, ...]) -> sa.ColumnElement[bool]:
    """``status IN (…)`` of constant statuses, with the values in the SQL (compiled once, no expanding list)."""
    return team_tasks.c.status.in_([sa.literal_column(repr(status)) for status in statuses])


def _move_statement(operation: str) -> sa.Update:
    rule = TRANSITIONS[operation]
    condition = [_TASK_IN_TENANT, _THE_TASK, _status_in(rule.sources)]
    if operation in ("complete", "fail"):
        condition.append(_BY_CLAIMER)
    if operation == "expire":
        condition.append(team_tasks.c.deadline_at <= sa.bindparam("now"))
    values: dict[str, Any] = {column: sa.bindparam(f"new_{column}") for column in _WRITES[operation]}
    if "session_key" in values:  # a run's session, once known, is kept until another run's replaces it
        values["session_key"] = sa.func.coalesce(sa.cast(values["session_key"], sa.Text), team_tasks.c.session_key)
    return sa.update(team_tasks).where(*condition).values(status=rule.target, updated_at=sa.bindparam("updated_at"),
                                                          **values)


_MOVES: Final = {operation: _move_statement(operation) for operation in TRANSITIONS}
_OVERDUE: Final = (sa.select(team_tasks.c.tenant_id, team_tasks.c.id)
                   .where(_status_in(TRANSITIONS["expire"].sources),
                          team_tasks.c.deadline_at <= sa.bindparam("now"))
                   .order_by(team_tasks.c.deadline_at, team_tasks.c.id).limit(sa.bindparam("limit")))

_ATTACHMENT_IN_TENANT: Final = team_task_attachments.c.tenant_id == sa.bindparam("tenant_id")
_ATTACHMENT_COLUMNS: Final = (team_task_attachments.c.id, team_task_attachments.c.tenant_id,
                              team_task_attachments.c.task_id, team_task_attachments.c.created_by_agent_id,
                              team_task_attachments.c.vault_document_id, team_task_attachments.c.name,
                              team_task_attachments.c.created_at)
_INSERT_ATTACHMENT: Final = insert_returning_id(team_task_attachments, [
    "tenant_id", "task_id", "created_by_agent_id", "vault_document_id", "name", "created_at"])
_ATTACHMENT_BY_ID: Final = sa.select(*_ATTACHMENT_COLUMNS).where(
    _ATTACHMENT_IN_TENANT, team_task_attachments.c.id == sa.bindparam("attachment_id"))
ATTACHMENT_PAGES: Final[Keyset[TeamTaskAttachment]] = Keyset(
    sa.select(*_ATTACHMENT_COLUMNS).where(_ATTACHMENT_IN_TENANT,
                                          team_task_attachments.c.task_id == sa.bindparam("task_id")),
    (team_task_attachments.c.created_at, team_task_attachments.c.id), lambda a: (a.created_at, a.id))
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
    description: str
    result: str | None
    error: str | None
    claimed_by_agent_id: AgentId | None
    claimed_at: str | None
    timeout_seconds: int
    deadline_at: str | None
    updated_at: str
    #: The session of its last dispatched run (``None``: never dispatched).
    session_key: str | None

    def prompt(self) -> str:
        """What an agent working on the task is told: its title, then its description."""
        return f"{self.title}\n\n{self.description}" if self.description else self.title


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
                    _agent_or_none(row[4]), row[5], row[6], row[7], row[8], row[9], row[10],
                    _agent_or_none(row[11]), row[12], int(row[13]), row[14], row[15], row[16])


def _attachment(row: tuple[Any, ...]) -> TeamTaskAttachment:
    return TeamTaskAttachment(TeamTaskAttachmentId(row[0]), OrgId(row[1]), TeamTaskId(row[2]),
                              _agent_or_none(row[3]), None if row[4] is None else VaultDocumentId(row[4]),
                              row[5], row[6])


def status_filter(value: object) -> str:
    """A status to filter by: one of :data:`~agentfy.store.schema.TASK_STATUSES`."""
    if not isinstance(value, str) or value not in TASK_STATUSES:
        raise InvalidInputError(f"status {value!r} is not a task status; expected one of {', '.join(TASK_STATUSES)}",
                                field="status", value=value, expected=", ".join(TASK_STATUSES))
    return value


def _timeout(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_TIMEOUT_SECONDS:
        raise InvalidInputError(f"timeout_seconds {value!r} must be a whole number of seconds from 1 to "
                                f"{MAX_TIMEOUT_SECONDS} (a week)", field="timeout_seconds", value=value)
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


def require_teammate(tx: Tx, scope: Scope, team_id: str, agent_id: str, *, field: str) -> None:
    """:class:`InvalidInputError` unless the agent (of the scope) is on the team, as a member or the lead."""
    agents.get_agent(tx, scope, agent_id)
    if team_id not in links.teams_of(tx, scope, agent_id):
        raise InvalidInputError(f"{field} {agent_id!r} is not on team {team_id!r}; add it to the team first",
                                field=field, value=agent_id)


def _deadline(task: TeamTask, stamp: str) -> str:
    return utc_text(from_utc_text(stamp) + timedelta(seconds=task.timeout_seconds))


def _move(tx: Tx, scope: Scope, task_id: str, operation: str, writes: dict[str, Any], *,
          by_agent_id: str | None = None) -> TeamTask:
    """Apply ``operation`` if :data:`TRANSITIONS` allows it from the task's status at this moment, else
    :class:`ConflictError` saying what the status is and what is allowed from it (nothing written)."""
    stamp = now()
    params: dict[str, Any] = {"tenant_id": scope.tenant_id, "task_id": task_id, "updated_at": stamp,
                              **{f"new_{column}": None for column in _WRITES[operation]},
                              **{f"new_{column}": value for column, value in writes.items()}}
    if operation in ("complete", "fail"):
        params["by_agent_id"] = by_agent_id
    if tx.execute(_MOVES[operation], params).rowcount == 0:
        task = _require_task(tx, scope, task_id)
        rule = TRANSITIONS[operation]
        if task.status in rule.sources:  # the status allowed it: the claimer did not
            raise ConflictError(f"team task {task_id!r} is {task.status} by agent {task.claimed_by_agent_id!r}; "
                                f"only that agent may {operation} it", field="claimed_by_agent_id",
                                value=by_agent_id)
        allowed = allowed_from(task.status)
        raise ConflictError(f"team task {task_id!r} is {task.status}: it cannot {operation} (that needs "
                            f"{' or '.join(rule.sources)}); from {task.status} it may "
                            f"{', '.join(allowed) if allowed else 'nothing more'}", field="status",
                            value=task.status)
    return _require_task(tx, scope, task_id)


def _task_id(value: str) -> str:
    return parse_id(value, "team-task", field="task_id")


# -- tasks ------------------------------------------------------------------------------------------------
def create_task(tx: Tx, scope: Scope, team_id: str, *, title: str, description: str = "",
                created_by_agent_id: str | None = None, assignee_agent_id: str | None = None,
                timeout_seconds: int = DEFAULT_TIMEOUT_SECONDS) -> TeamTask:
    """An ``open`` task of a team of the tenant; the creator, if given, is an agent of the tenant, the
    assignee an agent on the team.  ``timeout_seconds``: how long it may be worked on once claimed."""
    team_id = parse_id(team_id, "team")
    creator = _optional_agent(created_by_agent_id, "created_by_agent_id")
    assignee = _optional_agent(assignee_agent_id, "assignee_agent_id")
    task_title = require_text(title, field="title", max_length=TITLE_MAX_LENGTH)
    task_description = require_text(description, field="description", max_length=TASK_TEXT_MAX_LENGTH,
                                    allow_empty=True)
    timeout = _timeout(timeout_seconds)
    _require_team(tx, scope, team_id)
    if creator is not None:
        agents.get_agent(tx, scope, creator)
    if assignee is not None:
        require_teammate(tx, scope, team_id, assignee, field="assignee_agent_id")
    stamp = now()
    task_id = tx.insert_minted("team-task", _INSERT_TASK, {
        "tenant_id": scope.tenant_id, "team_id": team_id, "created_by_agent_id": creator,
        "assignee_agent_id": assignee, "title": task_title, "status": DEFAULT_TASK_STATUS, "created_at": stamp,
        "description": task_description, "timeout_seconds": timeout, "updated_at": stamp})
    return _require_task(tx, scope, task_id)


def get_task(tx: Tx, scope: Scope, task_id: str) -> TeamTask:
    return _require_task(tx, scope, _task_id(task_id))


def list_tasks(tx: Tx, scope: Scope, team_id: str, *, status: str | None = None,
               after: Sequence[Any] | None = None, limit: int | None = None) -> list[TeamTask]:
    """The team's tasks (only those in ``status``, if given), oldest first, all or a page; a team not in the
    tenant is :class:`NotFoundError`."""
    team_id = parse_id(team_id, "team")
    wanted = None if status is None else status_filter(status)
    _require_team(tx, scope, team_id)
    return TASK_PAGES.fetch(tx, {"tenant_id": scope.tenant_id, "team_id": team_id, "status": wanted}, _task,
                            after=after, limit=limit)


def assign_task(tx: Tx, scope: Scope, task_id: str, agent_id: str | None) -> TeamTask:
    """Assign an open task to an agent on its team (``None``: unassigned)."""
    task_id = _task_id(task_id)
    assignee = _optional_agent(agent_id, "assignee_agent_id")
    task = _require_task(tx, scope, task_id)
    if assignee is not None:
        require_teammate(tx, scope, task.team_id, assignee, field="assignee_agent_id")
    return _move(tx, scope, task_id, "assign", {"assignee_agent_id": assignee})


def claim_task(tx: Tx, scope: Scope, task_id: str, agent_id: str) -> TeamTask:
    """The agent (on the task's team) takes the open task: ``claimed`` by it, with a deadline.  Of two
    claimers racing, one wins and the other gets :class:`ConflictError`."""
    task_id = _task_id(task_id)
    agent = parse_id(agent_id, "agent", field="agent_id")
    task = _require_task(tx, scope, task_id)
    require_teammate(tx, scope, task.team_id, agent, field="agent_id")
    stamp = now()
    return _move(tx, scope, task_id, "claim", {"claimed_by_agent_id": agent, "claimed_at": stamp,
                                               "deadline_at": _deadline(task, stamp)})


def start_task(tx: Tx, scope: Scope, task_id: str, agent_id: str, *, session_key: str | None = None) -> TeamTask:
    """Work on the task begins (a dispatched run): ``in_progress``, assigned to and claimed by the agent (on
    the task's team), with a new deadline; ``session_key`` is the run's session."""
    task_id = _task_id(task_id)
    agent = parse_id(agent_id, "agent", field="agent_id")
    task = _require_task(tx, scope, task_id)
    require_teammate(tx, scope, task.team_id, agent, field="agent_id")
    if task.status == "claimed" and task.claimed_by_agent_id not in (None, agent):
        raise ConflictError(f"team task {task_id!r} is claimed by agent {task.claimed_by_agent_id!r}, not "
                            f"{agent!r}", field="agent_id", value=agent)
    stamp = now()
    return _move(tx, scope, task_id, "start", {"assignee_agent_id": agent, "claimed_by_agent_id": agent,
                                               "claimed_at": task.claimed_at or stamp,
                                               "deadline_at": _deadline(task, stamp), "session_key": session_key})


def complete_task(tx: Tx, scope: Scope, task_id: str, result: str, *, by_agent_id: str | None = None,
                  session_key: str | None = None) -> TeamTask:
    """``done`` with ``result``.  ``by_agent_id``: the agent asking, which must be the claimer;
    ``session_key``: the session of the run that did it (a dispatched run)."""
    answer = require_text(result, field="result", max_length=TASK_TEXT_MAX_LENGTH, allow_empty=True)
    return _move(tx, scope, _task_id(task_id), "complete", {"result": answer, "session_key": session_key},
                 by_agent_id=by_agent_id)


def fail_task(tx: Tx, scope: Scope, task_id: str, error: str, *, by_agent_id: str | None = None,
              session_key: str | None = None) -> TeamTask:
    """``failed`` with ``error`` (why).  ``by_agent_id``: the agent asking, which must be the claimer."""
    reason = require_text(error, field="error", max_length=TASK_TEXT_MAX_LENGTH)
    return _move(tx, scope, _task_id(task_id), "fail", {"error": reason, "session_key": session_key},
                 by_agent_id=by_agent_id)


def cancel_task(tx: Tx, scope: Scope, task_id: str, reason: str | None = None) -> TeamTask:
    """``cancelled`` (``reason``, if given, is recorded as its error)."""
    why = "cancelled" if reason is None else require_text(reason, field="reason", max_length=TASK_TEXT_MAX_LENGTH)
    return _move(tx, scope, _task_id(task_id), "cancel", {"error": why})


def retry_task(tx: Tx, scope: Scope, task_id: str) -> TeamTask:
    """A failed, timed-out or cancelled task is ``open`` again: unclaimed, its result and error cleared."""
    return _move(tx, scope, _task_id(task_id), "retry", {})


def expire_overdue(tx: Tx, at: datetime, *, limit: int = 100) -> list[TeamTask]:
    """Time out every claimed or in-progress task (of any tenant) whose deadline is at or before ``at``, at
    most ``limit`` of them: ``timed_out`` with an error saying when.  The server calls it periodically; a
    task finished meanwhile by another process is left as it is (its status no longer allows it)."""
    stamp = utc_text(at)
    expired: list[TeamTask] = []
    for tenant_id, task_id in tx.all(_OVERDUE, {"now": stamp, "limit": limit}):
        scope = Scope(OrgId(tenant_id))
        params = {"tenant_id": tenant_id, "task_id": task_id, "now": stamp, "updated_at": stamp,
                  "new_error": f"timed out: nobody finished it by its deadline (swept at {stamp})",
                  "new_deadline_at": None}
        if tx.execute(_MOVES["expire"], params).rowcount:
            expired.append(_require_task(tx, scope, task_id))
    return expired


def delete_task(tx: Tx, scope: Scope, task_id: str) -> None:
    """Delete the task and its attachments (not the vault documents they point at)."""
    task_id = _task_id(task_id)
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


def list_attachments(tx: Tx, scope: Scope, task_id: str, *, after: Sequence[Any] | None = None,
                     limit: int | None = None) -> list[TeamTaskAttachment]:
    """The task's attachments, oldest first, all or a page; a task not in the tenant is :class:`NotFoundError`."""
    task = get_task(tx, scope, task_id)
    return ATTACHMENT_PAGES.fetch(tx, {"tenant_id": scope.tenant_id, "task_id": task.id}, _attachment, after=after,
                                  limit=limit)


def delete_attachment(tx: Tx, scope: Scope, attachment_id: str) -> None:
    attachment_id = parse_id(attachment_id, "team-task-attachment", field="attachment_id")
    if tx.execute(_DELETE_ATTACHMENT, {"tenant_id": scope.tenant_id, "attachment_id": attachment_id}).rowcount == 0:
        raise NotFoundError("team task attachment", attachment_id)
