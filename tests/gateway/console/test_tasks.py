"""The Team tasks screen: the organization's teams, a team's tasks grouped and filtered by status, a task's page
with its history, result and attachments; cancel, retry and assign as the API's actions (an illegal transition
shows the API's 409); a member sees the tasks but no actions and the API refuses them; another organization's
teams and tasks never appear; on both engines."""

from __future__ import annotations

import re
from typing import Any

from fastapi.testclient import TestClient

from tests.gateway.console.conftest import SignedIn
from tests.gateway.console.helpers import post_form
from tests.helpers.tenants import Tenant


def _post(client: TestClient, tenant: Tenant, path: str, body: Any = None, status: int = 201) -> Any:
    answer = client.post(f"/v1{path}", json=body, headers=tenant.headers())
    assert answer.status_code == status, answer.text
    return answer.json()


def _team(client: TestClient, tenant: Tenant, name: str = "Support") -> tuple[dict[str, Any], dict[str, Any]]:
    """A team of ``tenant`` with one agent on it (``<slug>-writer``)."""
    agent = _post(client, tenant, "/agents", {"agent_key": f"{tenant.slug}-writer"})
    team = _post(client, tenant, "/teams", {"name": name})
    _post(client, tenant, f"/teams/{team['id']}/members", {"agent": agent["agent_key"]})
    return team, agent


def _groups(page: str) -> list[str]:
    return re.findall(r'<section id="tasks-(\w+)">', page)


def test_a_teams_tasks_are_grouped_and_filtered_by_status(signed_in: SignedIn, acme: Tenant,
                                                           globex: Tenant) -> None:
    client = signed_in("operator")
    team, agent = _team(client, acme)
    theirs, _ = _team(client, globex, "Globex secret team")
    waiting = _post(client, acme, f"/teams/{team['id']}/tasks", {"title": "Answer the mail",
                                                                 "assignee": agent["agent_key"]})
    finished = _post(client, acme, f"/teams/{team['id']}/tasks", {"title": "Write the report"})
    _post(client, acme, f"/tasks/{finished['id']}/claim", {"agent": agent["agent_key"]}, 200)
    _post(client, acme, f"/tasks/{finished['id']}/complete", {"result": "the report"}, 200)
    hidden = _post(client, globex, f"/teams/{theirs['id']}/tasks", {"title": "Globex plans"})

    teams = client.get("/console/teams").text
    assert f"/console/teams/{team['id']}" in teams and "Support" in teams
    assert "Globex secret team" not in teams and theirs["id"] not in teams

    page = client.get(f"/console/teams/{team['id']}").text
    assert _groups(page) == ["open", "done"]
    assert "Answer the mail" in page and "Write the report" in page and "Globex plans" not in page
    assert re.search(r'id="tasks-open-table".*acme-writer', page, re.S)  # the assignee by key
    done_only = client.get(f"/console/teams/{team['id']}?status=done").text
    assert _groups(done_only) == ["done"] and "Answer the mail" not in done_only
    assert '<option value="done" selected>' in done_only
    assert "No tasks in that status." in client.get(f"/console/teams/{team['id']}?status=failed").text

    refused = client.get(f"/console/teams/{team['id']}?status=finished")
    assert refused.status_code == 422 and "finished" in refused.text  # the API's error names the value
    for foreign in (f"/console/teams/{theirs['id']}", f"/console/tasks/{hidden['id']}"):
        answer = client.get(foreign)
        assert answer.status_code == 404 and "not_found" in answer.text and "Globex plans" not in answer.text
    assert waiting["id"] in page


def test_a_tasks_page_shows_its_history_result_and_attachments(signed_in: SignedIn, acme: Tenant) -> None:
    client = signed_in("operator")
    team, agent = _team(client, acme)
    task = _post(client, acme, f"/teams/{team['id']}/tasks", {"title": "Draft <b>it</b>",
                                                              "description": "the Q3 numbers"})
    _post(client, acme, f"/tasks/{task['id']}/attachments", {"name": "brief.pdf"})
    _post(client, acme, f"/tasks/{task['id']}/claim", {"agent": agent["agent_key"]}, 200)
    _post(client, acme, f"/tasks/{task['id']}/fail", {"error": "the source is gone"}, 200)
    page = client.get(f"/console/tasks/{task['id']}").text
    assert "Draft &lt;b&gt;it&lt;/b&gt;" in page and "<b>it</b>" not in page
    assert '<span class="status status-failed">failed</span>' in page and "the Q3 numbers" in page
    history = page.split('id="history"')[1].split("</table>")[0]
    assert "Created" in history and "Claimed" in history and "acme-writer" in history
    assert '<pre id="task-error">the source is gone</pre>' in page
    assert "brief.pdf" in page.split('id="attachments"')[1]


