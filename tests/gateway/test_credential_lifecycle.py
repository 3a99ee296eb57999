"""Credentials and their whole chain: revocation, member removal, demotion, expiry, organization deletion and
the signing epoch refuse every outstanding key and signed context on the next request, and the refused
requests write nothing (both engines); what can never be done (lock-outs, a signed context minting keys)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from agentfy.cli import app as cli
from agentfy.gateway import auth
from agentfy.gateway.auth import Principal, sign_context
from agentfy.identity import OrgId, Scope
from agentfy.store.db import Database
from agentfy.store.repos import agents, api_keys, orgs
from tests.helpers.tenants import Tenant

SECRET = b"s" * 32


@dataclass
class Person:
    user_id: str
    key: str
    key_id: str
    context: str  # a signed context from the key

    def headers(self, *, signed: bool = False) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.context if signed else self.key}"}


def person(db: Database, scope: Scope, role: str) -> Person:
    with db.transaction() as tx:
        user = orgs.create_user(tx, display_name=role).id
        orgs.add_member(tx, scope, user, role)
        issued = api_keys.create_api_key(tx, scope, name=role, role=role, user_id=user)
        token = sign_context(tx, SECRET, Principal(OrgId(scope.tenant_id), role, user, key_id=issued.record.id))
    return Person(user, issued.key, issued.record.id, token)


def agent_count(db: Database, scope: Scope) -> int:
    with db.transaction(write=False) as tx:
        return len(agents.list_agents(tx, scope))


def refused(client: TestClient, headers: dict[str, str], db: Database, scope: Scope) -> None:
    """Every use is 401 ``revoked`` — a read, and a write that writes nothing."""
    before = agent_count(db, scope)
    read = client.get("/v1/agents", headers=headers)
    write = client.post("/v1/agents", json={"agent_key": "sneaky"}, headers=headers)
    assert (read.status_code, write.status_code) == (401, 401), (read.text, write.text)
    assert read.json()["error"]["code"] == write.json()["error"]["code"] == "revoked"
    assert agent_count(db, scope) == before


def works(client: TestClient, headers: dict[str, str]) -> None:
    assert client.get("/v1/agents", headers=headers).status_code == 200


@pytest.fixture
def app_client(db: Database) -> TestClient:
    from agentfy.gateway.app import create_app

    with TestClient(create_app(db, signing_secret=SECRET)) as client:
        yield client  # type: ignore[misc]


Change = Callable[[TestClient, Tenant, Person], None]


def _revoke(client: TestClient, tenant: Tenant, who: Person) -> None:
    assert client.delete(f"/v1/org/api-keys/{who.key_id}", headers=tenant.headers()).status_code == 204


def _remove(client: TestClient, tenant: Tenant, who: Person) -> None:
    assert client.delete(f"/v1/org/members/{who.user_id}", headers=tenant.headers()).status_code == 204


CHANGES: dict[str, Change] = {"key revoked": _revoke, "member removed": _remove}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_key_and_its_signed_contexts_stop_at_once(db: Database, app_client: TestClient, acme: Tenant,
                                                    change: str) -> None:
    ann = person(db, acme.scope, "admin")
    for signed in (False, True):
        works(app_client, ann.headers(signed=signed))  # cached now
    CHANGES[change](app_client, acme, ann)
    for signed in (False, True):
        refused(app_client, ann.headers(signed=signed), db, acme.scope)


def test_removing_a_member_revokes_their_keys_in_the_database(db: Database, app_client: TestClient,
                                                              acme: Tenant) -> None:
    ann = person(db, acme.scope, "operator")
    _remove(app_client, acme, ann)
    with db.transaction(write=False) as tx:
        record = next(k for k in api_keys.list_api_keys(tx, acme.scope) if k.id == ann.key_id)
    assert record.revoked_at is not None


def test_a_demotion_narrows_keys_and_refuses_contexts_signed_above_it(db: Database, app_client: TestClient,
                                                                      acme: Tenant) -> None:
    ann = person(db, acme.scope, "admin")
    assert app_client.put("/v1/org/default-agent", json={"agent": None}, headers=ann.headers()).status_code == 200
    demoted = app_client.patch(f"/v1/org/members/{ann.user_id}", json={"role": "member"}, headers=acme.headers())
    assert demoted.status_code == 200 and demoted.json()["role"] == "member"
    answer = app_client.put("/v1/org/default-agent", json={"agent": None}, headers=ann.headers())
    assert answer.status_code == 403  # the key now has the member role
    works(app_client, ann.headers())
    with db.transaction(write=False) as tx:
        assert next(k for k in api_keys.list_api_keys(tx, acme.scope) if k.id == ann.key_id).role == "member"
    refused(app_client, ann.headers(signed=True), db, acme.scope)  # signed as an admin: above its key now


def test_an_epoch_bump_refuses_every_signed_context_and_no_api_key(db: Database, app_client: TestClient,
                                                                   acme: Tenant) -> None:
    ann = person(db, acme.scope, "admin")
    works(app_client, ann.headers(signed=True))
    auth.bump_signing_epoch(db)
    refused(app_client, ann.headers(signed=True), db, acme.scope)
    works(app_client, ann.headers())


def test_a_deleted_organizations_keys_and_contexts_are_refused(db: Database, app_client: TestClient,
                                                               acme: Tenant, platform_admin: dict[str, str]) -> None:
    ann = person(db, acme.scope, "owner")
    for signed in (False, True):
        works(app_client, ann.headers(signed=signed))
    assert app_client.delete(f"/v1/orgs/{acme.scope.tenant_id}", headers=platform_admin).status_code == 204
    for signed in (False, True):
        headers = ann.headers(signed=signed)
        read = app_client.get("/v1/agents", headers=headers)
        write = app_client.post("/v1/agents", json={"agent_key": "ghost"}, headers=headers)
        assert (read.status_code, write.status_code) == (401, 401)
    assert agent_count(db, acme.scope) == 0


def test_an_expired_key_is_refused(db: Database, app_client: TestClient, acme: Tenant) -> None:
    with db.transaction() as tx:
        issued = api_keys.create_api_key(tx, acme.scope, name="old", role="member",
                                         expires_at="2000-01-01T00:00:00.000000Z")
    answer = app_client.get("/v1/agents", headers={"Authorization": f"Bearer {issued.key}"})
    assert answer.status_code == 401 and "expired" in answer.json()["error"]["message"]
    made = app_client.post("/v1/org/api-keys", json={"name": "soon", "role": "member", "expires_in_days": 30},
                           headers=acme.headers())
    assert made.status_code == 201 and made.json()["api_key"]["expires_at"] > "2026"


def test_a_signed_context_cannot_mint_or_manage_credentials_or_members(db: Database, app_client: TestClient,
                                                                       acme: Tenant) -> None:
    ann = person(db, acme.scope, "owner")
    other = person(db, acme.scope, "member")
    headers = ann.headers(signed=True)
    keys_before = len(app_client.get("/v1/org/api-keys", headers=acme.headers()).json()["items"])
    attempts = [("POST", "/v1/org/api-keys", {"name": "forever", "role": "owner"}),
                ("DELETE", f"/v1/org/api-keys/{other.key_id}", None),
                ("POST", "/v1/org/members", {"display_name": "Mole", "role": "owner"}),
                ("PATCH", f"/v1/org/members/{other.user_id}", {"role": "owner"}),
                ("DELETE", f"/v1/org/members/{other.user_id}", None)]
    for method, path, body in attempts:
        answer = app_client.request(method, path, json=body, headers=headers)
        assert answer.status_code == 403 and "signed context" in answer.json()["error"]["message"], (method, path)
    assert len(app_client.get("/v1/org/api-keys", headers=acme.headers()).json()["items"]) == keys_before
    assert app_client.get("/v1/org/members", headers=headers).status_code == 200  # reading is fine
    with app_client.websocket_connect("/v1/ws", headers=headers) as ws:
        ws.send_json({"id": 1, "method": "context.sign"})
        assert ws.receive_json()["error"]["status"] == 403  # and it cannot renew itself


def test_the_last_owner_cannot_leave_or_be_demoted(db: Database, app_client: TestClient, acme: Tenant) -> None:
    boss = person(db, acme.scope, "owner")
    for method, body in (("DELETE", None), ("PATCH", {"role": "admin"})):
        answer = app_client.request(method, f"/v1/org/members/{boss.user_id}", json=body, headers=acme.headers())
        assert answer.status_code == 409 and "last owner" in answer.json()["error"]["message"]
    second = person(db, acme.scope, "owner")
    assert app_client.patch(f"/v1/org/members/{boss.user_id}", json={"role": "admin"},
                            headers=acme.headers()).status_code == 200
    assert app_client.delete(f"/v1/org/members/{second.user_id}", headers=acme.headers()).status_code == 409


def test_no_key_locks_out_its_organization_or_the_platform(db: Database, app_client: TestClient, acme: Tenant,
                                                           platform_admin: dict[str, str]) -> None:
    with db.transaction(write=False) as tx:
        owner_key = next(k for k in api_keys.list_api_keys(tx, acme.scope) if k.role == "owner")
    answer = app_client.delete(f"/v1/org/api-keys/{owner_key.id}", headers=acme.headers())
    assert answer.status_code == 409 and "last live owner key" in answer.json()["error"]["message"]
    with db.transaction(write=False) as tx:
        (platform_key,) = api_keys.live_platform_admin_keys(tx)
    answer = app_client.delete(f"/v1/org/api-keys/{platform_key}", headers=platform_admin)
    assert answer.status_code == 409 and "platform-admin" in answer.json()["error"]["message"]
    works(app_client, acme.headers())
    assert app_client.get("/v1/orgs", headers=platform_admin).status_code == 200


def test_rotating_the_platform_admin_key_prints_a_new_one_and_refuses_the_old(
        db: Database, app_client: TestClient, platform_admin: dict[str, str]) -> None:
    assert app_client.get("/v1/orgs", headers=platform_admin).status_code == 200  # cached
    result = CliRunner().invoke(cli, ["admin", "rotate-key", "--database-url", db.url])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    new_key = lines[lines.index(next(line for line in lines if "shown once" in line)) + 1].strip()
    # another process made the change: this one hears it through the change feed within milliseconds
    deadline = time.monotonic() + 5
    while app_client.get("/v1/orgs", headers=platform_admin).status_code != 401:
        assert time.monotonic() < deadline, "the old platform-admin key still works"
        time.sleep(0.02)
    assert app_client.post("/v1/orgs", json={"slug": "late", "name": "Late"}, headers=platform_admin).status_code \
        == 401  # a write never waits for the feed: its credential is checked in the database
    assert app_client.get("/v1/orgs", headers={"Authorization": f"Bearer {new_key}"}).status_code == 200


@pytest.mark.parametrize("header", ["Bearer {k}", "bearer {k}", "BEARER {k}", "Bearer  {k}"])
def test_the_scheme_is_case_insensitive_as_swagger_and_clients_send_it(app_client: TestClient, acme: Tenant,
                                                                       header: str) -> None:
    key = acme.keys["owner"]
    assert app_client.get("/v1/agents", headers={"Authorization": header.format(k=key)}).status_code == 200


@pytest.mark.parametrize("header", ["Basic abc", "Bearer", "Bearer ", "Token x", "Bearer agfy_sc_a.\xe9",
                                    "Bearer a\x7fb", "Bearer " + "k" * 5000])
def test_a_malformed_authorization_header_is_401(app_client: TestClient, header: str) -> None:
    answer = app_client.get("/v1/agents", headers={"Authorization": header.encode("latin-1")})  # type: ignore[dict-item]
    assert answer.status_code == 401 and answer.json()["error"]["code"] == "unauthorized"


def test_the_openapi_document_declares_the_bearer_scheme_and_is_small(app_client: TestClient) -> None:
    raw = app_client.get("/openapi.json")
    # About 1 MB before the document was compacted; 156 KB since it states every input rule the server enforces
    # (patterns, lengths, one-of rules: what generated clients need), 195 KB with the credentials, model, channel
    # access and OpenAI-compatible operations, 228 KB with team tasks and the MCP tools route.  The bound catches a
    # regression to the uncompacted document (five times this size), not the rules or new operations.
    assert len(raw.content) < 300_000, len(raw.content)
    spec = raw.json()
    assert spec["components"]["securitySchemes"]["bearer"] == {
        "type": "http", "scheme": "bearer",
        "description": spec["components"]["securitySchemes"]["bearer"]["description"]}
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            if path.startswith("/v1/"):
                assert operation["security"] == [{"bearer": []}], (method, path)
                names = [p["name"].lower() for p in operation.get("parameters", [])]
                assert "authorization" not in names, (method, path)  # a credential, not data


def test_docs_authorize_works_as_swagger_sends_it(app_client: TestClient, acme: Tenant) -> None:
    """Swagger UI's Authorize, for an HTTP bearer scheme, sends ``Authorization: Bearer <value>`` on every
    operation whose ``security`` names the scheme: read the scheme as it does, and send what it sends."""
    page = app_client.get("/docs")
    assert page.status_code == 200 and "/openapi.json" in page.text
    spec = app_client.get("/openapi.json").json()
    (name, scheme), = spec["components"]["securitySchemes"].items()
    assert scheme["type"] == "http" and scheme["scheme"].lower() == "bearer"
    operation = spec["paths"]["/v1/agents"]["get"]
    assert operation["security"] == [{name: []}]
    header = f"Bearer {acme.keys['member']}"  # swagger-ui: "Bearer " + the value typed into Authorize
    assert app_client.get("/v1/agents", headers={"Authorization": header}).status_code == 200
    assert app_client.get("/v1/agents").status_code == 401  # not authorized yet: no header at all
