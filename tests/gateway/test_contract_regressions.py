"""Each input that once made the API break its contract, case by case, on both engines: no 500, the right status,
the error naming the field the caller sent, and what HTTP requires of a 405.

Cursors and signed contexts with characters outside ASCII (the signature check compared text), JSON numbers that
are not finite (Python's reader takes ``NaN`` and ``1e400``), a message of white space only (the runtime's rule
surfaced as a 500), a 405 without ``Allow``, the vault download declaring one media type and sending another, and
errors naming a repository's parameter instead of the request's field.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st

from agentfy.gateway.auth import SIGNED_CONTEXT_PREFIX
from agentfy.identity import Scope
from agentfy.runtime.inbound import VISIBLE_TEXT_PATTERN, has_visible_text
from agentfy.store.db import Database
from agentfy.store.inputs import non_finite_number
from agentfy.store.repos import api_keys, orgs
from tests.helpers.tenants import Tenant

NOT_ASCII_CURSORS = ["x.\u00e9", "\u00e9.\u00e9", "e30.\u4e2d\u6587", "x.\U0001f600", "\u00e9"]
NOT_FINITE = ["NaN", "Infinity", "-Infinity", "1e400", "-1e400", "1E+999", "1" * 400 + ".0"]


@pytest.fixture
def person(db: Database, acme: Tenant) -> dict[str, str]:
    """An owner key that acts as a person (the chat operations need one)."""
    with db.transaction() as tx:
        user = orgs.create_user(tx, display_name="Ann")
        orgs.add_member(tx, acme.scope, user.id, "owner")
        key = api_keys.create_api_key(tx, Scope(acme.scope.tenant_id), name="ann", role="owner", user_id=user.id).key
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def world(client: TestClient, acme: Tenant) -> dict[str, str]:
    """One of each thing a list's path names, so every list operation can be reached."""
    headers = acme.headers()
    agent = client.post("/v1/agents", json={"agent_key": "bot"}, headers=headers).json()["id"]
    team = client.post("/v1/teams", json={"name": "ops"}, headers=headers).json()["id"]
    session = client.post("/v1/sessions", json={"agent": agent, "session_key": "s1", "user_id": "u1"},
                          headers=headers)
    assert session.status_code == 201, session.text
    job = client.post(f"/v1/agents/{agent}/cron-jobs", json={"schedule": "@daily"}, headers=headers)
    assert job.status_code == 201, job.text
    task = client.post(f"/v1/teams/{team}/tasks", json={"title": "t"}, headers=headers)
    assert task.status_code == 201, task.text
    return {"agent": agent, "team_id": team, "session_key": "s1", "job_id": job.json()["id"],
            "task_id": task.json()["id"]}


def list_operations(client: TestClient) -> Iterator[tuple[str, str]]:
    """``(operation ID, path template)`` of every operation the document says takes a ``cursor``."""
    for path, operations in client.get("/openapi.json").json()["paths"].items():
        for method, operation in operations.items():
            if method == "get" and any(p["name"] == "cursor" for p in operation.get("parameters", [])):
                yield operation["operationId"], path


def assert_error(response: Any, status: int, code: str, field: str | None = None) -> dict[str, Any]:
    assert response.status_code == status, (response.status_code, response.text[:300])
    error: dict[str, Any] = response.json()["error"]
    assert error["code"] == code, error
    if field is not None:
        assert error.get("field") == field, error
    return error


# -- cursors and signed contexts ---------------------------------------------------------------------------------
@pytest.mark.parametrize("cursor", NOT_ASCII_CURSORS)
def test_every_list_refuses_a_cursor_outside_ascii_as_invalid_cursor(client: TestClient, person: dict[str, str],
                                                                    platform_admin: dict[str, str],
                                                                    world: dict[str, str], cursor: str) -> None:
    seen = 0
    for operation, template in list_operations(client):
        path = template.format(**world)
        headers = platform_admin if operation == "orgs.list" else person
        answer = client.get(path, params={"cursor": cursor}, headers=headers)
        assert_error(answer, 422, "invalid_cursor", "cursor")
        seen += 1
    assert seen >= 15  # every list of the API


def test_a_websocket_list_refuses_a_cursor_outside_ascii(client: TestClient, acme: Tenant) -> None:
    with client.websocket_connect("/v1/ws", headers=acme.headers()) as ws:
        ws.send_json({"id": 1, "method": "agents.list", "params": {"cursor": "x.\u00e9"}})
        reply = ws.receive_json()
    assert reply["id"] == 1 and reply["error"]["code"] == "invalid_cursor" and reply["error"]["status"] == 422


@pytest.mark.parametrize("token", [SIGNED_CONTEXT_PREFIX + "x.\u00e9", SIGNED_CONTEXT_PREFIX + "\u00e9.\u00e9",
                                   SIGNED_CONTEXT_PREFIX + "e30.\U0001f600"])