def test_an_admin_cancels_and_retries_and_an_illegal_transition_shows_the_apis_409(signed_in: SignedIn,
                                                                                    acme: Tenant) -> None:
    admin = signed_in("admin")
    team, _ = _team(admin, acme)
    task = _post(admin, acme, f"/teams/{team['id']}/tasks", {"title": "Tidy up"})
    screen = f"/console/tasks/{task['id']}"
    retried_too_soon = post_form(admin, screen, f"{screen}/retry", {})
    assert retried_too_soon.status_code == 409
    assert "it cannot retry" in retried_too_soon.text and "from open it may" in retried_too_soon.text
    assert "conflict" in retried_too_soon.text and "HTTP 409" in retried_too_soon.text

    cancelled = post_form(admin, screen, f"{screen}/cancel", {})
    assert cancelled.status_code == 303
    page = admin.get(cancelled.headers["location"]).text
    assert "Done: cancel, now cancelled." in page and '<span class="status status-cancelled">cancelled</span>' in page
    again = post_form(admin, screen, f"{screen}/cancel", {})
    assert again.status_code == 409 and "is cancelled: it cannot cancel" in again.text
    reopened = post_form(admin, screen, f"{screen}/retry", {})
    assert reopened.status_code == 303
    assert admin.get(f"/v1/tasks/{task['id']}", headers=acme.headers()).json()["status"] == "open"


def test_an_operator_assigns_and_unassigns(signed_in: SignedIn, acme: Tenant) -> None:
    operator = signed_in("operator")
    team, agent = _team(operator, acme)
    outsider = _post(operator, acme, "/agents", {"agent_key": "outsider"})
    task = _post(operator, acme, f"/teams/{team['id']}/tasks", {"title": "Triage"})
    screen = f"/console/tasks/{task['id']}"
    page = operator.get(screen).text
    assert 'id="assign"' in page and 'id="cancel"' not in page  # cancel and retry are an admin's
    assert post_form(operator, screen, f"{screen}/assign", {"agent": agent["agent_key"]}).status_code == 303
    assert '<dd id="assignee">acme-writer</dd>' in operator.get(screen).text
    refused = post_form(operator, screen, f"{screen}/assign", {"agent": outsider["agent_key"]})
    assert refused.status_code == 422 and "is not on team" in refused.text
    assert post_form(operator, screen, f"{screen}/assign", {"agent": ""}).status_code == 303
    assert '<dd id="assignee">nobody</dd>' in operator.get(screen).text


def test_a_member_reads_tasks_but_gets_no_actions_and_the_api_refuses_them(signed_in: SignedIn,
                                                                           acme: Tenant) -> None:
    owner = signed_in("owner")
    team, _ = _team(owner, acme)
    task = _post(owner, acme, f"/teams/{team['id']}/tasks", {"title": "Read only"})
    member = signed_in("member")
    assert "Read only" in member.get(f"/console/teams/{team['id']}").text
    screen = f"/console/tasks/{task['id']}"
    page = member.get(screen).text
    assert "Read only" in page and 'id="cancel"' not in page and 'id="assign"' not in page
    refused = post_form(member, screen, f"{screen}/cancel", {})
    assert refused.status_code == 403 and "needs the admin role or higher" in refused.text
    assert owner.get(f"/v1/tasks/{task['id']}", headers=acme.headers()).json()["status"] == "open"
    assert "Team tasks" in page  # the navigation's link


def test_cancel_needs_the_csrf_token(signed_in: SignedIn, acme: Tenant) -> None:
    admin = signed_in("admin")
    team, _ = _team(admin, acme)
    task = _post(admin, acme, f"/teams/{team['id']}/tasks", {"title": "Keep me"})
    answer = admin.post(f"/console/tasks/{task['id']}/cancel", data={}, follow_redirects=False)
    assert answer.status_code == 403 and "csrf_token_invalid" in answer.text
    assert admin.get(f"/v1/tasks/{task['id']}", headers=acme.headers()).json()["status"] == "open"
