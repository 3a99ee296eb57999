"""Team tasks: the organization's teams, a team's tasks grouped by status (filterable), one task's page with
its history, result and attachments, and the lifecycle actions cancel, retry and assign.

Everything is the tasks API (``GET /v1/teams``, ``GET /v1/teams/{id}/tasks?status=``, ``GET /v1/tasks/{id}``
and its ``/attachments``, ``POST /v1/tasks/{id}/cancel``, ``/retry``, ``/assign``).  Which transition is legal
from a status is the API's rule alone: a button is shown to the roles the access policy lets call it, and an
action the task's status does not allow is the API's 409, shown as its message.  Teams and tasks are addressed
by ID; agents are shown by key (the team's members name them).
"""

from __future__ import annotations

from typing import Any, Final, get_args

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from agentfy.gateway.console.api import ConsoleApi, segment
from agentfy.gateway.console.layout import copyable, esc, field, notice, page, post_form, table
from agentfy.gateway.console.responses import html, redirect
from agentfy.gateway.console.visit import Visit, checked_form, text_of, visit
from agentfy.gateway.routes.schemas_tasks import TaskStatus

router = APIRouter()
PAGE_SIZE: Final = 100
#: The lifecycle's statuses in the API's order (the groups of a team's page).
STATUSES: Final[tuple[str, ...]] = get_args(TaskStatus)
#: What a status is called on the page.
STATUS_NAMES: Final = {status: status.replace("_", " ") for status in STATUSES}


def team_url(team_id: str) -> str:
    return f"/console/teams/{segment(team_id)}"


def task_url(task_id: str, tail: str = "") -> str:
    return f"/console/tasks/{segment(task_id)}{tail}"


def _team_row(team: dict[str, Any]) -> list[str]:
    return [f'<a href="{esc(team_url(team["id"]))}">{esc(team["name"])}</a>', copyable(team["id"]),
            esc(team["created_at"])]


@router.get("/teams")
async def list_teams(request: Request, cursor: str | None = None) -> Response:
    current = await visit(request)
    found = await current.api.get("/teams", limit=str(PAGE_SIZE), cursor=cursor)
    more = "" if found["next_cursor"] is None else (
        f'<p><a href="/console/teams?cursor={esc(segment(found["next_cursor"]))}">Next page</a></p>')
    body = table(("Team", "ID", "Created"), (_team_row(team) for team in found["items"]), table_id="teams",
                 empty="No teams yet.") + more
    return html(page(f"Teams of {current.viewer.tenant_slug}", body, viewer=current.viewer, section="tasks"))


async def _agent_keys(api: ConsoleApi, team_id: str) -> dict[str, str]:
    """The team's agents, ID -> agent key (an archived one has none: it is shown by ID)."""
    members = await api.get(f"/teams/{segment(team_id)}/members", limit=str(PAGE_SIZE))
    return {member["agent_id"]: member["agent_key"] for member in members["items"] if member["agent_key"]}


def _agent(agent_id: str | None, keys: dict[str, str]) -> str:
    if agent_id is None:
        return ""
    key = keys.get(agent_id)
    return f"<code>{esc(agent_id)}</code>" if key is None else esc(key)


def _status(task: dict[str, Any]) -> str:
    name = STATUS_NAMES.get(task["status"], task["status"])
    return f'<span class="status status-{esc(task["status"])}">{esc(name)}</span>'


def _task_row(task: dict[str, Any], keys: dict[str, str]) -> list[str]:
    return [f'<a href="{esc(task_url(task["id"]))}">{esc(task["title"])}</a>', _status(task),
            _agent(task["assignee_agent_id"], keys), _agent(task["claimed_by_agent_id"], keys), esc(task["updated_at"]),
            copyable(task["id"])]


def _status_filter(team_id: str, chosen: str) -> str:
    options = "".join(f'<option value="{esc(s)}"{" selected" if s == chosen else ""}>{esc(STATUS_NAMES[s])}</option>'
                      for s in STATUSES)
    return (f'<form method="get" action="{esc(team_url(team_id))}" class="filter" role="search">'
            '<label for="status">Show tasks in status</label><select id="status" name="status">'
            f'<option value="">every status</option>{options}</select><button type="submit">Filter</button></form>')


@router.get("/teams/{team_id}")
async def show_team(request: Request, team_id: str, status: str = "", cursor: str | None = None) -> Response:
    current = await visit(request)
    request.state.back = "/console/teams"
    team = await current.api.get(f"/teams/{segment(team_id)}")
    found = await current.api.get(f"/teams/{segment(team['id'])}/tasks", status=status or None,
                                  limit=str(PAGE_SIZE), cursor=cursor)
    keys = await _agent_keys(current.api, team["id"])
    groups = []
    for name in STATUSES:
        tasks = [task for task in found["items"] if task["status"] == name]
        if tasks:
            groups.append(f'<section id="tasks-{esc(name)}"><h2>{esc(STATUS_NAMES[name]).capitalize()} '
                          f'({len(tasks)})</h2>' + table(("Task", "Status", "Assignee", "Claimed by", "Updated", "ID"),
                                                         (_task_row(task, keys) for task in tasks),
                                                         table_id=f"tasks-{name}-table", empty="") + "</section>")
    more = "" if found["next_cursor"] is None else (
        f'<p><a href="{esc(team_url(team["id"]))}?status={esc(segment(status))}&amp;cursor='
        f'{esc(segment(found["next_cursor"]))}">Next page</a></p>')
    empty = f'<p class="empty" id="no-tasks">{"No tasks in that status." if status else "No tasks yet."}</p>'
    facts = (f'<dl class="facts"><dt>ID</dt><dd>{copyable(team["id"])}</dd><dt>Lead</dt>'
             f'<dd>{_agent(team["lead_agent_id"], keys) or "none"}</dd></dl>')
    body = facts + _status_filter(team["id"], status) + ("".join(groups) or empty) + more
    return html(page(f"Tasks of team {team['name']}", body, viewer=current.viewer, section="tasks"))


