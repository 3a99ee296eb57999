"""Organizations, members and API keys over HTTP (both engines); also the table-driven machinery that the
teams and links/skills/cron/grants tests share: every route of a table is checked for 401, 403, a malformed
ID (422 naming field, value and format), an ID of the wrong entity (422), a legacy ID (404) and another
organization's row (404 with the same body as a missing one)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
from fastapi.testclient import TestClient

from agentfy.ids import format_id, id_pattern
from agentfy.store.db import Database
from agentfy.store.repos import api_keys, orgs
from tests.gateway.openapi_schemas import accepts
from tests.helpers.tenants import Tenant

LEGACY_ID = "0193a5b0-7000-7000-8000-000000000001"
ROLES_BELOW = {"operator": "member", "admin": "operator", "owner": "admin", "platform": "owner"}
#: The entity (ID prefix) each value of a world names.
KIND = {"agent": "agent", "target": "agent", "lead": "agent", "org_id": "org", "user_id": "user",
        "key_id": "api-key", "team_id": "team", "team_key_id": "team-api-key", "link_id": "agent-link",
        "server_id": "agent-mcp-server", "skill_id": "skill", "job_id": "cron-job",
        "grant_id": "agent-config-permission", "task_id": "team-task", "attachment_id": "team-task-attachment"}
_PLACEHOLDER = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class Route:
    """A route under test: ``{name}`` in the path or as a whole body value is filled from a world (``aliases``
    maps a parameter to another world value, e.g. a team key's ``key_id``)."""

    method: str
    path: str
    role: str = "member"  # the lowest role allowed; "platform" for a platform-admin key
    body: Mapping[str, Any] | None = None
    cross_tenant: bool = True  # another organization's row must be "not found"
    aliases: Mapping[str, str] = field(default_factory=dict)
    looks_up: bool = True  # a well-formed ID naming nothing is "not found" (inviting a person never looks)

    @property
    def names(self) -> list[str]:
        values = [self.path, *(v for v in (self.body or {}).values() if isinstance(v, str))]
        return [name for text in values for name in _PLACEHOLDER.findall(text)]

    def source(self, name: str) -> str:
        return self.aliases.get(name, name)

    def send(self, client: TestClient, values: Mapping[str, str], headers: Mapping[str, str] | None = None,
             **override: str) -> httpx.Response:
        filled = {name: override.get(name, values[self.source(name)]) for name in self.names}
        path = _PLACEHOLDER.sub(lambda m: filled[m.group(1)], self.path)
        body = None if self.body is None else {
            k: (_PLACEHOLDER.sub(lambda m: filled[m.group(1)], v) if isinstance(v, str) else v)
            for k, v in self.body.items()}
        return client.request(self.method, path, json=body, headers=dict(headers or {}))

    def __str__(self) -> str:
        return f"{self.method} {self.path}"


def post(client: TestClient, path: str, body: Mapping[str, Any], headers: Mapping[str, str]) -> Any:
    response = client.post(path, json=dict(body), headers=dict(headers))
    assert response.status_code == 201, (path, response.text)
    return response.json()


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def build_world(client: TestClient, tenant: Tenant) -> dict[str, str]:
    """One of everything in ``tenant``, made over HTTP; the values the route tables are filled from."""
    h = tenant.headers()
    one = post(client, "/v1/agents", {"agent_key": f"{tenant.slug}-one"}, h)
    two = post(client, "/v1/agents", {"agent_key": f"{tenant.slug}-two"}, h)
    user = post(client, "/v1/org/members", {"display_name": "Ada", "role": "admin"}, h)
    key = post(client, "/v1/org/api-keys", {"name": "ada", "role": "operator", "user_id": user["user_id"]}, h)
    team = post(client, "/v1/teams", {"name": "Support", "lead": one["agent_key"]}, h)
    post(client, f"/v1/teams/{team['id']}/members", {"agent": one["agent_key"]}, h)
    team_key = post(client, f"/v1/teams/{team['id']}/api-keys", {"name": "bot"}, h)
    link = post(client, f"/v1/agents/{one['id']}/links", {"target": two["agent_key"]}, h)
    server = post(client, f"/v1/agents/{one['agent_key']}/mcp-servers",
                  {"name": "files", "url": "https://mcp.example/files"}, h)
    skill = post(client, "/v1/skills", {"name": "greet", "content": "Say hello."}, bearer(key["key"]))
    job = post(client, f"/v1/agents/{one['id']}/cron-jobs", {"schedule": "0 9 * * 1"}, h)
    grant = post(client, f"/v1/agents/{one['id']}/grants",
                 {"chat_scope": "group:telegram:-100123", "config_type": "file_writer", "sender_id": "1001"}, h)
    return {"agent": one["id"], "target": two["agent_key"], "lead": two["id"], "org_id": tenant.scope.tenant_id,
            "user_id": user["user_id"], "key_id": key["api_key"]["id"], "team_id": team["id"],
            "team_key_id": team_key["api_key"]["id"], "link_id": link["id"], "server_id": server["id"],
            "skill_id": skill["id"], "job_id": job["id"], "grant_id": grant["id"], "user_key": key["key"],
            "agent_key": one["agent_key"]}


class Checks:
    """The error contract, checked on every route of a table."""

    def __init__(self, client: TestClient, tenant: Tenant, platform: Mapping[str, str]) -> None:
        self.client = client
        self.tenant = tenant
        self.platform = platform

    def headers(self, route: Route) -> Mapping[str, str]:
        return self.platform if route.role == "platform" else self.tenant.headers("owner")

    def unauthenticated(self, routes: list[Route], values: Mapping[str, str]) -> None:
        for route in routes:
            for headers in ({}, bearer("agfy_ok_" + "x" * 43), {"Authorization": "Basic abc"}):
                response = route.send(self.client, values, headers)
                assert response.status_code == 401, (str(route), response.text)
                assert response.json()["error"]["code"] == "unauthorized"

    def roles(self, routes: list[Route], values: Mapping[str, str]) -> None:
        for route in routes:
            if route.role == "member":
                continue
            below = ROLES_BELOW[route.role]
            response = route.send(self.client, values, self.tenant.headers(below))
            assert response.status_code == 403, (str(route), below, response.text)
            assert response.json()["error"]["code"] == "forbidden"

    def invalid(self, routes: list[Route], values: Mapping[str, str]) -> None:
        """A malformed ID, and the ID of another entity: 422 naming the field, the value and the format."""
        for route in routes:
            for name in route.names:
                kind = KIND[route.source(name)]
                if kind == "agent":  # an agent is named by ID or key: malformed means neither
                    cases = [("Not_A_Key", "invalid_agent_key"), (format_id("team"), "invalid_id")]
                else:
                    cases = [(f"{kind}-calm-rivers-k8m4p2d7n9xi", "invalid_id"), (format_id("agent"), "invalid_id")]
                for bad, code in cases:
                    response = route.send(self.client, values, self.headers(route), **{name: bad})
                    assert response.status_code == 422, (str(route), name, bad, response.text)
                    error = response.json()["error"]
                    assert error["code"] == code, (str(route), error)
                    assert error["field"] == name and error["value"] == bad, (str(route), error)
                    assert error["expected"].startswith(kind + "-" if code == "invalid_id" else "an agent ID"), error

    def legacy(self, routes: list[Route], values: Mapping[str, str]) -> None:
        """A legacy ID is well-formed: it is looked up, and there is no such row."""
        for route in routes:
            if not route.looks_up:
                continue
            for name in route.names:
                response = route.send(self.client, values, self.headers(route), **{name: LEGACY_ID})
                assert response.status_code == 404, (str(route), name, response.text)
                assert response.json()["error"]["code"] == "not_found"

    def other_tenant(self, routes: list[Route], mine: Mapping[str, str], theirs: Mapping[str, str]) -> None:
        """Another organization's row (by ID, and for agents by key too) is 404 exactly like a missing one."""
        for route in routes:
            if not route.cross_tenant:
                continue
            for name in route.names:
                source = route.source(name)
                kind = KIND[source]
                pairs = [(theirs[source], format_id(kind))]
                if kind == "agent":
                    pairs.append((theirs["agent_key"], "nobody-here"))
                for their, missing in pairs:
                    a = route.send(self.client, mine, self.headers(route), **{name: their})
                    b = route.send(self.client, mine, self.headers(route), **{name: missing})
                    assert a.status_code == b.status_code == 404, (str(route), name, a.text, b.text)
                    error_a, error_b = a.json()["error"], b.json()["error"]
                    assert error_a["code"] == error_b["code"] == "not_found"
                    assert error_a["message"] == error_b["message"], (str(route), error_a, error_b)
                    assert set(error_a) == set(error_b)

    def openapi(self, routes: list[Route]) -> None:
        """Every ID parameter of every route is shown with its anchored pattern."""
        spec = self.client.get("/openapi.json").json()
        for route in routes:
            operation = spec["paths"][route.path][route.method.lower()]
            params = {p["name"]: p for p in operation.get("parameters", []) if p["in"] == "path"}
            assert set(params) == set(_PLACEHOLDER.findall(route.path)), str(route)
            for name, param in params.items():
                kind = KIND[route.source(name)]
                assert accepts(spec, param["schema"], format_id(kind)), (str(route), name)
                assert not accepts(spec, param["schema"], f"{kind}-calm-rivers-k8m4p2d7n9xI"), (str(route), name)
                if kind != "agent":  # an agent is named by ID or key, and a key's shape admits other IDs
                    other = "team" if kind != "team" else "agent"
                    assert not accepts(spec, param["schema"], format_id(other)), (str(route), name)
            assert operation.get("description"), str(route)  # the route's docstring

    def all(self, routes: list[Route], mine: Mapping[str, str], theirs: Mapping[str, str]) -> None:
        self.unauthenticated(routes, mine)
        self.roles(routes, mine)
        self.invalid(routes, mine)
        self.legacy(routes, mine)
        self.other_tenant(routes, mine, theirs)
        self.openapi(routes)


# -- the organization routes --------------------------------------------------------------------------------
ROUTES = [
    Route("POST", "/v1/orgs", "platform", {"slug": "initech", "name": "Initech"}),
    Route("GET", "/v1/orgs", "platform"),
    Route("DELETE", "/v1/orgs/{org_id}", "platform", cross_tenant=False),
    Route("GET", "/v1/org"),
    Route("PUT", "/v1/org/default-agent", "admin", {"agent": "{agent}"}),
    # people are global, and inviting one never reveals whether the ID names anybody
    Route("POST", "/v1/org/members", "admin", {"user_id": "{user_id}"}, cross_tenant=False, looks_up=False),
    Route("GET", "/v1/org/members"),
    Route("DELETE", "/v1/org/members/{user_id}", "admin"),
    Route("POST", "/v1/org/api-keys", "owner", {"name": "k", "user_id": "{user_id}"}),
    Route("GET", "/v1/org/api-keys", "owner"),
    Route("DELETE", "/v1/org/api-keys/{key_id}", "owner"),
]


def test_the_error_contract_on_every_organization_route(client: TestClient, acme: Tenant, globex: Tenant,
                                                        platform_admin: dict[str, str]) -> None:
    mine, theirs = build_world(client, acme), build_world(client, globex)
    Checks(client, acme, platform_admin).all(ROUTES, mine, theirs)


def test_a_platform_admin_creates_lists_and_deletes_organizations(client: TestClient, acme: Tenant,
                                                                  platform_admin: dict[str, str]) -> None:
    created = client.post("/v1/orgs", json={"slug": "initech", "name": "Initech",
                                            "owner": {"display_name": "Bill", "email": "bill@initech.example"}},
                          headers=platform_admin)
    assert created.status_code == 201
    body = created.json()
    org, owner, key = body["organization"], body["owner"], body["api_key"]
    assert org["slug"] == "initech" and re.fullmatch(id_pattern("org"), org["id"])
    assert key["api_key"]["role"] == "owner" and key["api_key"]["user_id"] == owner["id"]
    assert key["key"].startswith(key["api_key"]["key_prefix"])
    assert client.get("/v1/org", headers=bearer(key["key"])).json() == org  # the key acts in the new org
    members = client.get("/v1/org/members", headers=bearer(key["key"])).json()["items"]
    assert [(m["user_id"], m["role"]) for m in members] == [(owner["id"], "owner")]
    assert key["key"] not in client.get("/v1/org/api-keys", headers=bearer(key["key"])).text  # shown once
    slugs = [o["slug"] for o in client.get("/v1/orgs", headers=platform_admin).json()["items"]]
    assert {"acme", "initech", "platform"} <= set(slugs)

    duplicate = client.post("/v1/orgs", json={"slug": "initech", "name": "Again"}, headers=platform_admin)
    assert duplicate.status_code == 409 and duplicate.json()["error"]["field"] == "slug"
    assert client.post("/v1/orgs", json={"slug": "Bad Slug", "name": "x"}, headers=platform_admin).status_code == 422

    assert client.delete(f"/v1/orgs/{org['id']}", headers=platform_admin).status_code == 204
    assert client.get("/v1/org", headers=bearer(key["key"])).status_code == 401  # its keys went with it
    assert client.delete(f"/v1/orgs/{org['id']}", headers=platform_admin).status_code == 404
    platform = orgs.PLATFORM_ORG_ID
    refused = client.delete(f"/v1/orgs/{platform}", headers=platform_admin)
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "conflict"


def test_the_tenant_is_never_taken_from_the_body(client: TestClient, acme: Tenant, globex: Tenant) -> None:
    for path, body in (("/v1/org/members", {"display_name": "Eve", "tenant_id": globex.scope.tenant_id}),
                       ("/v1/org/api-keys", {"name": "k", "org_id": globex.scope.tenant_id})):
        response = client.post(path, json=body, headers=acme.headers())
        assert response.status_code == 422 and response.json()["error"]["code"] == "invalid_input", path
    assert client.get("/v1/org", headers=acme.headers("member")).json()["id"] == acme.scope.tenant_id


def test_the_default_agent_is_set_by_id_or_key_and_cleared(client: TestClient, acme: Tenant) -> None:
    agent = post(client, "/v1/agents", {"agent_key": "front-desk"}, acme.headers())
    for ref in ("front-desk", agent["id"]):
        response = client.put("/v1/org/default-agent", json={"agent": ref}, headers=acme.headers("admin"))
        assert response.status_code == 200 and response.json()["default_agent_id"] == agent["id"]
    cleared = client.put("/v1/org/default-agent", json={"agent": None}, headers=acme.headers("admin"))
    assert cleared.json()["default_agent_id"] is None
    bad = client.put("/v1/org/default-agent", json={"agent": "Not A Key"}, headers=acme.headers("admin"))
    assert bad.status_code == 422 and bad.json()["error"]["code"] == "invalid_agent_key"


def test_members_are_created_or_invited_and_removed(db: Database, client: TestClient, acme: Tenant,
                                                   globex: Tenant) -> None:
    h = acme.headers("admin")
    created = post(client, "/v1/org/members", {"display_name": "Grace", "email": "grace@example.com",
                                               "role": "operator"}, h)
    assert created["role"] == "operator" and re.fullmatch(id_pattern("org-member"), created["id"])
    with db.transaction() as tx:  # Linus exists, as a member of globex with a key acting as him
        existing = orgs.create_user(tx, display_name="Linus")
        orgs.add_member(tx, globex.scope, existing.id, "member")
        linus = bearer(api_keys.create_api_key(tx, globex.scope, name="linus", role="member",
                                               user_id=existing.id).key)
    invited = client.post("/v1/org/members", json={"user_id": existing.id}, headers=h)
    assert invited.status_code == 202 and invited.json()["invitation"]["status"] == "pending"
    listed = {m["user_id"]: m["role"]
              for m in client.get("/v1/org/members", headers=acme.headers("member")).json()["items"]}
    assert listed == {created["user_id"]: "operator"}  # not a member until he accepts
    invitation = invited.json()["invitation"]["id"]
    assert [i["id"] for i in client.get("/v1/invitations", headers=linus).json()["items"]] == [invitation]
    accepted = client.post(f"/v1/invitations/{invitation}/accept", headers=linus)
    assert accepted.status_code == 200 and accepted.json()["organization_id"] == acme.scope.tenant_id
    listed = {m["user_id"]: m["role"]
              for m in client.get("/v1/org/members", headers=acme.headers("member")).json()["items"]}
    assert listed == {created["user_id"]: "operator", existing.id: "member"}

    conflicts = [({"user_id": existing.id}, "user_id"), ({"display_name": "G2", "email": "grace@example.com"}, "email")]
    for body, field_name in conflicts:
        response = client.post("/v1/org/members", json=body, headers=h)
        assert response.status_code == 409 and response.json()["error"]["field"] == field_name, body
    for body in ({}, {"user_id": existing.id, "display_name": "Both"}, {"display_name": "X", "role": "boss"}):
        assert client.post("/v1/org/members", json=body, headers=h).status_code == 422, body

    assert client.delete(f"/v1/org/members/{existing.id}", headers=h).status_code == 204
    again = client.delete(f"/v1/org/members/{existing.id}", headers=h)
    assert again.status_code == 404 and again.json()["error"]["code"] == "not_found"


def test_no_key_hands_out_or_takes_away_a_role_above_its_own(client: TestClient, acme: Tenant) -> None:
    denied = client.post("/v1/org/members", json={"display_name": "Mallory", "role": "owner"},
                         headers=acme.headers("admin"))
    assert denied.status_code == 403
    boss = post(client, "/v1/org/members", {"display_name": "Boss", "role": "owner"}, acme.headers("owner"))
    post(client, "/v1/org/members", {"display_name": "Other boss", "role": "owner"}, acme.headers("owner"))
    assert client.delete(f"/v1/org/members/{boss['user_id']}", headers=acme.headers("admin")).status_code == 403
    assert client.patch(f"/v1/org/members/{boss['user_id']}", json={"role": "member"},
                        headers=acme.headers("admin")).status_code == 403
    assert client.delete(f"/v1/org/members/{boss['user_id']}", headers=acme.headers("owner")).status_code == 204


def test_api_keys_are_shown_once_act_as_their_member_and_are_revoked(client: TestClient, acme: Tenant) -> None:
    member = post(client, "/v1/org/members", {"display_name": "Ken", "role": "operator"}, acme.headers())
    issued = post(client, "/v1/org/api-keys", {"name": "ken", "role": "operator", "user_id": member["user_id"]},
                  acme.headers())
    record = issued["api_key"]
    assert record["user_id"] == member["user_id"] and record["role"] == "operator" and not record["platform_admin"]
    skill = post(client, "/v1/skills", {"name": "s", "content": "c"}, bearer(issued["key"]))
    assert skill["owner_id"] == member["user_id"]  # the key acts as its member
    listed = client.get("/v1/org/api-keys", headers=acme.headers())
    assert record in listed.json()["items"] and issued["key"] not in listed.text

    too_high = client.post("/v1/org/api-keys", json={"name": "k", "role": "admin", "user_id": member["user_id"]},
                           headers=acme.headers())
    assert too_high.status_code == 422 and too_high.json()["error"]["field"] == "role"
    unknown_role = client.post("/v1/org/api-keys", json={"name": "k", "role": "root"}, headers=acme.headers())
    assert unknown_role.status_code == 422

    assert client.delete(f"/v1/org/api-keys/{record['id']}", headers=acme.headers()).status_code == 204
    assert client.get("/v1/org", headers=bearer(issued["key"])).status_code == 401
    assert client.delete(f"/v1/org/api-keys/{record['id']}", headers=acme.headers()).status_code == 404
