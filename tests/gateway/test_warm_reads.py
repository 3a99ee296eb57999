"""The warm read of an agent, answered from the caches in front of the router: the same answer as the route,
and never an answer the route would not give."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from agentfy.gateway import warm_reads
from agentfy.gateway.routes import agents as agent_routes
from agentfy.gateway.warm_reads import WarmAgentReads
from agentfy.store.db import Database
from agentfy.store.repos import api_keys
from tests.helpers.tenants import Tenant

Scope = dict[str, object]


@pytest.fixture
def answered(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bool]]:
    """One entry per request the warm path saw: whether it answered (``True``) or passed it on."""
    seen: list[bool] = []
    original = WarmAgentReads.cached_body

    def spying(self: WarmAgentReads, scope: Scope) -> bytes | None:
        body = original(self, scope)  # type: ignore[arg-type]
        seen.append(body is not None)
        return body

    monkeypatch.setattr(WarmAgentReads, "cached_body", spying)
    yield seen


def _agent(client: TestClient, tenant: Tenant, key: str = "support-bot") -> dict[str, object]:
    created = client.post("/v1/agents", json={"agent_key": key, "config": {"tone": "dry"}},
                          headers=tenant.headers("operator"))
    assert created.status_code == 201, created.text
    return dict(created.json())


def test_the_path_it_serves_is_the_routes_path() -> None:
    (route,) = [r for r in agent_routes.router.routes if isinstance(r, APIRoute) and r.operation_id == "agents.get"]
    assert "/v1" + route.path == warm_reads.PREFIX + "{agent}" and route.methods == {"GET"}


def test_a_warm_read_is_the_cold_answer_byte_for_byte(client: TestClient, acme: Tenant,
                                                      answered: list[bool]) -> None:
    agent = _agent(client, acme)
    for reference in (agent["id"], "support-bot"):
        answered.clear()
        cold = client.get(f"/v1/agents/{reference}", headers=acme.headers("member"))
        warm = client.get(f"/v1/agents/{reference}", headers=acme.headers("member"))
        assert answered[-1] is True, "the second read should have been answered from the caches"
        assert (warm.status_code, warm.content) == (cold.status_code, cold.content) == (200, warm.content)
        assert {k: v for k, v in warm.headers.items() if k in ("content-type", "content-length")} == \
               {k: v for k, v in cold.headers.items() if k in ("content-type", "content-length")}


def test_it_never_answers_for_another_tenant(client: TestClient, acme: Tenant, globex: Tenant,
                                             answered: list[bool]) -> None:
    agent = _agent(client, acme)
    client.get(f"/v1/agents/{agent['id']}", headers=acme.headers("member"))  # warm for acme
    _agent(client, globex)  # globex has its own support-bot: same key, another agent
    for _ in range(2):
        assert client.get(f"/v1/agents/{agent['id']}", headers=globex.headers("owner")).status_code == 404
        theirs = client.get("/v1/agents/support-bot", headers=globex.headers("owner"))
        assert theirs.status_code == 200 and theirs.json()["id"] != agent["id"]


def test_a_revoked_key_is_refused_at_once_though_everything_was_warm(db: Database, client: TestClient,
                                                                     acme: Tenant, answered: list[bool]) -> None:
    _agent(client, acme)
    for _ in range(2):
        assert client.get("/v1/agents/support-bot", headers=acme.headers("member")).status_code == 200
    assert answered[-1] is True
    with db.transaction() as tx:
        (member_key,) = [k for k in api_keys.list_api_keys(tx, acme.scope) if k.name == "member"]
        api_keys.revoke_api_key(tx, acme.scope, member_key.id)
    refused = client.get("/v1/agents/support-bot", headers=acme.headers("member"))
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "revoked"
    assert answered[-1] is False


@pytest.mark.parametrize("header", [None, "Bearer nonsense", "Basic abc", "Bearer " + "k" * 5000])
def test_missing_or_bad_credentials_get_the_applications_401(client: TestClient, acme: Tenant, header: str | None,
                                                             answered: list[bool]) -> None:
    _agent(client, acme)
    client.get("/v1/agents/support-bot", headers=acme.headers("member"))
    answer = client.get("/v1/agents/support-bot", headers={} if header is None else {"Authorization": header})
    assert answer.status_code == 401 and answer.json()["error"]["code"] in ("unauthorized", "revoked")
    assert answered[-1:] in ([], [False])


@pytest.mark.parametrize("path", ["/v1/agents/support-bot?x=1", "/v1/agents/support-bot/", "/v1/agents/",
                                  "/v1/agents/support-bot/heartbeat"])
def test_other_shapes_go_to_the_application(client: TestClient, acme: Tenant, path: str,
                                            answered: list[bool]) -> None:
    _agent(client, acme)
    client.get("/v1/agents/support-bot", headers=acme.headers("member"))
    answered.clear()
    expected = client.get(path, headers=acme.headers("member"), follow_redirects=False)
    assert True not in answered
    assert expected.status_code in (200, 404, 405, 307)


def test_a_rename_is_seen_at_once(client: TestClient, acme: Tenant, answered: list[bool]) -> None:
    agent = _agent(client, acme)
    client.get("/v1/agents/support-bot", headers=acme.headers("member"))
    client.patch(f"/v1/agents/{agent['id']}", json={"agent_key": "helper"}, headers=acme.headers("operator"))
    assert client.get("/v1/agents/support-bot", headers=acme.headers("member")).status_code == 404
    assert client.get(f"/v1/agents/{agent['id']}", headers=acme.headers("member")).json()["agent_key"] == "helper"