def test_a_signed_context_outside_ascii_is_unauthorized(client: TestClient, token: str) -> None:
    with client.websocket_connect("/v1/ws") as ws:
        ws.send_json({"id": 1, "method": "auth", "params": {"token": token}})
        reply = ws.receive_json()
    assert reply["id"] == 1 and reply["error"]["code"] == "unauthorized" and reply["error"]["status"] == 401


def test_a_bearer_signed_context_outside_ascii_is_unauthorized(client: TestClient) -> None:
    # HTTP headers are latin-1: the widest a bearer token can be over HTTP.
    bearer = f"Bearer {SIGNED_CONTEXT_PREFIX}x.\u00e9".encode("latin-1")
    answer = client.get("/v1/agents", headers={"Authorization": bearer})
    assert_error(answer, 401, "unauthorized")


# -- JSON numbers that are not finite ---------------------------------------------------------------------------
@pytest.mark.parametrize("literal", NOT_FINITE)
def test_a_json_number_that_is_not_finite_is_422_and_writes_nothing(client: TestClient, acme: Tenant,
                                                                   world: dict[str, str], literal: str) -> None:
    headers = {**acme.headers(), "content-type": "application/json"}
    agent = world["agent"]
    for method, path, body in (
            ("PATCH", f"/v1/agents/{agent}", '{"display_name": %s}'),
            ("PATCH", f"/v1/agents/{agent}", '{"config": {"temperature": %s}}'),
            ("POST", "/v1/knowledge/ingest", '{"agent": "bot", "entities": [{"name": "x", "properties": {"w": %s}}]}'),
            ("POST", "/v1/org/members", '{"display_name": "Bo", "role": %s}'),
            ("POST", "/v1/org/members", '[%s]')):
        answer = client.request(method, path, content=body % literal, headers=headers)
        error = assert_error(answer, 422, "invalid_input", "body")
        assert str(error["value"]).startswith(literal[:200]) and "not finite" in error["message"], error
    unchanged = client.get(f"/v1/agents/{agent}", headers=acme.headers()).json()
    assert unchanged["display_name"] == "bot" and unchanged["config"] == {}
    members = client.get("/v1/org/members", headers=acme.headers()).json()["items"]
    assert [m for m in members if m.get("display_name") == "Bo"] == []


def test_a_websocket_message_with_a_number_that_is_not_finite_is_refused(client: TestClient, acme: Tenant) -> None:
    with client.websocket_connect("/v1/ws", headers=acme.headers()) as ws:
        ws.send_text('{"id": 1, "method": "agents.create", "params": {"agent_key": "bot", "config": {"t": NaN}}}')
        reply = ws.receive_json()
        assert reply["error"]["code"] == "invalid_request" and "not finite" in reply["error"]["message"]
        ws.send_json({"id": 2, "method": "agents.list"})
        assert ws.receive_json()["result"]["items"] == []


def test_finite_numbers_are_not_mistaken_for_infinite_ones(client: TestClient, acme: Tenant,
                                                          world: dict[str, str]) -> None:
    body = {"config": {"big": 1.7e308, "small": 1e-400, "text": "NaN Infinity 1e400"}}
    answer = client.patch(f"/v1/agents/{world['agent']}", json=body, headers=acme.headers())
    assert answer.status_code == 200, answer.text
    assert answer.json()["config"]["text"] == "NaN Infinity 1e400"


@given(st.recursive(st.none() | st.booleans() | st.floats(allow_nan=True, allow_infinity=True) | st.integers()
                    | st.text(max_size=8), lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=12))
def test_non_finite_number_finds_exactly_the_numbers_json_cannot_carry(document: Any) -> None:
    def finite(value: Any) -> bool:
        if isinstance(value, float):
            return math.isfinite(value)
        if isinstance(value, list):
            return all(finite(item) for item in value)
        if isinstance(value, dict):
            return all(finite(item) for item in value.values())
        return True

    text = json.dumps(document, allow_nan=True)
    assert (non_finite_number(text) is None) == finite(document)
    assert non_finite_number(text.encode()) == non_finite_number(text)


# -- the message rule --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text", [" ", "\u001e", "\t\n\r\u000b\u000c", "\u0085\u00a0\u3000", "\u2028\u2029 \u001c"])
def test_a_message_of_white_space_only_is_422_naming_text(client: TestClient, person: dict[str, str],
                                                           world: dict[str, str], text: str) -> None:
    answer = client.post(f"/v1/agents/{world['agent']}/messages", json={"text": text}, headers=person)
    error = assert_error(answer, 422, "invalid_input", "text")
    assert "empty" in error["message"]
    with client.websocket_connect("/v1/ws", headers=person) as ws:
        ws.send_json({"id": 1, "method": "agents.send", "params": {"agent": "bot", "text": text}})
        reply = ws.receive_json()
    assert reply["error"]["code"] == "invalid_input" and reply["error"]["field"] == "text", reply


