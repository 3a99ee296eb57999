"""Teams, team members (agents by ID or key) and team API keys over HTTP (both engines)."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.gateway.test_routes_orgs import Checks, Route, bearer, build_world, post
from tests.helpers.tenants import Tenant

ROUTES = [
    Route("POST", "/v1/teams", "operator", {"name": "Ops", "lead": "{lead}"}),
    Route("GET", "/v1/teams"),
    Route("GET", "/v1/teams/{team_id}"),
    Route("DELETE", "/v1/teams/{team_id}", "admin"),
    Route("PUT", "/v1/teams/{team_id}/lead", "operator", {"agent": "{agent}"}),
    Route("POST", "/v1/teams/{team_id}/members", "operator", {"agent": "{agent}"}),
    Route("GET", "/v1/teams/{team_id}/members"),
    Route("DELETE", "/v1/teams/{team_id}/members/{agent}", "operator"),
    Route("POST", "/v1/teams/{team_id}/api-keys", "owner", {"name": "k"}),
    Route("GET", "/v1/teams/{team_id}/api-keys", "owner"),
    Route("DELETE", "/v1/teams/{team_id}/api-keys/{key_id}", "owner", aliases={"key_id": "team_key_id"}),
]


def test_the_error_contract_on_every_team_route(client: TestClient, acme: Tenant, globex: Tenant,
                                                platform_admin: dict[str, str]) -> None:
    mine, theirs = build_world(client, acme), build_world(client, globex)
    Checks(client, acme, platform_admin).all(ROUTES, mine, theirs)


def test_a_team_is_created_read_led_and_deleted(client: TestClient, acme: Tenant) -> None:
    one = post(client, "/v1/agents", {"agent_key": "one"}, acme.headers())
    two = post(client, "/v1/agents", {"agent_key": "two"}, acme.headers())
    team = post(client, "/v1/teams", {"name": "Support", "lead": "one"}, acme.headers("operator"))
    assert team["lead_agent_id"] == one["id"] and team["tenant_id"] == acme.scope.tenant_id
    assert post(client, "/v1/teams", {"name": "Solo"}, acme.headers())["lead_agent_id"] is None
    assert client.get(f"/v1/teams/{team['id']}", headers=acme.headers("member")).json() == team
    assert [t["name"] for t in client.get(
            "/v1/teams", headers=acme.headers("member")).json()["items"]] == ["Solo", "Support"]

    for ref, expected in ((two["id"], two["id"]), ("one", one["id"]), (None, None)):
        led = client.put(f"/v1/teams/{team['id']}/lead", json={"agent": ref}, headers=acme.headers("operator"))
        assert led.status_code == 200 and led.json()["lead_agent_id"] == expected, ref

    assert client.delete(f"/v1/teams/{team['id']}", headers=acme.headers("admin")).status_code == 204
    assert client.get(f"/v1/teams/{team['id']}", headers=acme.headers()).status_code == 404
    assert client.get("/v1/agents/one", headers=acme.headers()).status_code == 200  # its agents stay


def test_members_are_added_and_removed_by_id_or_key(client: TestClient, acme: Tenant) -> None:
    one = post(client, "/v1/agents", {"agent_key": "one"}, acme.headers())
    two = post(client, "/v1/agents", {"agent_key": "two"}, acme.headers())
    team = post(client, "/v1/teams", {"name": "Support"}, acme.headers())
    members = f"/v1/teams/{team['id']}/members"
    by_key = post(client, members, {"agent": "one"}, acme.headers("operator"))
    by_id = post(client, members, {"agent": two["id"], "role": "reviewer"}, acme.headers("operator"))
    assert (by_key["agent_id"], by_key["agent_key"], by_key["role"]) == (one["id"], "one", "member")
    assert (by_id["agent_id"], by_id["agent_key"], by_id["role"]) == (two["id"], "two", "reviewer")
    assert client.get(members, headers=acme.headers("member")).json()["items"] == [by_key, by_id]

    for ref in ("one", one["id"]):  # the same agent named either way is the same member
        duplicate = client.post(members, json={"agent": ref}, headers=acme.headers())
        assert duplicate.status_code == 409 and duplicate.json()["error"]["field"] == "agent_id", ref

    assert client.delete(f"{members}/one", headers=acme.headers("operator")).status_code == 204
    assert client.delete(f"{members}/{two['id']}", headers=acme.headers("operator")).status_code == 204
    again = client.delete(f"{members}/one", headers=acme.headers())
    assert again.status_code == 404 and again.json()["error"]["message"] == "team member not found"
    assert client.get(members, headers=acme.headers()).json()["items"] == []


def test_team_api_keys_are_shown_once_act_as_the_team_and_are_revoked(client: TestClient, acme: Tenant) -> None:
    team = post(client, "/v1/teams", {"name": "Support"}, acme.headers())
    keys = f"/v1/teams/{team['id']}/api-keys"
    issued = post(client, keys, {"name": "bot"}, acme.headers("owner"))
    record = issued["api_key"]
    assert record["team_id"] == team["id"] and issued["key"].startswith(record["key_prefix"])
    as_team = bearer(issued["key"])
    assert client.get("/v1/teams", headers=as_team).status_code == 200  # the team key reads, as a member
    assert client.post("/v1/teams", json={"name": "x"}, headers=as_team).status_code == 403
    listed = client.get(keys, headers=acme.headers())
    assert listed.json()["items"] == [record] and issued["key"] not in listed.text

    other_team = post(client, "/v1/teams", {"name": "Other"}, acme.headers())
    wrong_team = client.delete(f"/v1/teams/{other_team['id']}/api-keys/{record['id']}", headers=acme.headers())
    assert wrong_team.status_code == 404  # a key of another team is not this team's
    assert client.delete(f"{keys}/{record['id']}", headers=acme.headers()).status_code == 204
    assert client.get("/v1/teams", headers=as_team).status_code == 401
    assert client.get(keys, headers=acme.headers()).json()["items"][0]["revoked_at"] is not None


def test_a_teams_body_never_chooses_the_tenant(client: TestClient, acme: Tenant, globex: Tenant) -> None:
    response = client.post("/v1/teams", json={"name": "x", "tenant_id": globex.scope.tenant_id},
                           headers=acme.headers())
    assert response.status_code == 422 and response.json()["error"]["code"] == "invalid_input"
