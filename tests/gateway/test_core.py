"""The gateway's core: authentication, roles, the error contract, agents by ID or key, health (both engines)."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient

from agentfy.ids import format_id, id_pattern
from agentfy.store.db import Database
from agentfy.store.repos import api_keys
from tests.gateway.openapi_schemas import accepts
from tests.helpers.tenants import Tenant


def test_health_and_readiness(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    assert client.get("/readyz").json() == {"status": "ready"}


def test_no_or_bad_key_is_401_with_the_error_shape(client: TestClient, acme: Tenant) -> None:
    for headers in ({}, {"Authorization": "Basic x"}, {"Authorization": "Bearer agfy_ok_nope"}):
        response = client.get("/v1/agents", headers=headers)
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "unauthorized"


def test_revoking_a_key_takes_effect_on_the_next_request(db: Database, client: TestClient, acme: Tenant) -> None:
    assert client.get("/v1/agents", headers=acme.headers("member")).status_code == 200
    with db.transaction() as tx:
        key = next(k for k in api_keys.list_api_keys(tx, acme.scope) if k.role == "member")
        api_keys.revoke_api_key(tx, acme.scope, key.id)
    assert client.get("/v1/agents", headers=acme.headers("member")).status_code == 401


def test_role_too_low_is_403(client: TestClient, acme: Tenant) -> None:
    response = client.post("/v1/agents", json={"agent_key": "bot"}, headers=acme.headers("member"))
    assert response.status_code == 403 and response.json()["error"]["code"] == "forbidden"


def test_agents_are_addressed_by_id_or_key(client: TestClient, acme: Tenant) -> None:
    created = client.post("/v1/agents", json={"agent_key": "support-bot"}, headers=acme.headers("operator"))
    assert created.status_code == 201
    agent = created.json()
    assert agent["tenant_id"] == acme.scope.tenant_id
    for ref in (agent["id"], "support-bot"):
        assert client.get(f"/v1/agents/{ref}", headers=acme.headers("member")).json() == agent
    renamed = client.patch(f"/v1/agents/{agent['id']}", json={"agent_key": "helper"}, headers=acme.headers())
    assert renamed.status_code == 200 and renamed.json()["id"] == agent["id"]
    assert client.get("/v1/agents/support-bot", headers=acme.headers()).status_code == 404
    assert client.delete("/v1/agents/helper", headers=acme.headers("admin")).status_code == 204
    assert client.get(f"/v1/agents/{agent['id']}", headers=acme.headers()).status_code == 404


def test_a_cached_read_answers_exactly_what_an_uncached_one_does(client: TestClient, acme: Tenant) -> None:
    """The warm ``GET /v1/agents/{agent}`` returns a rendering kept beside the cached record: byte for byte
    the body and content type the response model makes, and never a rendering of an older record."""
    created = client.post("/v1/agents", json={"agent_key": "support-bot", "config": {"tone": "dry", "n": [1, 2.5]},
                                              "display_name": "Support \u00e9\U0001f600"},
                          headers=acme.headers("operator")).json()
    cold = client.get(f"/v1/agents/{created['id']}", headers=acme.headers("member"))  # a miss: the model renders
    warm = client.get(f"/v1/agents/{created['id']}", headers=acme.headers("member"))  # a hit: the cached bytes
    assert cold.status_code == warm.status_code == 200
    assert warm.content == cold.content and warm.headers["content-type"] == cold.headers["content-type"]
    assert warm.json() == created
    client.patch("/v1/agents/support-bot", json={"display_name": "Renamed"}, headers=acme.headers("operator"))
    for _ in range(2):
        assert client.get("/v1/agents/support-bot", headers=acme.headers("member")).json()["display_name"] == "Renamed"


def test_the_tenant_comes_from_the_key_never_from_the_request(client: TestClient, acme: Tenant,
                                                                globex: Tenant) -> None:
    body = {"agent_key": "bot", "tenant_id": globex.scope.tenant_id}
    assert client.post("/v1/agents", json=body, headers=acme.headers()).status_code == 422  # unknown field
    created = client.post("/v1/agents", json={"agent_key": "bot"}, headers=acme.headers()).json()
    assert created["tenant_id"] == acme.scope.tenant_id


def test_another_tenants_agent_and_a_missing_one_get_the_same_404(client: TestClient, acme: Tenant,
                                                                  globex: Tenant) -> None:
    theirs = client.post("/v1/agents", json={"agent_key": "secret"}, headers=globex.headers()).json()
    missing = format_id("agent")
    a = client.get(f"/v1/agents/{theirs['id']}", headers=acme.headers())
    b = client.get(f"/v1/agents/{missing}", headers=acme.headers())
    assert a.status_code == b.status_code == 404
    assert a.json()["error"]["code"] == b.json()["error"]["code"] == "not_found"
    assert a.json()["error"]["message"] == b.json()["error"]["message"] == "agent not found"
    assert theirs["id"] not in a.text or a.json()["error"]["value"] == theirs["id"]  # only the caller's own input


def test_malformed_ids_and_wrong_entities_are_422_naming_field_value_and_format(client: TestClient,
                                                                                acme: Tenant) -> None:
    for ref, code in (("team-calm-rivers-k8m4p2d7n9x3", "invalid_id"), ("Not_A_Key", "invalid_agent_key")):
        response = client.get(f"/v1/agents/{ref}", headers=acme.headers())
        assert response.status_code == 422, ref
        error = response.json()["error"]
        assert error["code"] == code and error["value"] == ref and error["field"] == "agent"
        assert "expected" in error


def test_legacy_ids_are_well_formed_but_not_found(client: TestClient, acme: Tenant) -> None:
    response = client.get("/v1/agents/0193a5b0-7000-7000-8000-000000000001", headers=acme.headers())
    assert response.status_code == 404


def test_duplicate_agent_key_is_409(client: TestClient, acme: Tenant) -> None:
    assert client.post("/v1/agents", json={"agent_key": "bot"}, headers=acme.headers()).status_code == 201
    response = client.post("/v1/agents", json={"agent_key": "bot"}, headers=acme.headers())
    assert response.status_code == 409 and response.json()["error"]["field"] == "agent_key"


def test_errors_never_leak_sql_or_tracebacks(client: TestClient, acme: Tenant) -> None:
    response = client.post("/v1/agents", json={"agent_key": "b" * 101}, headers=acme.headers())
    assert response.status_code == 422
    text = response.text.lower()
    assert "select" not in text and "insert" not in text and "traceback" not in text


def test_ids_endpoint_explains_and_checks_existence_in_the_callers_tenant(client: TestClient, acme: Tenant,
                                                                          globex: Tenant) -> None:
    mine = client.post("/v1/agents", json={"agent_key": "a"}, headers=acme.headers()).json()["id"]
    theirs = client.post("/v1/agents", json={"agent_key": "a"}, headers=globex.headers()).json()["id"]
    report = client.get(f"/v1/ids/{mine}", headers=acme.headers()).json()
    assert report["valid"] and report["model"] == "Agent" and report["exists_in_your_organization"] is True
    assert client.get(f"/v1/ids/{theirs}", headers=acme.headers()).json()["exists_in_your_organization"] is False
    bad = client.get("/v1/ids/agent-calm-rivers-k8m4p2d7n9xi", headers=acme.headers()).json()
    assert bad["valid"] is False and bad["problems"]


def test_openapi_shows_id_parameters_with_their_anchored_pattern(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    parameter = spec["paths"]["/v1/agents/{agent}"]["get"]["parameters"][0]
    assert parameter["schema"]["$ref"] == "#/components/schemas/AgentRef"  # the pattern, stated once
    schema = parameter["schema"]
    for good in (format_id("agent"), "support-bot", "0193a5b0-7000-7000-8000-000000000001"):
        assert accepts(spec, schema, good), good
    for bad in ("agent-calm-rivers-k8m4p2d7n9xI", "Support-Bot", "support_bot", " support-bot"):
        assert not accepts(spec, schema, bad), bad
    agent_id = spec["components"]["schemas"]["AgentId"]
    assert accepts(spec, agent_id, format_id("agent")) and not accepts(spec, agent_id, format_id("team"))
    assert not accepts(spec, agent_id, format_id("agent-link"))  # a longer prefix is another entity
    assert id_pattern() in json.dumps(spec)  # the dictionaries, once
