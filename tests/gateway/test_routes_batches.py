"""The batch routes under the fail-fast contract (every row is validated before the first write): memory-document
upsert, knowledge-graph ingest and vault upload.  One bad row — first, middle or last — fails the whole
request naming the row and the field, and nothing is written (counted in the tables themselves).  Both
engines."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from agentfy.ids import format_id
from agentfy.store.db import Database
from tests.helpers.tenants import Tenant
from tests.store.helpers import count

TEAM_ID = "team-calm-rivers-k8m4p2d7n9x3"
LEGACY_UUID = "0193a5b0-7000-7000-8000-000000000001"
MALFORMED_AGENT_ID = "agent-calm-rivers-K8M4P2D7N9X3"  # upper case: neither an ID nor a key
POSITIONS = [0, 1, 2]  # first, middle, last of three rows


def agent(client: TestClient, tenant: Tenant, key: str = "bot") -> dict[str, Any]:
    response = client.post("/v1/agents", json={"agent_key": key}, headers=tenant.headers())
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def names(field: str, batch: str, index: int, name: str) -> bool:
    """Whether an error's field names ``batch[index].name`` (``entities[1].name``, or pydantic's
    ``entities.1.name`` for a field the schema refuses)."""
    return field in (f"{batch}[{index}].{name}", f"{batch}.{index}.{name}")


def error_of(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    assert "select" not in response.text.lower() and "insert" not in response.text.lower()
    return error


# -- memory documents --------------------------------------------------------------------------------------
def upsert(client: TestClient, tenant: Tenant, ref: str, documents: list[dict[str, Any]],
           role: str = "operator") -> Any:
    return client.post(f"/v1/agents/{ref}/memory/documents:batch-upsert", json={"documents": documents},
                       headers=tenant.headers(role))


def test_memory_batch_upsert_returns_ids_in_order_and_upserts_by_scope_and_path(client: TestClient,
                                                                                acme: Tenant) -> None:
    bot = agent(client, acme)
    docs: list[dict[str, Any]] = [{"path": "MEMORY.md", "content": "likes tea"},
            {"path": "MEMORY.md", "content": "group notes", "user_id": "group:telegram:1", "metadata": {"v": 1}},
            {"path": "notes/a.md", "content": ""}]
    first = upsert(client, acme, "bot", docs)
    assert first.status_code == 200, first.text
    ids = first.json()["ids"]
    assert len(set(ids)) == 3 and all(i.startswith("memory-document-") for i in ids)
    again = upsert(client, acme, bot["id"], [{"path": "notes/a.md", "content": "now filled"}, docs[0]])
    assert again.json()["ids"] == [ids[2], ids[0]]  # existing documents keep their IDs
    listed = client.get("/v1/agents/bot/memory/documents", headers=acme.headers("operator")).json()["items"]
    assert {(d["user_id"], d["path"], d["content"]) for d in listed} == {
        ("", "MEMORY.md", "likes tea"), ("group:telegram:1", "MEMORY.md", "group notes"),
        ("", "notes/a.md", "now filled")}
    scoped = client.get("/v1/agents/bot/memory/documents", params={"user_id": "group:telegram:1"},
                        headers=acme.headers("operator")).json()["items"]
    assert [(d["id"], d["metadata"]) for d in scoped] == [(ids[1], {"v": 1})]
    # a member key acting as nobody has no scope of its own: it sees none of them, and may not name one
    assert client.get("/v1/agents/bot/memory/documents", headers=acme.headers("member")).json()["items"] == []
    assert client.get("/v1/agents/bot/memory/documents", params={"user_id": "group:telegram:1"},
                      headers=acme.headers("member")).status_code == 403


MEMORY_BAD_ROWS = [
    pytest.param({"path": "", "content": "x"}, 422, "path", id="empty-path"),
    pytest.param({"path": "a\x00b", "content": "x"}, 422, "path", id="nul-in-path"),
    pytest.param({"path": "p", "content": "x", "user_id": "u" * 201}, 422, "user_id", id="long-scope"),
    pytest.param({"path": "p"}, 422, "content", id="missing-content"),
    pytest.param({"content": "x"}, 422, "path", id="missing-path"),
    pytest.param({"path": "p", "content": 5}, 422, "content", id="wrong-type"),
    pytest.param({"path": "p", "content": "x", "agent_id": format_id("agent")}, 422, "agent_id", id="unknown-field"),
]


@pytest.mark.parametrize("position", POSITIONS)
@pytest.mark.parametrize(("bad", "status", "field"), MEMORY_BAD_ROWS)
def test_memory_batch_one_bad_row_fails_everything(db: Database, client: TestClient, acme: Tenant, position: int,
                                                   bad: dict[str, Any], status: int, field: str) -> None:
    agent(client, acme)
    rows: list[dict[str, Any]] = [{"path": f"good-{i}.md", "content": "ok"} for i in range(2)]
    rows.insert(position, bad)
    error = error_of(upsert(client, acme, "bot", rows), status)
    assert names(error["field"], "documents", position, field), error
    assert count(db, "memory_documents") == 0


def test_memory_batch_refuses_the_same_path_twice(db: Database, client: TestClient, acme: Tenant) -> None:
    agent(client, acme)
    rows = [{"path": "a", "content": "1"}, {"path": "b", "content": "2"}, {"path": "a", "content": "3"}]
    error = error_of(upsert(client, acme, "bot", rows), 422)
    assert error["field"] == "documents[2].path" and error["value"] == "a"
    assert count(db, "memory_documents") == 0


@pytest.mark.parametrize(("ref", "status", "code"), [
    (TEAM_ID, 422, "invalid_id"), (MALFORMED_AGENT_ID, 422, "invalid_agent_key"), (LEGACY_UUID, 404, "not_found"),
    ("nobody", 404, "not_found"),
])
def test_memory_batch_for_a_bad_agent_writes_nothing(db: Database, client: TestClient, acme: Tenant, ref: str,
                                                     status: int, code: str) -> None:
    error = error_of(upsert(client, acme, ref, [{"path": "p", "content": "c"}]), status)
    assert error["code"] == code and error["field"] == "agent" and error["value"] == ref
    assert count(db, "memory_documents") == 0


def test_memory_of_another_tenants_agent_is_the_same_404_as_a_missing_one(db: Database, client: TestClient,
                                                                          acme: Tenant, globex: Tenant) -> None:
    theirs = agent(client, globex)
    missing = format_id("agent")
    for ref in (theirs["id"], missing):
        error = error_of(upsert(client, acme, ref, [{"path": "p", "content": "c"}]), 404)
        assert error == {"code": "not_found", "message": "agent not found", "field": "agent", "value": ref}
        listed = error_of(client.get(f"/v1/agents/{ref}/memory/documents", headers=acme.headers()), 404)
        assert listed == error
    assert count(db, "memory_documents") == 0


def test_memory_roles(client: TestClient, acme: Tenant) -> None:
    agent(client, acme)
    assert error_of(upsert(client, acme, "bot", [{"path": "p", "content": "c"}], role="member"), 403)[
        "code"] == "forbidden"
    assert client.post("/v1/agents/bot/memory/documents:batch-upsert", json={"documents": []}).status_code == 401
    assert client.get("/v1/agents/bot/memory/documents").status_code == 401


# -- knowledge graph ----------------------------------------------------------------------------------------
def ingest(client: TestClient, tenant: Tenant, body: dict[str, Any], role: str = "operator") -> Any:
    return client.post("/v1/knowledge/ingest", json=body, headers=tenant.headers(role))


def entity(ref: str, name: str, **extra: Any) -> dict[str, Any]:
    return {"agent": ref, "name": name, "entity_type": "person", **extra}


def test_graph_ingest_by_agent_id_or_key_with_relations_by_index_and_by_id(client: TestClient,
                                                                           acme: Tenant) -> None:
    bot = agent(client, acme)
    helper = agent(client, acme, "helper")
    first = ingest(client, acme, {
        "entities": [entity("bot", "Ana"), entity(bot["id"], "Bo", properties={"age": 3}),
                     entity("helper", "Cy", user_id="group:telegram:1")],
        "relations": [{"agent": "bot", "source": 0, "target": 1, "relation": "knows"}]})
    assert first.status_code == 201, first.text
    ana, bo, cy = first.json()["entity_ids"]
    assert len(first.json()["relation_ids"]) == 1
    second = ingest(client, acme, {
        "entities": [entity(bot["id"], "Di")],
        "relations": [{"agent": bot["id"], "source": 0, "target": ana, "relation": "met", "properties": {"w": 1}},
                      {"agent": "bot", "source": bo, "target": ana, "relation": "likes"}]})
    assert second.status_code == 201, second.text
    (di,) = second.json()["entity_ids"]
    entities = client.get("/v1/agents/bot/knowledge/entities", headers=acme.headers("operator")).json()["items"]
    assert [(e["id"], e["name"], e["agent_id"]) for e in entities] == [
        (ana, "Ana", bot["id"]), (bo, "Bo", bot["id"]), (di, "Di", bot["id"])]
    assert entities[1]["properties"] == {"age": 3}
    others = client.get(
            f"/v1/agents/{helper['id']}/knowledge/entities", headers=acme.headers("operator")).json()["items"]
    assert [(e["id"], e["user_id"]) for e in others] == [(cy, "group:telegram:1")]
    relations = client.get("/v1/agents/bot/knowledge/relations", headers=acme.headers("operator")).json()["items"]
    assert {(r["source_entity_id"], r["relation"], r["target_entity_id"]) for r in relations} == {
        (ana, "knows", bo), (di, "met", ana), (bo, "likes", ana)}


THEIRS = "<globex's agent>"  # replaced by the ID of another tenant's agent in the test


@pytest.mark.parametrize("position", POSITIONS)
@pytest.mark.parametrize(("bad", "status", "code", "field"), [
    pytest.param(entity(MALFORMED_AGENT_ID, "X"), 422, "invalid_agent_key", "agent", id="malformed-agent-id"),
    pytest.param(entity(THEIRS, "X"), 404, "not_found", "agent", id="another-tenants-agent"),
    pytest.param(entity(TEAM_ID, "X"), 422, "invalid_id", "agent", id="team-id-as-agent"),
    pytest.param(entity(LEGACY_UUID, "X"), 404, "not_found", "agent", id="legacy-uuid"),
    pytest.param(entity("ghost", "X"), 404, "not_found", "agent", id="unknown-key"),
    pytest.param({"agent": "bot", "entity_type": "person"}, 422, "invalid_input", "name", id="missing-name"),
    pytest.param(entity("bot", ""), 422, "invalid_input", "name", id="empty-name"),
    pytest.param(entity("bot", "X", entity_type="t" * 101), 422, "invalid_input", "entity_type", id="long-type"),
    pytest.param(entity("bot", "X", properties=[1]), 422, "invalid_input", "properties", id="properties-not-object"),
])
def test_graph_ingest_one_bad_entity_fails_everything(db: Database, client: TestClient, acme: Tenant,
                                                      globex: Tenant, position: int, bad: dict[str, Any],
                                                      status: int, code: str, field: str) -> None:
    bot = agent(client, acme)
    if bad.get("agent") == THEIRS:
        bad = {**bad, "agent": agent(client, globex)["id"]}
    rows = [entity("bot", "Ana"), entity(bot["id"], "Bo")]
    rows.insert(position, bad)
    body = {"entities": rows, "relations": [{"agent": "bot", "source": 0, "target": 2, "relation": "r"}]}
    error = error_of(ingest(client, acme, body), status)
    assert error["code"] == code and names(error["field"], "entities", position, field), error
    assert count(db, "kg_entities") == count(db, "kg_relations") == 0


@pytest.mark.parametrize("position", POSITIONS)
@pytest.mark.parametrize(("bad", "status", "field"), [
    pytest.param({"source": 0, "target": 7}, 422, "target", id="index-out-of-range"),
    pytest.param({"source": -1, "target": 0}, 422, "source", id="negative-index"),
    pytest.param({"source": 0, "target": "kg-entity-calm-rivers-k8m4p2d7n9xi"}, 422, "target", id="malformed-id"),
    pytest.param({"source": TEAM_ID, "target": 0}, 422, "source", id="wrong-entity-type"),
    pytest.param({"source": 0, "target": format_id("kg-entity")}, 404, "target", id="unknown-entity"),
    pytest.param({"source": 0, "target": 1, "agent": "helper"}, 422, "source", id="another-agents-entity"),
    pytest.param({"source": 0, "target": 1, "agent": TEAM_ID}, 422, "agent", id="bad-agent"),
    pytest.param({"source": 0, "target": 1, "relation": ""}, 422, "relation", id="empty-relation"),
    pytest.param({"source": 0}, 422, "target", id="missing-target"),
])
def test_graph_ingest_one_bad_relation_fails_everything(db: Database, client: TestClient, acme: Tenant,
                                                        position: int, bad: dict[str, Any], status: int,
                                                        field: str) -> None:
    agent(client, acme)
    agent(client, acme, "helper")
    relations: list[dict[str, Any]] = [{"agent": "bot", "source": 0, "target": 1, "relation": "knows"}
                                       for _ in range(2)]
    relations.insert(position, {"agent": "bot", "relation": "r", **bad})
    body = {"entities": [entity("bot", "Ana"), entity("bot", "Bo")], "relations": relations}
    error = error_of(ingest(client, acme, body), status)
    assert names(error["field"], "relations", position, field), error
    assert count(db, "kg_entities") == count(db, "kg_relations") == 0


def test_graph_ingest_refuses_another_tenants_entity_as_an_endpoint(db: Database, client: TestClient,
                                                                    acme: Tenant, globex: Tenant) -> None:
    agent(client, acme)
    agent(client, globex)
    theirs = ingest(client, globex, {"entities": [entity("bot", "Secret")]}).json()["entity_ids"][0]
    missing = format_id("kg-entity")
    errors = []
    for endpoint in (theirs, missing):
        body = {"entities": [entity("bot", "Ana")],
                "relations": [{"agent": "bot", "source": 0, "target": endpoint, "relation": "r"}]}
        errors.append(error_of(ingest(client, acme, body), 404))
    assert errors[0] == {**errors[1], "value": theirs} and errors[0]["field"] == "relations[0].target"
    assert errors[0]["message"] == "kg entity not found"
    assert count(db, "kg_entities") == 1  # globex's own


def test_graph_of_another_tenants_agent_is_404(client: TestClient, acme: Tenant, globex: Tenant) -> None:
    theirs = agent(client, globex)["id"]
    for suffix in ("entities", "relations"):
        error = error_of(client.get(f"/v1/agents/{theirs}/knowledge/{suffix}", headers=acme.headers()), 404)
        assert error["message"] == "agent not found"


def test_graph_roles_and_the_tenant_from_the_key(db: Database, client: TestClient, acme: Tenant,
                                                 globex: Tenant) -> None:
    agent(client, acme)
    body: dict[str, Any] = {"entities": [entity("bot", "Ana")]}
    assert error_of(ingest(client, acme, body, role="member"), 403)["code"] == "forbidden"
    assert client.post("/v1/knowledge/ingest", json=body).status_code == 401
    smuggled = ingest(client, acme, {**body, "tenant_id": globex.scope.tenant_id})
    assert error_of(smuggled, 422)["field"] == "tenant_id"
    assert count(db, "kg_entities") == 0


# -- vault --------------------------------------------------------------------------------------------------
def upload(client: TestClient, tenant: Tenant, agent_id: str, files: list[tuple[str, bytes, str]],
           role: str = "member", **data: Any) -> Any:
    """One file (``path`` + ``file``) for one entry, a batch (``paths`` + ``files``) for several."""
    if len(files) == 1 and "batch" not in data:
        path, content, content_type = files[0]
        return client.post("/v1/vault/documents", data={"agent_id": agent_id, "path": path, **data},
                           files={"file": (path.rsplit("/", 1)[-1], content, content_type)},
                           headers=tenant.headers(role))
    data.pop("batch", None)
    return client.post("/v1/vault/documents", data={"agent_id": agent_id, "paths": [f[0] for f in files], **data},
                       files=[("files", (f"f{i}", content, content_type))
                              for i, (_, content, content_type) in enumerate(files)],
                       headers=tenant.headers(role))


def test_vault_upload_takes_an_agent_id_or_key_in_the_form(client: TestClient, acme: Tenant) -> None:
    bot = agent(client, acme)
    by_key = upload(client, acme, "bot", [("docs/a.txt", b"hello", "text/plain")])
    by_id = upload(client, acme, bot["id"], [("img/b.png", b"\x89PNG\x00\x01", "image/png")])
    assert by_key.status_code == by_id.status_code == 201, (by_key.text, by_id.text)
    a, b = by_key.json()["documents"][0], by_id.json()["documents"][0]
    assert a["agent_id"] == b["agent_id"] == bot["id"]
    assert (a["path"], a["content_type"], a["size"]) == ("docs/a.txt", "text/plain", 5)
    download = client.get(f"/v1/vault/documents/{b['id']}", headers=acme.headers("member"))
    assert download.status_code == 200 and download.content == b"\x89PNG\x00\x01"
    assert download.headers["content-type"] == "image/png"
    assert download.headers["x-content-type-options"] == "nosniff"
    assert "attachment" in download.headers["content-disposition"]
    text = client.get(f"/v1/vault/documents/{a['id']}", headers=acme.headers("member"))
    assert text.headers["content-type"] == "text/plain" and text.content == b"hello"
    listed = client.get("/v1/agents/bot/vault", headers=acme.headers("member")).json()["items"]
    assert [d["path"] for d in listed] == ["docs/a.txt", "img/b.png"]
    assert client.delete(f"/v1/vault/documents/{a['id']}", headers=acme.headers("operator")).status_code == 204
    assert client.get(f"/v1/vault/documents/{a['id']}", headers=acme.headers()).status_code == 404
    assert client.delete(f"/v1/vault/documents/{a['id']}", headers=acme.headers()).status_code == 404


def test_vault_batch_upload_stores_every_file_in_order(client: TestClient, acme: Tenant) -> None:
    agent(client, acme)
    files = [(f"batch/{i}.txt", f"file {i}".encode(), "text/plain") for i in range(3)]
    response = upload(client, acme, "bot", files)
    assert response.status_code == 201, response.text
    documents = response.json()["documents"]
    assert [(d["path"], d["size"]) for d in documents] == [(f"batch/{i}.txt", 6) for i in range(3)]
    for document, (_, content, _) in zip(documents, files, strict=True):
        assert client.get(f"/v1/vault/documents/{document['id']}", headers=acme.headers()).content == content


@pytest.mark.parametrize("position", POSITIONS)
@pytest.mark.parametrize(("bad", "status", "field"), [
    pytest.param(("taken.txt", b"x", "text/plain"), 409, "paths", id="path-taken"),
    pytest.param(("good-0.txt", b"x", "text/plain"), 409, "paths", id="path-repeated"),
    pytest.param(("p" * 1025, b"x", "text/plain"), 422, "paths", id="path-too-long"),
    pytest.param(("bad-type.txt", b"x", "not a type"), 422, "files", id="bad-content-type"),
])
def test_vault_batch_one_bad_file_fails_everything(db: Database, client: TestClient, acme: Tenant, position: int,
                                                   bad: tuple[str, bytes, str], status: int, field: str) -> None:
    agent(client, acme)
    assert upload(client, acme, "bot", [("taken.txt", b"old", "text/plain")]).status_code == 201
    files = [(f"good-{i}.txt", b"ok", "text/plain") for i in range(2)]
    files.insert(position, bad)
    response = upload(client, acme, "bot", files)
    error = error_of(response, status)
    if bad[0] == "good-0.txt" and position == 0:  # the repeat is the later row
        assert error["field"] == "paths[1]", error
    else:
        assert error["field"] == f"{field}[{position}]", error
    assert count(db, "vault_documents") == 1


@pytest.mark.parametrize(("ref", "status", "code"), [
    (TEAM_ID, 422, "invalid_id"), (MALFORMED_AGENT_ID, 422, "invalid_agent_key"), (LEGACY_UUID, 404, "not_found"),
    ("nobody", 404, "not_found"),
])
def test_vault_form_agent_id_errors_name_the_form_field(db: Database, client: TestClient, acme: Tenant, ref: str,
                                                        status: int, code: str) -> None:
    for files in ([("a.txt", b"a", "text/plain")], [("a.txt", b"a", "text/plain"), ("b.txt", b"b", "text/plain")]):
        error = error_of(upload(client, acme, ref, files), status)
        assert error["code"] == code and error["field"] == "agent_id" and error["value"] == ref
    assert count(db, "vault_documents") == 0


def test_vault_of_another_tenant_is_the_same_404_as_missing(db: Database, client: TestClient, acme: Tenant,
                                                            globex: Tenant) -> None:
    theirs = agent(client, globex)
    document = upload(client, globex, "bot", [("secret.txt", b"secret", "text/plain")]).json()["documents"][0]
    missing = format_id("vault-document")
    for method in ("get", "delete"):
        a = error_of(client.request(method, f"/v1/vault/documents/{document['id']}", headers=acme.headers()), 404)
        b = error_of(client.request(method, f"/v1/vault/documents/{missing}", headers=acme.headers()), 404)
        assert a == {**b, "value": document["id"]} and a["message"] == "vault document not found"
    by_agent = error_of(upload(client, acme, theirs["id"], [("x.txt", b"x", "text/plain")]), 404)
    assert by_agent["message"] == "agent not found"
    assert error_of(client.get(f"/v1/agents/{theirs['id']}/vault", headers=acme.headers()), 404)[
        "message"] == "agent not found"
    assert count(db, "vault_documents") == 1  # globex's, untouched
    malformed = error_of(client.get("/v1/vault/documents/agent-calm-rivers-k8m4p2d7n9x3", headers=acme.headers()),
                         422)
    assert malformed["code"] == "invalid_id" and malformed["field"] == "document_id"


def test_vault_duplicate_path_is_409(db: Database, client: TestClient, acme: Tenant) -> None:
    agent(client, acme)
    assert upload(client, acme, "bot", [("a.txt", b"1", "text/plain")]).status_code == 201
    error = error_of(upload(client, acme, "bot", [("a.txt", b"2", "text/plain")]), 409)
    assert error["code"] == "conflict" and error["field"] == "path" and error["value"] == "a.txt"
    assert count(db, "vault_documents") == 1


def test_vault_refuses_a_file_over_the_size_limit(db: Database, client: TestClient, acme: Tenant) -> None:
    agent(client, acme)
    big = b"x" * (10 * 1024 * 1024 + 1)
    error = error_of(upload(client, acme, "bot", [("ok.txt", b"ok", "text/plain"), ("big.bin", big, "text/plain")]),
                     413)
    assert error["code"] == "payload_too_large" and error["field"] == "files[1]"
    assert error_of(upload(client, acme, "bot", [("big.bin", big, "text/plain")]), 413)["field"] == "file"
    assert count(db, "vault_documents") == 0


@pytest.mark.parametrize(("data", "field"), [
    ({"tenant_id": "org-calm-rivers-k8m4p2d7n9x3"}, "tenant_id"),  # the tenant comes from the key only
    ({"paths": ["only-one"], "batch": True}, "paths"),  # one path for two files
])
def test_vault_form_shape_errors(db: Database, client: TestClient, acme: Tenant, data: dict[str, Any],
                                 field: str) -> None:
    agent(client, acme)
    files = [("a.txt", b"a", "text/plain"), ("b.txt", b"b", "text/plain")]
    response = upload(client, acme, "bot", files if "batch" in data else files[:1], **data)
    assert error_of(response, 422)["field"] == field
    assert count(db, "vault_documents") == 0


def test_vault_roles(client: TestClient, acme: Tenant) -> None:
    agent(client, acme)
    document = upload(client, acme, "bot", [("a.txt", b"a", "text/plain")], role="member").json()["documents"][0]
    assert error_of(client.delete(f"/v1/vault/documents/{document['id']}", headers=acme.headers("member")), 403)[
        "code"] == "forbidden"
    assert client.post("/v1/vault/documents", data={"agent_id": "bot", "path": "b"},
                       files={"file": ("b", b"b", "text/plain")}).status_code == 401
    assert client.get(f"/v1/vault/documents/{document['id']}").status_code == 401
    assert client.get("/v1/agents/bot/vault").status_code == 401


def test_a_broken_multipart_body_is_422_naming_the_body_and_writes_nothing(db: Database, client: TestClient,
                                                                          acme: Tenant) -> None:
    boundary = "9cc651cd2c8d168349f50fede4c361ac"
    answer = client.post("/v1/vault/documents", content=f"--{boundary}\r\nFalse--{boundary}--\r\n".encode(),
                         headers={**acme.headers("operator"),
                                  "Content-Type": f"multipart/form-data; boundary={boundary}"})
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert error["code"] == "invalid_input" and error["field"] == "body"
    assert error["expected"] == "a well-formed multipart/form-data"
    assert count(db, "vault_documents") == 0
