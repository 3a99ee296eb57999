"""The organization's share of the bus and database checks, over HTTP on both engines: an admin sees its own
organization's bus counts, dead letters (no payload) and orphan scan, and requeues one of its dead letters;
another organization's event is a 404 and stays dead; a member or operator is 403; a bad ID or cursor is a 422
naming it."""

from __future__ import annotations

from fastapi.testclient import TestClient

from agentfy.events import admin
from agentfy.store import orphans
from agentfy.store.db import Database
from agentfy.store.repos import agents, telemetry
from agentfy.store.repos.telemetry import UsageRecord
from tests.helpers.dead_letters import DOOMED_TYPE, dead_letter
from tests.helpers.tenants import Tenant


def test_an_admin_sees_only_its_organizations_bus_and_dead_letters(client: TestClient, db: Database, acme: Tenant,
                                                                   globex: Tenant) -> None:
    mine = dead_letter(db, acme.scope, "order-1", payload={"text": "private words"})
    theirs = dead_letter(db, globex.scope, "order-9")
    dead_letter(db, globex.scope, "order-10")
    bus = client.get("/v1/org/bus", headers=acme.headers("admin"))
    assert bus.status_code == 200, bus.text
    assert bus.json()["dead"] == 1 and "daily" not in bus.json()
    assert client.get("/v1/org/bus", headers=globex.headers("admin")).json()["dead"] == 2
    listed = client.get("/v1/org/dead-letters", headers=acme.headers("admin"))
    assert listed.status_code == 200, listed.text
    (letter,) = listed.json()["items"]
    assert letter["id"] == mine and letter["type"] == DOOMED_TYPE and letter["source_id"] == "order-1"
    assert letter["attempts"] == 1 and "the handler refuses it" in letter["last_error"] and letter["dead_at"]
    assert "private words" not in listed.text and theirs not in listed.text and "payload" not in letter


def test_dead_letters_page_with_a_signed_cursor_of_this_organization(client: TestClient, db: Database,
                                                                     acme: Tenant, globex: Tenant) -> None:
    ids = [dead_letter(db, acme.scope, f"page-{n}") for n in range(3)]
    first = client.get("/v1/org/dead-letters", params={"limit": "2"}, headers=acme.headers("admin")).json()
    cursor = first["next_cursor"]
    assert cursor is not None and len(first["items"]) == 2
    second = client.get("/v1/org/dead-letters", params={"limit": "2", "cursor": cursor},
                        headers=acme.headers("admin")).json()
    assert [d["id"] for d in first["items"] + second["items"]] == sorted(ids, key=ids.index)
    assert second["next_cursor"] is None
    elsewhere = client.get("/v1/org/dead-letters", params={"cursor": cursor}, headers=globex.headers("admin"))
    assert elsewhere.status_code == 422 and elsewhere.json()["error"]["code"] == "invalid_cursor"


def test_an_admin_requeues_its_own_dead_letter_but_never_another_organizations(
        client: TestClient, db: Database, acme: Tenant, globex: Tenant) -> None:
    mine = dead_letter(db, acme.scope, "order-1")
    theirs = dead_letter(db, globex.scope, "order-2")
    refused = client.post(f"/v1/org/dead-letters/{theirs}/requeue", headers=acme.headers("owner"))
    assert refused.status_code == 404 and refused.json()["error"]["value"] == theirs
    assert admin.status_of(db, theirs) == ("dead", 1, admin.status_of(db, theirs)[2])  # type: ignore[index]
    done = client.post(f"/v1/org/dead-letters/{mine}/requeue", headers=acme.headers("admin"))
    assert done.status_code == 200, done.text
    assert done.json() == {"id": mine, "status": "pending"}
    assert admin.status_of(db, mine) == ("pending", 0, None)
    again = client.post(f"/v1/org/dead-letters/{mine}/requeue", headers=acme.headers("admin"))
    assert again.status_code == 404  # no longer a dead letter
    assert client.get("/v1/org/dead-letters", headers=acme.headers("admin")).json()["items"] == []


def test_a_bad_event_id_is_422_naming_it_and_nothing_changes(client: TestClient, db: Database,
                                                             acme: Tenant) -> None:
    mine = dead_letter(db, acme.scope, "order-1")
    for bad in ("not-an-id", mine.upper(), "agent-" + mine.removeprefix("domain-event-")):
        answer = client.post(f"/v1/org/dead-letters/{bad}/requeue", headers=acme.headers("admin"))
        assert answer.status_code == 422, (bad, answer.text)
        error = answer.json()["error"]
        assert error["code"] == "invalid_id" and error["field"] == "event_id" and error["value"] == bad
    assert admin.status_of(db, mine)[0] == "dead"  # type: ignore[index]


def test_members_and_operators_are_refused_every_route(client: TestClient, db: Database, acme: Tenant) -> None:
    mine = dead_letter(db, acme.scope, "order-1")
    for role in ("member", "operator"):
        for method, path in (("GET", "/v1/org/bus"), ("GET", "/v1/org/dead-letters"), ("GET", "/v1/org/orphans"),
                             ("POST", f"/v1/org/dead-letters/{mine}/requeue")):
            answer = client.request(method, path, headers=acme.headers(role))
            assert answer.status_code == 403, (role, path, answer.text)
            assert "admin role" in answer.json()["error"]["message"]
    assert admin.status_of(db, mine)[0] == "dead"  # type: ignore[index]


def test_the_orphan_scan_reports_only_the_organizations_rows(client: TestClient, db: Database, acme: Tenant,
                                                             globex: Tenant) -> None:
    clean = client.get("/v1/org/orphans", headers=acme.headers("admin"))
    assert clean.status_code == 200, clean.text
    assert clean.json()["findings"] == []
    assert "agents" in clean.json()["tables"] and "org_members" in clean.json()["tables"]
    assert "users" not in clean.json()["tables"] and "organizations" not in clean.json()["tables"]
    with db.transaction() as tx:  # usage of globex naming acme's agent: a reference without a foreign key
        acmes = agents.create_agent(tx, acme.scope, agent_key="support")
        telemetry.record_usage(tx, UsageRecord(model="m", input_tokens=1, output_tokens=1, tenant_id=globex.id,
                                               agent_id=acmes.id))
    theirs = client.get("/v1/org/orphans", headers=globex.headers("admin")).json()["findings"]
    assert theirs == [{"table": "usage_snapshots", "column": "agent_id", "problem": "points at nothing in agents.id",
                       "count": 1, "examples": [repr(acmes.id)]}]
    assert client.get("/v1/org/orphans", headers=acme.headers("admin")).json()["findings"] == []
    assert orphans.scan(db) == []  # across tenants the agent exists: only the organization's scan sees it wrong
