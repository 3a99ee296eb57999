"""The WebSocket API (``/v1/ws``): authentication, the methods, the error shape, and agent events (both engines)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from fastapi.testclient import TestClient
from starlette.testclient import WebSocketTestSession
from starlette.websockets import WebSocketDisconnect

from agentfy.gateway import auth
from agentfy.gateway.routes import ws as ws_route
from agentfy.gateway.rpc.broadcast import Subscriber, broadcaster_for
from agentfy.identity import AgentId, AgentKey, InvalidAgentKeyError
from agentfy.identity.context import RequestContext
from agentfy.identity.keys import InvalidTenantSlugError, TenantSlug, looks_like_an_id
from agentfy.ids import format_id, is_id
from agentfy.runtime.events import AgentEvent
from agentfy.store.changefeed import Change
from agentfy.store.db import Database
from agentfy.store.repos import agents, api_keys, audit
from tests.helpers.tenants import Tenant

TEAM_ID = "team-calm-rivers-k8m4p2d7n9x3"


class Rpc:
    """A JSON-RPC client over a test WebSocket: responses by id; pushed events collected on the way."""

    def __init__(self, ws: WebSocketTestSession) -> None:
        self.ws = ws
        self.events: list[dict[str, Any]] = []
        self._next = 0

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self._next += 1
        request: dict[str, Any] = {"id": self._next, "method": method}
        if params is not None:
            request["params"] = params
        return self.send(request, self._next)

    def send(self, request: Any, expect_id: Any) -> dict[str, Any]:
        if isinstance(request, str):
            self.ws.send_text(request)
        elif isinstance(request, bytes):
            self.ws.send_bytes(request)
        else:
            self.ws.send_json(request)
        while True:
            message = self.ws.receive_json()
            if "event" in message:
                self.events.append(message)
                continue
            assert message["id"] == expect_id, message
            return message

    def wait_events(self, count: int) -> list[dict[str, Any]]:
        """Until ``count`` events have arrived (on PostgreSQL they come from the change feed's listening
        connection, a few milliseconds after the commit, so a response may overtake them)."""
        while len(self.events) < count:
            message = self.ws.receive_json()
            assert "event" in message, message
            self.events.append(message)
        return self.events

    def sync(self, client: TestClient, headers: dict[str, str]) -> list[dict[str, Any]]:
        """Every event committed before now has arrived: a marker change is made and its event awaited (events
        arrive in commit order), then dropped from :attr:`events`."""
        self._next += 1
        key = f"zz-marker-{self._next}"
        assert client.post("/v1/agents", json={"agent_key": key}, headers=headers).status_code == 201
        while not any(e["agent"]["agent_key"] == key for e in self.events if "agent" in e):
            self.wait_events(len(self.events) + 1)
        self.events = [e for e in self.events if "agent" not in e or e["agent"]["agent_key"] != key]
        return self.events

    def result(self, method: str, params: dict[str, Any] | None = None) -> Any:
        message = self.call(method, params)
        assert "result" in message, message
        return message["result"]

    def error(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        message = self.call(method, params)
        assert "error" in message, message
        return message["error"]


@contextmanager
def connect(client: TestClient, headers: dict[str, str] | None = None) -> Iterator[Rpc]:
    with client.websocket_connect("/v1/ws", headers=headers or {}) as ws:
        yield Rpc(ws)


def expect_close(ws: WebSocketTestSession, code: int = 4401) -> None:
    with pytest.raises(WebSocketDisconnect) as closed:
        ws.receive_json()
    assert closed.value.code == code


def http_error(response: Any) -> dict[str, Any]:
    """The HTTP error body as the WebSocket carries it: the error object plus the status."""
    return {**response.json()["error"], "status": response.status_code}


# -- authentication ----------------------------------------------------------------------------------------------
def test_auth_by_header(client: TestClient, acme: Tenant) -> None:
    created = client.post("/v1/agents", json={"agent_key": "bot"}, headers=acme.headers()).json()
    with connect(client, acme.headers("member")) as rpc:
        assert rpc.result("agents.list")["items"] == [created]


def test_auth_by_first_message(client: TestClient, acme: Tenant) -> None:
    with connect(client) as rpc:
        rpc.ws.send_json({"id": "a", "method": "auth", "params": {"token": acme.keys["operator"]}})
        assert rpc.ws.receive_json() == {"id": "a", "result": {
            "tenant_id": acme.scope.tenant_id, "tenant_slug": "acme", "role": "operator", "credential": "api_key"}}
        assert rpc.result("agents.create", {"agent_key": "bot"})["tenant_id"] == acme.scope.tenant_id
        again = rpc.error("auth", {"token": acme.keys["owner"]})  # no switching principals mid-connection
        assert again["code"] == "invalid_request" and again["status"] == 400


@pytest.mark.parametrize("first", [
    {"id": 1, "method": "agents.list"},
    {"id": 1, "method": "auth", "params": {"token": "agfy_ok_nope"}},
    {"id": 1, "method": "auth", "params": {}},
    {"id": 1, "method": "auth", "params": {"token": "agfy_sc_forged.mac"}},
])
def test_anything_but_a_valid_auth_first_is_an_error_and_close_4401(client: TestClient, acme: Tenant,
                                                                     first: dict[str, Any]) -> None:
    with client.websocket_connect("/v1/ws") as ws:
        ws.send_json(first)
        reply = ws.receive_json()
        assert reply["id"] == 1 and reply["error"]["status"] in (401, 422), reply
        assert reply["error"]["code"] in ("unauthorized", "invalid_input")
        expect_close(ws)


def test_a_malformed_first_message_is_an_error_and_close_4401(client: TestClient) -> None:
    with client.websocket_connect("/v1/ws") as ws:
        ws.send_text("not json")
        assert ws.receive_json() == {"id": None, "error": {
            "code": "invalid_request", "message": "the message is not valid JSON", "status": 400}}
        expect_close(ws)


@pytest.mark.parametrize("header", ["Bearer agfy_ok_nope", "Basic abc", "Bearer "])
def test_a_bad_authorization_header_is_an_error_and_close_4401(client: TestClient, header: str) -> None:
    with client.websocket_connect("/v1/ws", headers={"Authorization": header}) as ws:
        reply = ws.receive_json()
        assert reply["id"] is None
        assert reply["error"]["code"] == "unauthorized" and reply["error"]["status"] == 401
        expect_close(ws)


def test_no_credential_in_time_closes_4401(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ws_route, "AUTH_TIMEOUT_SECONDS", 0.2)
    with client.websocket_connect("/v1/ws") as ws:
        assert ws.receive_json()["error"]["code"] == "unauthorized"
        expect_close(ws)


def test_reconnect_with_a_signed_context(client: TestClient, acme: Tenant) -> None:
    with connect(client, acme.headers("operator")) as rpc:
        signed = rpc.result("context.sign")
        rpc.result("agents.create", {"agent_key": "bot"})
    assert signed["token"].startswith(auth.SIGNED_CONTEXT_PREFIX) and signed["expires_in"] == 300
    assert signed["tenant_slug"] == "acme"
    bearer = {"Authorization": f"Bearer {signed['token']}"}
    with connect(client, bearer) as rpc:  # by header
        assert [a["agent_key"] for a in rpc.result("agents.list")["items"]] == ["bot"]
        assert rpc.result("agents.create", {"agent_key": "other"})["tenant_id"] == acme.scope.tenant_id  # role kept
        refused = rpc.error("context.sign")  # a signed context cannot renew itself
        assert refused["code"] == "forbidden" and refused["status"] == 403
    with connect(client) as rpc:  # by first message
        rpc.ws.send_json({"id": 7, "method": "auth", "params": {"token": signed["token"]}})
        info = rpc.ws.receive_json()["result"]
        assert info["credential"] == "signed_context" and info["tenant_slug"] == "acme" and info["role"] == "operator"
        assert rpc.result("agents.get", {"agent": "bot"})["agent_key"] == "bot"


def test_a_signed_context_revoked_by_bumping_the_epoch_is_refused(db: Database, client: TestClient,
                                                                   acme: Tenant) -> None:
    with connect(client, acme.headers()) as rpc:
        token = rpc.result("context.sign")["token"]
    bearer = {"Authorization": f"Bearer {token}"}
    with connect(client, bearer) as live:
        assert live.result("agents.list")["items"] == []
        auth.bump_signing_epoch(db)
        revoked = live.call("agents.list")["error"]  # the live connection ends at its next request
        assert revoked["code"] == "revoked" and revoked["message"].startswith("the signed context was revoked")
        expect_close(live.ws)
    with client.websocket_connect("/v1/ws", headers=bearer) as ws:  # and it cannot reconnect
        reply = ws.receive_json()
        assert reply["error"] == {"code": "revoked", "status": 401,
                                  "message": "the signed context was revoked (the signing epoch moved)"}
        expect_close(ws)
    with client.websocket_connect("/v1/ws") as ws:
        ws.send_json({"id": 1, "method": "auth", "params": {"token": token}})
        assert ws.receive_json()["error"]["code"] == "revoked"
        expect_close(ws)


def test_a_revoked_api_key_ends_the_live_connection(db: Database, client: TestClient, acme: Tenant) -> None:
    with connect(client, acme.headers("member")) as rpc:
        assert rpc.result("agents.list")["items"] == []
        with db.transaction() as tx:
            key = next(k for k in api_keys.list_api_keys(tx, acme.scope) if k.role == "member")
            api_keys.revoke_api_key(tx, acme.scope, key.id)
        error = rpc.call("agents.list")["error"]
        assert error["code"] == "revoked" and error["status"] == 401
        expect_close(rpc.ws)


def test_a_key_revoked_behind_the_cache_writes_nothing_and_ends_the_connection(db: Database, client: TestClient,
                                                                             acme: Tenant) -> None:
    """A write confirms its credential in its own transaction: a revocation no cache has heard of (another
    process's, its notice not yet here; here plain SQL, no notice at all) is refused all the same."""
    with connect(client, acme.headers("operator")) as rpc:
        assert rpc.result("agents.create", {"agent_key": "before"})["agent_key"] == "before"
        with db.transaction() as tx:
            key = next(k for k in api_keys.list_api_keys(tx, acme.scope) if k.role == "operator")
            tx.execute("UPDATE api_keys SET revoked_at = created_at WHERE id = :id", {"id": key.id})
        assert rpc.result("agents.list")["items"][0]["agent_key"] == "before"  # a read: the cache answers
        error = rpc.call("agents.create", {"agent_key": "after"})["error"]
        assert error["code"] == "revoked" and error["status"] == 401
        expect_close(rpc.ws)
    with db.transaction(write=False) as tx:
        assert [agent.agent_key for agent in agents.list_agents(tx, acme.scope)] == ["before"]


# -- methods -------------------------------------------------------------------------------------------------------
def test_every_agent_method_by_id_and_by_key(client: TestClient, acme: Tenant) -> None:
    with connect(client, acme.headers("admin")) as rpc:
        created = rpc.result("agents.create", {"agent_key": "support-bot", "display_name": "Support"})
        assert is_id(created["id"], "agent") and created["agent_key"] == "support-bot"
        for ref in (created["id"], "support-bot"):
            assert rpc.result("agents.get", {"agent": ref}) == created
            beat = rpc.result("agents.heartbeat", {"agent": ref})
            assert beat.pop("checked_at") and beat == {"id": created["id"], "tenant_id": acme.scope.tenant_id,
                                                       "agent_key": "support-bot", "display_name": "Support",
                                                       "running": False}
        assert rpc.result("agents.list")["items"] == [created]

        renamed = rpc.result("agents.update", {"agent": "support-bot", "agent_key": "helper",
                                               "display_name": "Helper"})
        assert renamed["id"] == created["id"] and renamed["agent_key"] == "helper"
        assert renamed["display_name"] == "Helper"
        assert rpc.error("agents.get", {"agent": "support-bot"})["code"] == "not_found"  # the old key is gone
        assert rpc.result("agents.get", {"agent": created["id"]}) == renamed  # the ID never changes
        assert rpc.result("agents.update", {"agent": created["id"], "config": {"model": "m"}})["config"] == {
            "model": "m"}

        assert rpc.result("agents.delete", {"agent": "helper"}) == {"id": created["id"], "deleted": True}
        for ref in (created["id"], "helper"):
            assert rpc.error("agents.get", {"agent": ref})["code"] == "not_found"
        assert rpc.result("agents.list")["items"] == []


def test_results_are_the_http_bodies(client: TestClient, acme: Tenant) -> None:
    with connect(client, acme.headers()) as rpc:
        created = rpc.result("agents.create", {"agent_key": "bot", "config": {"a": 1}})
        assert client.get(f"/v1/agents/{created['id']}", headers=acme.headers()).json() == created
        updated = rpc.result("agents.update", {"agent": "bot", "display_name": "Bot"})
        assert client.get("/v1/agents/bot", headers=acme.headers()).json() == updated
        assert rpc.result("agents.list")["items"] == client.get("/v1/agents", headers=acme.headers()).json()["items"]
        beat = rpc.result("agents.heartbeat", {"agent": "bot"})
        http_beat = client.post(f"/v1/agents/{created['id']}/heartbeat", headers=acme.headers()).json()
        assert beat.pop("checked_at") <= http_beat.pop("checked_at") and beat == http_beat


def test_heartbeat_reports_the_router_loop(client: TestClient, acme: Tenant) -> None:
    gateway = client.app.state.gateway  # type: ignore[attr-defined]
    with connect(client, acme.headers("member")) as rpc:
        client.post("/v1/agents", json={"agent_key": "bot"}, headers=acme.headers())
        loop = gateway.router.get(RequestContext(tenant_id=acme.scope.tenant_id), "bot")
        with loop.run():
            assert rpc.result("agents.heartbeat", {"agent": "bot"})["running"] is True
            assert rpc.result("agents.heartbeat", {"agent": loop.agent.id})["running"] is True
        assert rpc.result("agents.heartbeat", {"agent": "bot"})["running"] is False


def test_another_tenants_agent_is_the_http_404(client: TestClient, acme: Tenant, globex: Tenant) -> None:
    theirs = client.post("/v1/agents", json={"agent_key": "secret"}, headers=globex.headers()).json()
    with connect(client, acme.headers()) as rpc:
        for ref in (theirs["id"], "secret", format_id("agent")):
            expected = http_error(client.get(f"/v1/agents/{ref}", headers=acme.headers()))
            assert expected["status"] == 404 and expected["message"] == "agent not found"
            for method, extra in (("agents.get", {}), ("agents.heartbeat", {}), ("agents.delete", {}),
                                  ("agents.update", {"display_name": "x"})):
                assert rpc.error(method, {"agent": ref, **extra}) == expected, (method, ref)
    still = client.get(f"/v1/agents/{theirs['id']}", headers=globex.headers()).json()
    assert still["display_name"] == "secret"


@pytest.mark.parametrize("method", ["agents.get", "agents.update", "agents.delete", "agents.heartbeat"])
def test_a_team_id_where_an_agent_belongs_is_invalid_id(client: TestClient, acme: Tenant, method: str) -> None:
    expected = http_error(client.get(f"/v1/agents/{TEAM_ID}", headers=acme.headers()))
    with connect(client, acme.headers()) as rpc:
        error = rpc.error(method, {"agent": TEAM_ID})
    assert error == expected
    assert error["code"] == "invalid_id" and error["status"] == 422
    assert error["field"] == "agent" and error["value"] == TEAM_ID and error["expected"]


def test_a_value_that_is_neither_id_nor_key_is_invalid_agent_key(client: TestClient, acme: Tenant) -> None:
    with connect(client, acme.headers()) as rpc:
        error = rpc.error("agents.get", {"agent": "Not_A_Key"})
    assert error == http_error(client.get("/v1/agents/Not_A_Key", headers=acme.headers()))
    assert error["code"] == "invalid_agent_key" and error["field"] == "agent" and error["value"] == "Not_A_Key"


@pytest.mark.parametrize(("role", "method", "params"), [
    ("member", "agents.create", {"agent_key": "new"}),
    ("member", "agents.update", {"agent": "bot", "display_name": "x"}),
    ("operator", "agents.delete", {"agent": "bot"}),
])
def test_role_too_low_is_forbidden(client: TestClient, acme: Tenant, role: str, method: str,
                                   params: dict[str, Any]) -> None:
    client.post("/v1/agents", json={"agent_key": "bot"}, headers=acme.headers())
    with connect(client, acme.headers(role)) as rpc:
        error = rpc.error(method, params)
        assert error["code"] == "forbidden" and error["status"] == 403
        assert [a["display_name"] for a in rpc.result("agents.list")["items"]] == ["bot"]  # nothing changed


def test_params_are_validated_like_http_bodies_and_never_choose_the_tenant(client: TestClient, acme: Tenant,
                                                                          globex: Tenant) -> None:
    with connect(client, acme.headers()) as rpc:
        body = {"agent_key": "bot", "tenant_id": globex.scope.tenant_id}
        error = rpc.error("agents.create", body)
        assert error == http_error(client.post("/v1/agents", json=body, headers=acme.headers()))
        assert error["code"] == "invalid_input" and error["field"] == "tenant_id" and error["status"] == 422
        bad_key = rpc.error("agents.create", {"agent_key": "Bad Key"})
        assert bad_key == http_error(client.post("/v1/agents", json={"agent_key": "Bad Key"}, headers=acme.headers()))
        assert bad_key["field"] == "agent_key" and bad_key["value"] == "Bad Key"
        assert rpc.error("subscribe", {"tenant_id": globex.scope.tenant_id})["field"] == "tenant_id"
        assert rpc.error("agents.get", {"agent": 5})["field"] == "agent"
        assert rpc.error("agents.get", {})["field"] == "agent"
        taken = rpc.result("agents.create", {"agent_key": "bot"})
        assert rpc.error("agents.create", {"agent_key": "bot"})["code"] == "conflict"
        assert rpc.result("agents.list")["items"] == [taken]


@pytest.mark.parametrize("body", [
    {"agent_key": "bot", "display_name": 5},                       # a number: echoed as the value
    {"agent_key": "bot", "display_name": "x" * 201},               # too long
    {"agent_key": "bot", "config": {"tools": ["ok", "bad\x00"]}},  # deep inside a document
    {"agent_key": "bot", "config": []},                            # not an object: no value echoed
])
def test_a_bad_body_gets_the_same_error_from_both_apis(client: TestClient, acme: Tenant,
                                                      body: dict[str, Any]) -> None:
    """One shaper builds the 422 for an HTTP body and for WebSocket params: same code, field, value, expected."""
    with connect(client, acme.headers()) as rpc:
        error = rpc.error("agents.create", body)
        assert error == http_error(client.post("/v1/agents", json=body, headers=acme.headers()))
        assert error["status"] == 422 and error["field"] in ("display_name", "config")
        assert rpc.result("agents.list")["items"] == []  # nothing written


def test_unknown_method(client: TestClient, acme: Tenant) -> None:
    with connect(client, acme.headers()) as rpc:
        error = rpc.error("agents.explode")
        assert error["code"] == "method_not_found" and error["status"] == 404
        assert error["field"] == "method" and error["value"] == "agents.explode" and "agents.get" in error["expected"]


@pytest.mark.parametrize(("raw", "reply_id", "field"), [
    ("not json", None, None),
    ("[1, 2]", None, None),
    (json.dumps({"id": True, "method": "agents.list"}), None, "id"),
    (json.dumps({"id": 5, "method": 3}), 5, "method"),
    (json.dumps({"id": 5}), 5, "method"),
    (json.dumps({"id": "x", "method": "agents.list", "params": [1]}), "x", "params"),
    (json.dumps({"id": 6, "method": "agents.list", "tenant": "globex"}), 6, "tenant"),
    (b'{"id": 1, "method": "agents.list"}', None, None),
    ("x" * (70 * 1024), None, None),
])
def test_malformed_messages_are_invalid_request_and_the_connection_stays(client: TestClient, acme: Tenant,
                                                                         raw: str | bytes, reply_id: Any,
                                                                         field: str | None) -> None:
    with connect(client, acme.headers()) as rpc:
        error = rpc.send(raw, reply_id)["error"]
        assert error["code"] == "invalid_request" and error["status"] == 400
        assert error.get("field") == field
        assert rpc.result("agents.list")["items"] == []


def test_jsonrpc_member_and_missing_params_are_fine(client: TestClient, acme: Tenant) -> None:
    with connect(client, acme.headers()) as rpc:
        empty = {"items": [], "next_cursor": None}
        assert rpc.send({"jsonrpc": "2.0", "id": "q", "method": "agents.list"}, "q") == {"id": "q", "result": empty}
        assert rpc.send({"method": "agents.list", "params": None}, None) == {"id": None, "result": empty}


# -- cron ----------------------------------------------------------------------------------------------------------
def test_cron_methods_answer_the_http_bodies_and_keep_the_http_rules(client: TestClient, acme: Tenant,
                                                                   globex: Tenant) -> None:
    assert client.post("/v1/agents", json={"agent_key": "bot"}, headers=acme.headers()).status_code == 201
    job = client.post("/v1/agents/bot/cron-jobs", json={"schedule": "0 9 * * *", "payload": {"message": "hi"}},
                      headers=acme.headers()).json()
    with connect(client, acme.headers()) as rpc:
        listed = rpc.result("cron.list", {"agent": "bot"})
        assert listed == client.get("/v1/agents/bot/cron-jobs", headers=acme.headers()).json()
        assert listed["items"][0]["next_run_at"] == job["next_run_at"]
        paused = rpc.result("cron.update", {"job_id": job["id"], "enabled": False})
        assert paused == client.get(f"/v1/cron-jobs/{job['id']}", headers=acme.headers()).json()
        assert paused["enabled"] is False and rpc.result("cron.get", {"job_id": job["id"]}) == paused
        ran = rpc.result("cron.run", {"job_id": job["id"]})  # a paused job still runs now
        assert ran["outcome"] == "ok" and ran["cause"] == "manual"
        runs = rpc.result("cron.runs", {"job_id": job["id"]})
        assert runs == client.get(f"/v1/cron-jobs/{job['id']}/runs", headers=acme.headers()).json()
        assert [r["outcome"] for r in runs["items"]] == ["ok"]
        assert rpc.result("cron.update", {"job_id": job["id"], "enabled": True})["enabled"] is True
        bad = rpc.call("cron.get", {"job_id": "cron-job-nope"})["error"]
        assert bad["code"] == "invalid_id" and bad["value"] == "cron-job-nope"
        unknown = rpc.call("cron.update", {"job_id": job["id"], "enabled": "yes"})["error"]
        assert unknown["code"] == "invalid_input" and unknown["field"] == "enabled"
    with connect(client, acme.headers("member")) as member:
        refused = member.call("cron.run", {"job_id": job["id"]})["error"]
        assert refused["status"] == 403  # running a job is an operator's, on both APIs
    with connect(client, globex.headers()) as theirs:
        for method in ("cron.get", "cron.runs", "cron.run"):
            assert theirs.call(method, {"job_id": job["id"]})["error"]["status"] == 404  # never another org's


# -- events --------------------------------------------------------------------------------------------------------
def subscribed(rpc: Rpc, slug: str) -> Rpc:
    assert rpc.result("subscribe") == {"subscribed": True, "tenant_slug": slug, "events": [
        "agent.created", "agent.updated", "agent.renamed", "agent.deleted",
        "agent.run.started", "agent.tool.called", "agent.run.delta", "agent.replied", "agent.run.finished",
        "agent.cron.fired", "agent.cron.refused", "agent.handoff.started", "agent.handoff.refused"]}
    return rpc


def test_a_cron_fire_reaches_its_tenant_s_subscribers_by_agent_key_and_is_audited(
        db: Database, client: TestClient, acme: Tenant, globex: Tenant) -> None:
    with connect(client, acme.headers()) as a, connect(client, globex.headers()) as b:
        subscribed(a, "acme")
        subscribed(b, "globex")
        for tenant in (acme, globex):  # the same agent key in both: only acme's job fires
            assert client.post("/v1/agents", json={"agent_key": "bot"}, headers=tenant.headers()).status_code == 201
        job = client.post("/v1/agents/bot/cron-jobs", json={"schedule": "@daily", "payload": {"message": "hi"}},
                          headers=acme.headers()).json()
        fired = client.post(f"/v1/cron-jobs/{job['id']}/run", headers=acme.headers()).json()
        assert fired["outcome"] == "ok", fired
        told = [e for e in a.sync(client, acme.headers()) if e["event"] == "agent.cron.fired"]
        assert told == [{"event": "agent.cron.fired",
                         "agent": {"id": job["agent_id"], "agent_key": "bot", "tenant_slug": "acme"},
                         "run": {"job_id": job["id"], "due_at": fired["due_at"], "outcome": "ok"}}]
        assert not [e for e in b.sync(client, globex.headers()) if e["event"].startswith("agent.cron")]
        with db.transaction(write=False) as tx:
            (entry,) = audit.list_audit(tx, acme.scope, action="cron.fired")
            assert audit.list_audit(tx, globex.scope, action="cron.fired") == []
        assert (entry.target_id, entry.actor_id) == (job["id"], job["created_by"])


def test_agent_events_reach_the_same_tenant_only(client: TestClient, acme: Tenant, globex: Tenant) -> None:
    with connect(client, acme.headers()) as a, connect(client, globex.headers()) as b:
        subscribed(a, "acme")
        subscribed(b, "globex")
        bot = a.result("agents.create", {"agent_key": "bot"})  # through the WebSocket
        # through HTTP: rename, update, delete (the same key exists in globex too: it must not matter)
        theirs = client.post("/v1/agents", json={"agent_key": "bot"}, headers=globex.headers()).json()
        client.patch("/v1/agents/bot", json={"agent_key": "helper"}, headers=acme.headers())
        client.patch(f"/v1/agents/{bot['id']}", json={"display_name": "Helper"}, headers=acme.headers())
        client.delete("/v1/agents/helper", headers=acme.headers())

        acme_agent = {"id": bot["id"], "tenant_slug": "acme"}
        assert a.sync(client, acme.headers()) == [
            {"event": "agent.created", "agent": {**acme_agent, "agent_key": "bot"}},
            {"event": "agent.renamed", "agent": {**acme_agent, "agent_key": "helper", "previous_key": "bot"}},
            {"event": "agent.updated", "agent": {**acme_agent, "agent_key": "helper"}},
            {"event": "agent.updated", "agent": {**acme_agent, "agent_key": "helper"}},
            {"event": "agent.deleted", "agent": {**acme_agent, "agent_key": "helper"}},
        ]

        b.result("agents.update", {"agent": "bot", "display_name": "Theirs"})
        theirs_agent = {"id": theirs["id"], "agent_key": "bot", "tenant_slug": "globex"}
        assert b.sync(client, globex.headers()) == [{"event": "agent.created", "agent": theirs_agent},  # over HTTP
                                                    {"event": "agent.updated", "agent": theirs_agent}]
        assert all(e["agent"]["tenant_slug"] == "acme" for e in a.sync(client, acme.headers()))
        assert len(a.events) == 5


def test_events_are_pushed_to_an_idle_connection(client: TestClient, acme: Tenant) -> None:
    with connect(client, acme.headers("member")) as rpc:
        subscribed(rpc, "acme")
        created = client.post("/v1/agents", json={"agent_key": "bot"}, headers=acme.headers()).json()
        client.patch("/v1/agents/bot", json={"display_name": "B"}, headers=acme.headers())
        identity = {"id": created["id"], "agent_key": "bot", "tenant_slug": "acme"}
        assert rpc.ws.receive_json() == {"event": "agent.created", "agent": identity}
        assert rpc.ws.receive_json() == {"event": "agent.updated", "agent": identity}


def test_event_identity_is_the_display_identity(client: TestClient, acme: Tenant) -> None:
    with connect(client, acme.headers()) as rpc:
        subscribed(rpc, "acme")
        created = rpc.result("agents.create", {"agent_key": "bot"})
        rpc.result("agents.update", {"agent": created["id"], "agent_key": "bot-2"})
        rpc.result("agents.delete", {"agent": created["id"]})
        rpc.wait_events(4)
    assert [e["event"] for e in rpc.events] == ["agent.created", "agent.renamed", "agent.updated", "agent.deleted"]
    for event in rpc.events:
        agent = event["agent"]
        assert agent["tenant_slug"] == "acme" and agent["id"] == created["id"]
        assert agent["agent_key"] in ("bot", "bot-2") and not looks_like_an_id(agent["agent_key"])


def test_no_events_before_subscribe_after_unsubscribe_or_for_a_rolled_back_change(db: Database, client: TestClient,
                                                                                   acme: Tenant) -> None:
    with connect(client, acme.headers()) as rpc:
        created = rpc.result("agents.create", {"agent_key": "bot"})
        subscribed(rpc, "acme")
        with pytest.raises(RuntimeError), db.transaction() as tx:
            agents.update_agent(tx, acme.scope, created["id"], display_name="never")
            raise RuntimeError("roll back")
        assert rpc.sync(client, acme.headers()) == []
        assert rpc.result("unsubscribe") == {"subscribed": False}
        with connect(client, acme.headers()) as witness:
            subscribed(witness, "acme")
            rpc.result("agents.update", {"agent": "bot", "display_name": "x"})
            # once a subscriber has it, the feed has delivered it to everyone subscribed at the time
            assert [e["event"] for e in witness.sync(client, acme.headers())] == ["agent.updated"]
        assert rpc.result("subscribe")["subscribed"] is True
        assert rpc.sync(client, acme.headers()) == []


class _Inbox(Subscriber):
    """A subscriber that keeps what it is given, in the calling thread (its event loop is never used)."""

    def __init__(self) -> None:
        loop = asyncio.new_event_loop()
        super().__init__(loop)
        loop.close()
        self.received: list[dict[str, Any]] = []

    def deliver(self, message: dict[str, Any]) -> None:
        self.received.append(message)


@contextmanager
def _feed_held_at_the_first_agent_change(db: Database) -> Iterator[tuple[bool, threading.Event, threading.Event]]:
    """The feed listening, and (where a listener thread delivers, PostgreSQL) held at the first agent change
    until ``release`` is set: what a busy server does.  Yields ``(late, held, release)``; ``late`` is False
    where the committing thread delivers (SQLite), which cannot be late and is never held."""
    held, release = threading.Event(), threading.Event()

    def stall(change: Change) -> None:  # runs before the broadcaster
        if change.kind == "agent" and not held.is_set():
            held.set()
            release.wait(10)

    db.changes.start_listening(db.conninfo)
    late = not db.changes.delivers_in_process
    if late:  # first in the feed's order of committed-change handlers
        db.changes._committed.insert(0, lambda: stall)
    try:
        assert db.changes.wait_listening(10)
        yield late, held, release
    finally:
        release.set()
        db.changes.stop_listening()


def _until(condition: Callable[[], object], seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)


def test_a_change_committed_before_subscribe_is_never_delivered_even_when_the_feed_is_late(db: Database,
                                                                                             acme: Tenant) -> None:
    """The race a busy server loses without a starting point: the change commits, the client subscribes, and
    only then does the listener (PostgreSQL) hand the change on.  It must not reach the new subscriber; the
    next change must."""
    broadcaster, inbox = broadcaster_for(db), _Inbox()
    with _feed_held_at_the_first_agent_change(db) as (late, held, release):
        with db.transaction() as tx:
            before = agents.create_agent(tx, acme.scope, agent_key="before")
        assert not late or held.wait(10)  # the listener holds "before"
        broadcaster.subscribe(acme.scope.tenant_id, "acme", inbox)
        release.set()
        with db.transaction() as tx:
            after = agents.create_agent(tx, acme.scope, agent_key="after")
        _until(lambda: inbox.received)
        assert [(m["event"], m["agent"]["id"]) for m in inbox.received] == [("agent.created", after.id)]
        assert before.id not in json.dumps(inbox.received)
        assert broadcaster.subscriber_count(acme.scope.tenant_id) == 1
        broadcaster.unsubscribe(inbox)


def test_a_subscriber_waiting_for_its_starting_point_is_told_to_resync_when_the_feed_is_lost(
        db: Database, acme: Tenant) -> None:
    broadcaster, inbox = broadcaster_for(db), _Inbox()
    with _feed_held_at_the_first_agent_change(db) as (late, held, release):
        with db.transaction() as tx:
            agents.create_agent(tx, acme.scope, agent_key="before")
        assert not late or held.wait(10)
        broadcaster.subscribe(acme.scope.tenant_id, "acme", inbox)  # its marker is stuck behind "before"
        db.changes.lost("the listening connection was lost")  # the marker will never come back
        assert broadcaster.subscriber_count(acme.scope.tenant_id) == 1
        assert inbox.received == [{"event": "events.resync", "reason": "the listening connection was lost"}]
        release.set()
        broadcaster.unsubscribe(inbox)


def test_where_the_committing_thread_delivers_a_subscription_is_active_at_once_and_writes_nothing(
        db: Database, acme: Tenant) -> None:
    assert db.changes.delivers_in_process  # no listener started: this process delivers its own changes
    inbox = _Inbox()
    broadcaster_for(db).subscribe(acme.scope.tenant_id, "acme", inbox)
    assert broadcaster_for(db).subscriber_count(acme.scope.tenant_id) == 1
    with db.transaction(write=False) as tx:
        assert tx.scalar("SELECT count(*) FROM change_log") == 0
    with db.transaction() as tx:
        agents.create_agent(tx, acme.scope, agent_key="bot")
    assert [m["event"] for m in inbox.received] == ["agent.created"]


def test_a_signed_context_connection_gets_events_of_its_tenant(client: TestClient, acme: Tenant) -> None:
    with connect(client, acme.headers()) as rpc:
        token = rpc.result("context.sign")["token"]
    with connect(client, {"Authorization": f"Bearer {token}"}) as rpc:
        subscribed(rpc, "acme")
        client.post("/v1/agents", json={"agent_key": "bot"}, headers=acme.headers())
        client.patch("/v1/agents/bot", json={"display_name": "B"}, headers=acme.headers())
        assert rpc.ws.receive_json()["agent"] == {"id": client.get("/v1/agents/bot", headers=acme.headers()).json()[
            "id"], "agent_key": "bot", "tenant_slug": "acme"}


# -- units -----------------------------------------------------------------------------------------------------------
def test_an_agent_event_needs_the_key_and_the_slug_never_ids() -> None:
    agent_id = AgentId(format_id("agent"))
    event = AgentEvent("agent.updated", agent_id, AgentKey("bot"), TenantSlug("acme"))
    assert event.message() == {"event": "agent.updated", "agent": {"id": agent_id, "agent_key": "bot",
                                                                   "tenant_slug": "acme"}}
    with pytest.raises(InvalidAgentKeyError):
        AgentEvent("agent.updated", agent_id, AgentKey(agent_id), TenantSlug("acme"))
    with pytest.raises(InvalidTenantSlugError):
        AgentEvent("agent.updated", agent_id, AgentKey("bot"), TenantSlug(format_id("org")))
    with pytest.raises(ValueError, match="unknown agent event"):
        AgentEvent("agent.exploded", agent_id, AgentKey("bot"), TenantSlug("acme"))


def test_a_subscriber_that_falls_behind_is_told_how_many_events_it_lost() -> None:
    async def scenario() -> list[dict[str, Any]]:
        subscriber = Subscriber(asyncio.get_running_loop(), limit=2)
        for n in range(5):
            subscriber.deliver({"event": "agent.updated", "n": n})
        await asyncio.wait_for(subscriber.wait(), 1)
        return subscriber.take()

    assert asyncio.run(scenario()) == [{"event": "agent.updated", "n": 0}, {"event": "agent.updated", "n": 1},
                                       {"event": "events.dropped", "count": 3}]
