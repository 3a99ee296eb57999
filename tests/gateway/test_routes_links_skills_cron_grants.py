"""Agent links, MCP servers, skills, cron jobs, group-chat grants and the heartbeat over HTTP (both engines)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from agentfy.gateway.deps import GatewayState
from agentfy.identity.context import RequestContext
from agentfy.store.db import Database
from agentfy.store.repos import api_keys
from tests.gateway.test_routes_orgs import Checks, Route, bearer, build_world, post
from tests.helpers.tenants import Tenant

GRANT = {"chat_scope": "group:telegram:-100123", "config_type": "file_writer", "sender_id": "1001", "allow": True}
ROUTES = [
    Route("POST", "/v1/agents/{agent}/links", "operator", {"target": "{target}", "kind": "handoff"}),
    Route("GET", "/v1/agents/{agent}/links"),
    Route("DELETE", "/v1/links/{link_id}", "operator"),
    Route("POST", "/v1/agents/{agent}/mcp-servers", "operator", {"name": "web", "url": "https://mcp.example"}),
    Route("GET", "/v1/agents/{agent}/mcp-servers", "operator"),
    Route("DELETE", "/v1/mcp-servers/{server_id}", "operator"),
    Route("POST", "/v1/skills", "operator", {"name": "n", "content": "c"}),
    Route("GET", "/v1/skills"),
    Route("GET", "/v1/skills/{skill_id}"),
    Route("PATCH", "/v1/skills/{skill_id}", body={"content": "new"}),  # owner or admin: see below
    Route("DELETE", "/v1/skills/{skill_id}"),
    Route("POST", "/v1/agents/{agent}/cron-jobs", "operator", {"schedule": "@daily"}),
    Route("GET", "/v1/agents/{agent}/cron-jobs"),
    Route("GET", "/v1/cron-jobs/{job_id}"),
    Route("PATCH", "/v1/cron-jobs/{job_id}", "operator", {"enabled": False}),
    Route("DELETE", "/v1/cron-jobs/{job_id}", "operator"),
    Route("POST", "/v1/agents/{agent}/grants", "admin", GRANT),
    Route("GET", "/v1/agents/{agent}/grants"),
    Route("DELETE", "/v1/grants/{grant_id}", "admin"),
    Route("POST", "/v1/agents/{agent}/heartbeat"),
]


def test_the_error_contract_on_every_route(client: TestClient, acme: Tenant, globex: Tenant,
                                           platform_admin: dict[str, str]) -> None:
    mine, theirs = build_world(client, acme), build_world(client, globex)
    Checks(client, acme, platform_admin).all(ROUTES, mine, theirs)


def _agents(client: TestClient, tenant: Tenant, *keys: str) -> list[dict[str, Any]]:
    return [post(client, "/v1/agents", {"agent_key": key}, tenant.headers()) for key in keys]


def _user_key(client: TestClient, tenant: Tenant, name: str, role: str) -> tuple[str, dict[str, str]]:
    """A member of ``tenant`` with ``role`` and a key that acts as them: ``(user_id, headers)``."""
    user = post(client, "/v1/org/members", {"display_name": name, "role": role}, tenant.headers())
    issued = post(client, "/v1/org/api-keys", {"name": name, "role": role, "user_id": user["user_id"]},
                  tenant.headers())
    return user["user_id"], bearer(issued["key"])


# -- links and MCP servers ----------------------------------------------------------------------------------
def test_links_join_two_agents_named_by_id_or_key(client: TestClient, acme: Tenant) -> None:
    one, two = _agents(client, acme, "one", "two")
    link = post(client, "/v1/agents/one/links", {"target": two["id"]}, acme.headers("operator"))
    assert (link["source_agent_id"], link["target_agent_id"], link["kind"]) == (one["id"], two["id"], "delegate")
    for ref in ("one", two["id"], "two"):  # listed from either end
        assert client.get(f"/v1/agents/{ref}/links", headers=acme.headers("member")).json()["items"] == [link]

    duplicate = client.post(f"/v1/agents/{one['id']}/links", json={"target": "two"}, headers=acme.headers())
    assert duplicate.status_code == 409 and duplicate.json()["error"]["field"] == "target"
    itself = client.post("/v1/agents/one/links", json={"target": "one"}, headers=acme.headers())
    assert itself.status_code == 422 and itself.json()["error"]["code"] == "invalid_input"
    handoff = client.post("/v1/agents/one/links", json={"target": "two", "kind": "handoff"}, headers=acme.headers())
    assert handoff.status_code == 201  # another kind is another link

    assert client.delete(f"/v1/links/{link['id']}", headers=acme.headers("operator")).status_code == 204
    assert client.delete(f"/v1/links/{link['id']}", headers=acme.headers()).status_code == 404
    assert [item["kind"] for item in client.get(
            "/v1/agents/one/links", headers=acme.headers()).json()["items"]] == ["handoff"]


def test_mcp_servers_are_attached_listed_and_detached(client: TestClient, acme: Tenant) -> None:
    (one,) = _agents(client, acme, "one")
    server = post(client, "/v1/agents/one/mcp-servers",
                  {"name": "files", "url": "https://mcp.example/files", "config": {"timeout": 5}},
                  acme.headers("operator"))
    assert server["agent_id"] == one["id"] and server["config"] == {"timeout": 5}
    assert client.get(
            f"/v1/agents/{one['id']}/mcp-servers", headers=acme.headers("operator")).json()["items"] == [server]
    duplicate = client.post("/v1/agents/one/mcp-servers", json={"name": "files", "url": "https://x.example"},
                            headers=acme.headers())
    assert duplicate.status_code == 409 and duplicate.json()["error"]["field"] == "name"
    assert client.delete(f"/v1/mcp-servers/{server['id']}", headers=acme.headers("operator")).status_code == 204
    assert client.get("/v1/agents/one/mcp-servers", headers=acme.headers()).json()["items"] == []


# -- skills -------------------------------------------------------------------------------------------------
def test_a_skill_is_owned_by_the_acting_person_and_managed_by_them_or_an_admin(client: TestClient,
                                                                              acme: Tenant) -> None:
    ada, as_ada = _user_key(client, acme, "Ada", "operator")
    _, as_bob = _user_key(client, acme, "Bob", "operator")
    skill = post(client, "/v1/skills", {"name": "greet", "content": "Say hello."}, as_ada)
    assert skill["owner_id"] == ada
    assert client.get(f"/v1/skills/{skill['id']}", headers=acme.headers("member")).json() == skill
    assert client.get("/v1/skills", headers=acme.headers("member")).json()["items"] == [skill]

    owner_in_body = client.post("/v1/skills", json={"name": "x", "content": "c", "owner_id": "someone"},
                                headers=as_ada)
    assert owner_in_body.status_code == 422  # the owner is never taken from the body
    nobody = client.post("/v1/skills", json={"name": "x", "content": "c"}, headers=acme.headers("owner"))
    assert nobody.status_code == 403  # a key that acts as nobody cannot own a skill
    duplicate = client.post("/v1/skills", json={"name": "greet", "content": "again"}, headers=as_bob)
    assert duplicate.status_code == 409 and duplicate.json()["error"]["field"] == "name"

    path = f"/v1/skills/{skill['id']}"
    for headers in (as_bob, acme.headers("operator")):  # neither the owner nor an admin
        assert client.patch(path, json={"content": "x"}, headers=headers).status_code == 403
        assert client.delete(path, headers=headers).status_code == 403
    for headers, content in ((as_ada, "Hi."), (acme.headers("admin"), "Hello.")):
        updated = client.patch(path, json={"content": content}, headers=headers)
        assert updated.status_code == 200 and updated.json() == {**skill, "content": content}
    assert client.delete(path, headers=as_ada).status_code == 204
    assert client.get(path, headers=acme.headers()).status_code == 404


# -- cron jobs ----------------------------------------------------------------------------------------------
def test_cron_jobs_are_scheduled_by_the_actor_and_toggled(client: TestClient, acme: Tenant) -> None:
    (one,) = _agents(client, acme, "one")
    ada, as_ada = _user_key(client, acme, "Ada", "operator")
    job = post(client, "/v1/agents/one/cron-jobs", {"schedule": "0 9 * * 1", "payload": {"task": "report"}}, as_ada)
    assert (job["agent_id"], job["created_by"], job["user_id"], job["enabled"]) == (one["id"], ada, ada, True)
    by_service_key = post(client, f"/v1/agents/{one['id']}/cron-jobs", {"schedule": "@hourly", "enabled": False},
                          acme.headers("operator"))
    assert by_service_key["created_by"].startswith("api-key-") and by_service_key["user_id"] == ""
    assert client.get(
            "/v1/agents/one/cron-jobs", headers=acme.headers("operator")).json()["items"] == [job, by_service_key]
    assert client.get(f"/v1/cron-jobs/{job['id']}", headers=acme.headers("member")).status_code == 404  # Ada's scope
    assert client.get("/v1/agents/one/cron-jobs", headers=acme.headers("member")).json()["items"] == []
    assert client.get(f"/v1/cron-jobs/{job['id']}", headers=as_ada).json() == job

    disabled = client.patch(f"/v1/cron-jobs/{job['id']}", json={"enabled": False}, headers=acme.headers("operator"))
    assert disabled.status_code == 200 and disabled.json()["enabled"] is False
    not_a_bool = client.patch(f"/v1/cron-jobs/{job['id']}", json={"enabled": "no"}, headers=acme.headers())
    assert not_a_bool.status_code == 422
    assert client.delete(f"/v1/cron-jobs/{job['id']}", headers=acme.headers("operator")).status_code == 204
    assert client.get(f"/v1/cron-jobs/{job['id']}", headers=acme.headers()).status_code == 404


# -- grants -------------------------------------------------------------------------------------------------
def test_grants_are_made_replaced_listed_and_removed(client: TestClient, acme: Tenant) -> None:
    (one,) = _agents(client, acme, "one")
    admin, as_admin = _user_key(client, acme, "Root", "admin")
    created = client.post("/v1/agents/one/grants", json=GRANT, headers=as_admin)
    assert created.status_code == 201
    grant = created.json()
    assert (grant["agent_id"], grant["chat_scope"], grant["sender_id"], grant["granted_by"]) == (
        one["id"], GRANT["chat_scope"], "1001", admin)
    replaced = client.post(f"/v1/agents/{one['id']}/grants", json={**GRANT, "allow": False}, headers=as_admin)
    assert replaced.status_code == 200 and replaced.json()["id"] == grant["id"] and replaced.json()["allow"] is False
    assert client.get("/v1/agents/one/grants", headers=acme.headers("member")).json()["items"] == [replaced.json()]

    invalid = [({"chat_scope": "telegram:-100123"}, "chat_scope"), ({"config_type": "root"}, "config_type"),
               ({"sender_id": "group:telegram:-100123"}, "sender_id")]
    for change, field_name in invalid:
        response = client.post("/v1/agents/one/grants", json={**GRANT, **change}, headers=as_admin)
        assert response.status_code == 422 and response.json()["error"]["field"] == field_name, change

    assert client.delete(f"/v1/grants/{grant['id']}", headers=acme.headers("admin")).status_code == 204
    assert client.delete(f"/v1/grants/{grant['id']}", headers=acme.headers("admin")).status_code == 404
    assert client.get("/v1/agents/one/grants", headers=acme.headers()).json()["items"] == []


# -- heartbeat ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("by", ["id", "agent_key"])
def test_the_heartbeat_echoes_both_identities_and_the_run_state(client: TestClient, acme: Tenant, by: str) -> None:
    (one,) = _agents(client, acme, "one")
    beat = client.post(f"/v1/agents/{one[by]}/heartbeat", headers=acme.headers("member"))
    assert beat.status_code == 200
    body = beat.json()
    assert (body["id"], body["agent_key"], body["tenant_id"], body["running"]) == (
        one["id"], "one", acme.scope.tenant_id, False)
    gateway: GatewayState = client.app.state.gateway  # type: ignore[attr-defined]
    loop = gateway.router.get_cached(RequestContext(tenant_id=acme.scope.tenant_id), "one")
    assert loop is not None and loop.agent.id == one["id"]  # the beat warmed the router's cache
    with loop.run():
        assert client.post(f"/v1/agents/{one[by]}/heartbeat", headers=acme.headers()).json()["running"] is True
    assert client.post("/v1/agents/one/heartbeat", headers=acme.headers()).json()["running"] is False


@pytest.mark.parametrize(("body", "field", "value"), [
    ({"schedule": "every fortnight"}, "schedule", "every fortnight"),
    ({"schedule": "0 9 * * * *"}, "schedule", "0 9 * * * *"),
    ({"schedule": "at 2000-01-01T00:00:00Z"}, "schedule", "at 2000-01-01T00:00:00Z"),
    ({"schedule": "0 9 * * *", "timezone": "Mars/Olympus"}, "timezone", "Mars/Olympus"),
    ({"schedule": "0 9 * * *", "payload": {"message": "  "}}, "payload.message", "  "),
])
def test_a_bad_schedule_is_a_422_naming_the_field_and_nothing_is_written(
        client: TestClient, acme: Tenant, body: dict[str, Any], field: str, value: str) -> None:
    _agents(client, acme, "one")
    refused = client.post("/v1/agents/one/cron-jobs", json=body, headers=acme.headers("operator"))
    assert refused.status_code == 422
    error = refused.json()["error"]
    assert (error["code"], error["field"], error["value"]) == ("invalid_input", field, value)
    assert error["expected"]
    assert client.get("/v1/agents/one/cron-jobs", headers=acme.headers()).json()["items"] == []


def test_a_job_shows_its_time_zone_and_next_run(client: TestClient, acme: Tenant) -> None:
    _agents(client, acme, "one")
    job = post(client, "/v1/agents/one/cron-jobs", {"schedule": "0 9 * * *", "timezone": "Europe/Berlin",
                                                    "payload": {"message": "report"}}, acme.headers("operator"))
    assert job["timezone"] == "Europe/Berlin" and job["next_run_at"].endswith(":00:00.000000Z")
    assert job["last_run_at"] is None


def test_run_now_fires_the_job_and_its_runs_are_listed_in_its_organization_only(
        client: TestClient, acme: Tenant, globex: Tenant) -> None:
    _agents(client, acme, "one")
    job = post(client, "/v1/agents/one/cron-jobs", {"schedule": "@daily", "payload": {"message": "report"}},
               acme.headers("operator"))
    for who, run_status in ((globex.headers(), 404), (acme.headers("member"), 403)):  # another tenant; too low
        assert client.post(f"/v1/cron-jobs/{job['id']}/run", headers=who).status_code == run_status
        assert client.get(f"/v1/cron-jobs/{job['id']}/runs", headers=who).status_code == 404
    ran = client.post(f"/v1/cron-jobs/{job['id']}/run", headers=acme.headers("operator"))
    assert ran.status_code == 200, ran.text
    run = ran.json()
    assert (run["job_id"], run["cause"], run["outcome"], run["error"]) == (job["id"], "manual", "ok", None)
    assert run["session_key"] and run["ended_at"]
    listed = client.get(f"/v1/cron-jobs/{job['id']}/runs", headers=acme.headers(), params={"limit": 1})
    assert listed.json() == {"items": [run], "next_cursor": None}
    assert client.get(f"/v1/cron-jobs/{job['id']}", headers=acme.headers()).json()["next_run_at"] == \
        job["next_run_at"]  # a manual run leaves the schedule alone


def test_a_job_whose_creating_key_was_revoked_is_denied_at_fire_time(
        client: TestClient, acme: Tenant, db: Database) -> None:
    _agents(client, acme, "one")
    job = post(client, "/v1/agents/one/cron-jobs", {"schedule": "@daily", "payload": {"message": "report"}},
               acme.headers("operator"))
    assert job["created_by"].startswith("api-key-")  # the operator key acts as nobody: the key is the ACTOR
    with db.transaction() as tx:
        api_keys.revoke_api_key(tx, acme.scope, job["created_by"])
    run = client.post(f"/v1/cron-jobs/{job['id']}/run", headers=acme.headers("owner")).json()
    assert run["outcome"] == "denied" and "revoked" in run["error"] and run["session_key"] is None