def _history(task: dict[str, Any], keys: dict[str, str]) -> str:
    """What the task records of its course: created, claimed (by whom), its deadline, its last change."""
    rows = [("Created", esc(task["created_at"]), _agent(task["created_by_agent_id"], keys) or "by the API")]
    if task["claimed_at"]:
        rows.append(("Claimed", esc(task["claimed_at"]), _agent(task["claimed_by_agent_id"], keys)))
    if task["deadline_at"]:
        rows.append(("Deadline", esc(task["deadline_at"]), f'times out after {esc(task["timeout_seconds"])} s'))
    rows.append((f"Last change (now {STATUS_NAMES.get(task['status'], task['status'])})", esc(task["updated_at"]),
                 ""))
    return "<h2>History</h2>" + table(("Step", "When", "Who"), ([esc(step), when, who] for step, when, who in rows),
                                      table_id="history", empty="")


def _outcome(task: dict[str, Any]) -> str:
    parts = []
    if task["result"] is not None:
        parts.append(f'<h2>Result</h2><pre id="result">{esc(task["result"])}</pre>')
    if task["error"] is not None:
        parts.append(f'<h2>Error</h2><pre id="task-error">{esc(task["error"])}</pre>')
    return "".join(parts)


def _attachment_row(attachment: dict[str, Any], keys: dict[str, str]) -> list[str]:
    document = attachment["vault_document_id"]
    return [esc(attachment["name"]), "" if document is None else f"<code>{esc(document)}</code>",
            _agent(attachment["created_by_agent_id"], keys), esc(attachment["created_at"])]


def _task_actions(current: Visit, task: dict[str, Any], keys: dict[str, str]) -> str:
    parts = []
    csrf = current.viewer.csrf
    if current.may("tasks.cancel"):
        parts.append(post_form(task_url(task["id"], "/cancel"), csrf, "", label="Cancel task",
                               extra=' class="inline danger" id="cancel"'))
    if current.may("tasks.retry"):
        parts.append(post_form(task_url(task["id"], "/retry"), csrf, "", label="Retry task",
                               extra=' class="inline" id="retry"'))
    actions = f'<h2>Actions</h2><div class="actions">{"".join(parts)}</div>' if parts else ""
    if current.may("tasks.assign"):
        assignee = keys.get(task["assignee_agent_id"] or "", task["assignee_agent_id"] or "")
        fields = field("agent", "Agent (key or ID; empty unassigns)", value=assignee, extra=' autocomplete="off"')
        actions += "<h2>Assign</h2>" + post_form(task_url(task["id"], "/assign"), csrf, fields, label="Assign",
                                                 extra=' id="assign"')
    return actions


@router.get("/tasks/{task_id}")
async def show_task(request: Request, task_id: str, done: str | None = None) -> Response:
    current = await visit(request)
    request.state.back = "/console/teams"
    task = await current.api.get(f"/tasks/{segment(task_id)}")
    keys = await _agent_keys(current.api, task["team_id"])
    attachments = await current.api.get(f"/tasks/{segment(task['id'])}/attachments", limit=str(PAGE_SIZE))
    facts = (f'<dl class="facts"><dt>Status</dt><dd id="task-status">{_status(task)}</dd>'
             f'<dt>Team</dt><dd><a href="{esc(team_url(task["team_id"]))}"><code>{esc(task["team_id"])}</code></a></dd>'
             f'<dt>Assignee</dt><dd id="assignee">{_agent(task["assignee_agent_id"], keys) or "nobody"}</dd>'
             f'<dt>ID</dt><dd>{copyable(task["id"])}</dd>'
             + ("" if not task["session_key"] else f'<dt>Session</dt><dd><code>{esc(task["session_key"])}</code></dd>')
             + "</dl>"
             + ("" if not task["description"] else f'<h2>Description</h2><pre>{esc(task["description"])}</pre>'))
    body = ((notice(f"Done: {done}.") if done else "") + facts + _history(task, keys) + _outcome(task)
            + "<h2>Attachments</h2>" + table(("Name", "Vault document", "Added by", "Added"),
                                             (_attachment_row(a, keys) for a in attachments["items"]),
                                             table_id="attachments", empty="No attachments.")
            + _task_actions(current, task, keys))
    return html(page(f"Task {task['title']}", body, viewer=current.viewer, section="tasks"))


async def _move(request: Request, task_id: str, operation: str) -> Response:
    current = await visit(request)
    await checked_form(request, current.session)
    request.state.back = task_url(task_id)
    moved = await current.api.post(f"/tasks/{segment(task_id)}/{operation}")
    return redirect(request, task_url(task_id, "?done=" + segment(f"{operation}, now {moved['status']}")))


@router.post("/tasks/{task_id}/cancel")
async def cancel(request: Request, task_id: str) -> Response:
    return await _move(request, task_id, "cancel")


@router.post("/tasks/{task_id}/retry")
async def retry(request: Request, task_id: str) -> Response:
    return await _move(request, task_id, "retry")


@router.post("/tasks/{task_id}/assign")
async def assign(request: Request, task_id: str) -> Response:
    current = await visit(request)
    form = await checked_form(request, current.session)
    request.state.back = task_url(task_id)
    agent = text_of(form, "agent").strip()
    await current.api.post(f"/tasks/{segment(task_id)}/assign", {"agent": agent or None})
    return redirect(request, task_url(task_id, "?done=assign"))