def test_the_document_states_the_message_rule(client: TestClient) -> None:
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    # The HTTP body (MessageBody: the message and whether to stream) and the WebSocket's share the rule.
    assert schemas["MessageBody"]["properties"]["text"]["pattern"] == VISIBLE_TEXT_PATTERN


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=6)
       | st.text(alphabet=" \t\n\r\u000b\u000c\u001c\u001d\u001e\u001f\u0085\u00a0\u1680\u2000\u200a\u2028\u2029"
                 "\u202f\u205f\u3000\ufeff\u200bx", max_size=6))
def test_the_stated_pattern_is_the_runtime_rule(text: str) -> None:
    assert has_visible_text(text) == bool(text.strip())
    assert (re.search(VISIBLE_TEXT_PATTERN, text) is not None) == has_visible_text(text)


def test_the_pattern_spells_out_every_white_space_character() -> None:
    spaces = "".join(chr(c) for c in range(0x110000) if chr(c).isspace())
    assert not has_visible_text(spaces) and all(has_visible_text(f" {chr(c)} ") for c in range(0x3001)
                                                if not chr(c).isspace())


# -- 405 ---------------------------------------------------------------------------------------------------------
def test_every_405_says_which_methods_the_path_has(client: TestClient, acme: Tenant, world: dict[str, str]) -> None:
    values = {**world, "ref": world["agent"], "document_id": "vault-document-x", "job_id": "cron-job-x"}
    checked = 0
    for template, operations in client.get("/openapi.json").json()["paths"].items():
        path = re.sub(r"\{([^}]+)\}", lambda m: values.get(m.group(1), "x"), template)
        documented = {method.upper() for method in operations}
        for method in {"GET", "POST", "PUT", "PATCH", "DELETE"} - documented:
            answer = client.request(method, path, headers=acme.headers())
            if answer.status_code != 405:
                continue  # another route shares the path's shape (a key that takes the rest of the path)
            assert_error(answer, 405, "method_not_allowed")
            allowed = set(answer.headers["allow"].split(", "))
            assert documented <= allowed, (method, template, allowed)
            checked += 1
    assert checked >= 50
    answer = client.delete("/v1/agents", headers=acme.headers())
    assert answer.status_code == 405 and answer.headers["allow"] == "GET, POST"


# -- the vault download ------------------------------------------------------------------------------------------
def test_the_vault_download_declares_what_it_sends(client: TestClient, acme: Tenant, world: dict[str, str]) -> None:
    uploaded = client.post("/v1/vault/documents", data={"agent_id": world["agent"], "path": "a.md"},
                           files={"file": ("a.md", b"# hi", "text/markdown")}, headers=acme.headers())
    assert uploaded.status_code == 201, uploaded.text
    document_id = uploaded.json()["documents"][0]["id"]
    download = client.get(f"/v1/vault/documents/{document_id}", headers=acme.headers())
    assert download.status_code == 200 and download.headers["content-type"] == "text/markdown"
    document = client.get("/openapi.json").json()
    declared = document["paths"]["/v1/vault/documents/{document_id}"]["get"]["responses"]["200"]["content"]
    assert list(declared) == ["*/*"]


# -- errors name the field the caller sent -----------------------------------------------------------------------
def test_a_session_scope_with_a_control_character_names_user_id(client: TestClient, acme: Tenant,
                                                                 world: dict[str, str]) -> None:
    answer = client.post("/v1/sessions", json={"agent": "bot", "session_key": "s2", "user_id": "\u0001"},
                         headers=acme.headers())
    error = assert_error(answer, 422, "invalid_input", "user_id")
    assert "user_id_scope" not in error["message"]
    assert client.get("/v1/sessions/s2", headers=acme.headers()).status_code == 404


def test_a_self_link_names_target(client: TestClient, acme: Tenant, world: dict[str, str]) -> None:
    answer = client.post(f"/v1/agents/{world['agent']}/links", json={"target": "bot"}, headers=acme.headers())
    error = assert_error(answer, 422, "invalid_input", "target")
    assert "target_agent_id" not in error["message"]
    assert client.get(f"/v1/agents/{world['agent']}/links", headers=acme.headers()).json()["items"] == []


@pytest.mark.parametrize("field", ["file", "files"])
def test_a_file_sent_as_a_text_part_is_refused_in_the_projects_words(client: TestClient, acme: Tenant,
                                                                      world: dict[str, str], field: str) -> None:
    path_field = "path" if field == "file" else "paths"
    body = (f'--xx\r\nContent-Disposition: form-data; name="agent_id"\r\n\r\nbot\r\n'
            f'--xx\r\nContent-Disposition: form-data; name="{path_field}"\r\n\r\na.txt\r\n'
            f'--xx\r\nContent-Disposition: form-data; name="{field}"\r\n\r\nhello\r\n--xx--\r\n').encode()
    answer = client.post("/v1/vault/documents", content=body, headers={
        **acme.headers(), "content-type": "multipart/form-data; boundary=xx"})
    error = assert_error(answer, 422, "invalid_input")
    assert error["field"] == ("file" if field == "file" else "files[0]"), error
    assert "must be a file part" in error["message"], error
    assert client.get(f"/v1/agents/{world['agent']}/vault", headers=acme.headers()).json()["items"] == []
