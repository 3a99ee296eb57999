"""Team tasks over HTTP: the error contract on every route (roles, malformed IDs, another organization's rows
404), the lifecycle's 409 naming the status, bad input 422 naming the field, the timeout sweep then an admin's
retry, attachments of the organization's vault documents, and a dispatch run as the caller (both engines)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from fastapi.testclient import TestClient

from agentfy.schedule import from_utc_text
from agentfy.store.db import Database
from agentfy.store.repos import tasks, vault
from agentfy.store.repos.vault import VaultUpload
from tests.gateway.test_routes_orgs import Checks, Route, bearer, build_world, post
from tests.helpers.tenants import Tenant

ROUTES = [
    Route("POST", "/v1/teams/{team_id}/tasks", "operator", {"title": "t"}),
    Route("GET", "/v1/teams/{team_id}/tasks"),
    Route("GET", "/v1/tasks/{task_id}"),
    Route("DELETE", "/v1/tasks/{task_id}", "admin"),
    Route("POST", "/v1/tasks/{task_id}/assign", "operator", {"agent": "{agent}"}),
    Route("POST", "/v1/tasks/{task_id}/claim", "operator", {"agent": "{agent}"}),
    Route("POST", "/v1/tasks/{task_id}/complete", "operator", {"result": "r"}),
    Route("POST", "/v1/tasks/{task_id}/fail", "operator", {"error": "e"}),
    Route("POST", "/v1/tasks/{task_id}/cancel", "admin"),
    Route("POST", "/v1/tasks/{task_id}/retry", "admin"),
    Route("POST", "/v1/tasks/{task_id}/dispatch", "operator", {"agent": "{agent}"}),
    Route("POST", "/v1/tasks/{task_id}/attachments", "operator", {"name": "n"}),
    Route("GET", "/v1/tasks/{task_id}/attachments"),
    Route("DELETE", "/v1/tasks/{task_id}/attachments/{attachment_id}", "operator"),
]


def _world(client: TestClient, tenant: Tenant) -> dict[str, str]:
    world = build_world(client, tenant)
    task = post(client, f"/v1/teams/{world['team_id']}/tasks", {"title": "Write docs"}, tenant.headers())
    attachment = post(client, f"/v1/tasks/{task['id']}/attachments", {"name": "notes"}, tenant.headers())
    return {**world, "task_id": task["id"], "attachment_id": attachment["id"]}


def _action(client: TestClient, tenant: Tenant, task_id: str, action: str, body: Any = None,
            role: str = "owner") -> Any:
    return client.post(f"/v1/tasks/{task_id}/{action}", json=body, headers=tenant.headers(role))


def test_the_error_contract_on_every_task_route(client: TestClient, acme: Tenant, globex: Tenant,
                                                platform_admin: dict[str, str]) -> None:
    mine, theirs = _world(client, acme), _world(client, globex)
    Checks(client, acme, platform_admin).all(ROUTES, mine, theirs)


def test_a_task_goes_through_its_lifecycle_and_refuses_what_the_table_does_not_allow(
        client: TestClient, acme: Tenant) -> None:
    world = build_world(client, acme)
    task = post(client, f"/v1/teams/{world['team_id']}/tasks",
                {"title": "Write docs", "description": "the API", "timeout_seconds": 30}, acme.headers("operator"))
    assert (task["status"], task["description"], task["timeout_seconds"]) == ("open", "the API", 30)
    refused = _action(client, acme, task["id"], "complete", {"result": "r"})
    assert refused.status_code == 409
    error = refused.json()["error"]
    assert error["code"] == "conflict" and error["field"] == "status" and error["value"] == "open"
    assert task["id"] in error["message"] and "from open it may assign, claim, start, cancel" in error["message"]
    claimed = _action(client, acme, task["id"], "claim", {"agent": world["agent_key"]}).json()
    assert claimed["status"] == "claimed" and claimed["claimed_by_agent_id"] == world["agent"]
    assert claimed["deadline_at"] is not None
    again = _action(client, acme, task["id"], "claim", {"agent": world["agent_key"]})
    assert again.status_code == 409 and "is claimed" in again.json()["error"]["message"]
    done = _action(client, acme, task["id"], "complete", {"result": "written"}).json()
    assert (done["status"], done["result"], done["deadline_at"]) == ("done", "written", None)
    listed = client.get(f"/v1/teams/{world['team_id']}/tasks", params={"status": "done"},
                        headers=acme.headers("member"))
    assert [t["id"] for t in listed.json()["items"]] == [task["id"]]
    assert client.get(f"/v1/teams/{world['team_id']}/tasks", params={"status": "open"},
                      headers=acme.headers("member")).json()["items"] == []
    assert client.get(f"/v1/tasks/{task['id']}", headers=acme.headers("member")).json() == done


def test_bad_input_is_422_naming_the_field_and_nothing_is_written(client: TestClient, acme: Tenant) -> None:
    world = build_world(client, acme)
    h = acme.headers()
    url = f"/v1/teams/{world['team_id']}/tasks"
    outsider = post(client, "/v1/agents", {"agent_key": "outsider"}, h)
    for body, field in (({"title": ""}, "title"), ({"title": "t", "timeout_seconds": 0}, "timeout_seconds"),
                        ({"title": "t", "status": "done"}, "status"), ({"title": "t", "assignee": "outsider"},
                                                                       "assignee_agent_id")):
        answer = client.post(url, json=body, headers=h)
        assert answer.status_code == 422, (body, answer.text)
        assert answer.json()["error"]["field"] == field, answer.text
    assert "is not on team" in client.post(url, json={"title": "t", "assignee": "outsider"},
                                           headers=h).json()["error"]["message"]
    assert outsider["id"]
    assert client.get(url, headers=h).json()["items"] == []
    bad_filter = client.get(url, params={"status": "finished"}, headers=h)
    assert bad_filter.status_code == 422 and "finished" in bad_filter.text
    task = post(client, url, {"title": "t"}, h)
    assert _action(client, acme, task["id"], "claim", {"agent": "outsider"}).status_code == 422
    assert _action(client, acme, task["id"], "fail", {"error": ""}).status_code == 422
    assert client.get(f"/v1/tasks/{task['id']}", headers=h).json()["status"] == "open"


def test_an_overdue_task_times_out_then_an_admin_retries_or_cancels_it(client: TestClient, db: Database,
                                                                       acme: Tenant) -> None:
    world = build_world(client, acme)
    url = f"/v1/teams/{world['team_id']}/tasks"
    first, second = (post(client, url, {"title": title, "timeout_seconds": 5}, acme.headers()) for title in "ab")
    claimed = [_action(client, acme, t["id"], "claim", {"agent": world["agent"]}).json() for t in (first, second)]
    with db.transaction() as tx:
        tasks.expire_overdue(tx, max(from_utc_text(t["deadline_at"]) for t in claimed) + timedelta(seconds=1))
    for task in (first, second):
        shown = client.get(f"/v1/tasks/{task['id']}", headers=acme.headers("member")).json()
        assert shown["status"] == "timed_out" and "timed out" in shown["error"]
    assert _action(client, acme, first["id"], "retry", role="operator").status_code == 403
    assert _action(client, acme, first["id"], "retry", role="admin").json()["status"] == "open"
    assert _action(client, acme, second["id"], "cancel", role="admin").json()["status"] == "cancelled"
    assert _action(client, acme, second["id"], "cancel", role="admin").status_code == 409


def test_attachments_name_the_organizations_vault_documents(client: TestClient, db: Database, acme: Tenant,
                                                            globex: Tenant) -> None:
    world, theirs = build_world(client, acme), build_world(client, globex)
    task = post(client, f"/v1/teams/{world['team_id']}/tasks", {"title": "t"}, acme.headers())
    other = post(client, f"/v1/teams/{world['team_id']}/tasks", {"title": "u"}, acme.headers())
    with db.transaction() as tx:
        (mine,) = vault.upload_documents(tx, acme.scope, [VaultUpload(agent_id=world["agent"], path="a.txt",
                                                                      content_type="text/plain", content=b"a")])
        (their,) = vault.upload_documents(tx, globex.scope, [VaultUpload(agent_id=theirs["agent"], path="a.txt",
                                                                         content_type="text/plain", content=b"a")])
    url = f"/v1/tasks/{task['id']}/attachments"
    added = post(client, url, {"name": "spec", "vault_document_id": mine}, acme.headers("operator"))
    assert added["vault_document_id"] == mine and added["task_id"] == task["id"]
    foreign = client.post(url, json={"name": "x", "vault_document_id": their}, headers=acme.headers())
    assert foreign.status_code == 404 and foreign.json()["error"]["code"] == "not_found"
    assert [a["id"] for a in client.get(url, headers=acme.headers("member")).json()["items"]] == [added["id"]]
    wrong_task = client.delete(f"/v1/tasks/{other['id']}/attachments/{added['id']}", headers=acme.headers())
    assert wrong_task.status_code == 404
    assert client.delete(f"{url}/{added['id']}", headers=acme.headers("operator")).status_code == 204
    assert client.get(url, headers=acme.headers()).json()["items"] == []


def test_a_dispatch_runs_as_the_caller_and_records_the_reply(client: TestClient, db: Database, acme: Tenant) -> None:
    world = build_world(client, acme)
    task = post(client, f"/v1/teams/{world['team_id']}/tasks", {"title": "Check the invoices"}, acme.headers())
    no_one = _action(client, acme, task["id"], "dispatch", {})
    assert no_one.status_code == 422 and "has no assignee" in no_one.json()["error"]["message"]
    as_ada = bearer(world["user_key"])  # an operator key acting as the person Ada
    started = client.post(f"/v1/tasks/{task['id']}/dispatch", json={"agent": world["agent_key"]}, headers=as_ada)
    assert started.status_code == 202, started.text
    assert started.json()["status"] == "in_progress"
    client.portal.call(client.app.state.gateway.runtime.wait_idle)  # type: ignore[attr-defined]
    done = client.get(f"/v1/tasks/{task['id']}", headers=acme.headers()).json()
    assert (done["status"], done["result"]) == ("done", f"@{world['agent_key']} heard: Check the invoices")
    messages = client.get(f"/v1/sessions/{done['session_key']}/messages", headers=acme.headers()).json()["items"]
    assert (messages[0]["role"], messages[0]["sender_id"]) == ("user", world["user_id"])
    again = _action(client, acme, task["id"], "dispatch", {"agent": world["agent_key"]})
    assert again.status_code == 409
