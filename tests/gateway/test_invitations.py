"""Joining another organization takes the person's consent, and inviting tells nothing about who exists
(both engines)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from agentfy.ids import format_id
from agentfy.store.db import Database
from agentfy.store.repos import api_keys, invitations, orgs
from tests.helpers.tenants import Tenant


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def member_of(db: Database, tenant: Tenant, name: str, role: str = "member") -> tuple[str, dict[str, str]]:
    """A person who is a member of ``tenant``, and a key acting as them there."""
    with db.transaction() as tx:
        user = orgs.create_user(tx, display_name=name).id
        orgs.add_member(tx, tenant.scope, user, role)
        key = api_keys.create_api_key(tx, tenant.scope, name=name, role=role, user_id=user).key
    return user, bearer(key)


def invite(client: TestClient, tenant: Tenant, user_id: str, role: str = "member") -> Any:
    return client.post("/v1/org/members", json={"user_id": user_id, "role": role}, headers=tenant.headers())


def test_a_person_joins_another_organization_only_by_accepting(db: Database, client: TestClient, acme: Tenant,
                                                              globex: Tenant) -> None:
    bob, as_bob = member_of(db, globex, "Bob")
    early = client.post("/v1/org/api-keys", json={"name": "as bob", "role": "member", "user_id": bob},
                        headers=acme.headers())
    assert early.status_code == 404  # not a member of acme: no key can act as him there
    invited = invite(client, acme, bob, "operator")
    assert invited.status_code == 202
    invitation = invited.json()["invitation"]
    assert (invitation["status"], invitation["role"], invitation["user_id"]) == ("pending", "operator", bob)
    assert bob not in {m["user_id"] for m in client.get("/v1/org/members", headers=acme.headers()).json()["items"]}
    assert [i["id"] for i in client.get(
            "/v1/org/invitations", headers=acme.headers()).json()["items"]] == [invitation["id"]]

    mine = client.get("/v1/invitations", headers=as_bob).json()["items"]
    assert [(i["id"], i["org_slug"], i["org_name"]) for i in mine] == [(invitation["id"], "acme", "Acme")]
    accepted = client.post(f"/v1/invitations/{invitation['id']}/accept", headers=as_bob)
    assert accepted.status_code == 200
    assert accepted.json()["organization_id"] == acme.scope.tenant_id
    assert accepted.json()["member"]["role"] == "operator"
    roles = {m["user_id"]: m["role"] for m in client.get("/v1/org/members", headers=acme.headers()).json()["items"]}
    assert roles[bob] == "operator"
    late = client.post("/v1/org/api-keys", json={"name": "as bob", "role": "operator", "user_id": bob},
                       headers=acme.headers())
    assert late.status_code == 201
    assert client.get("/v1/invitations", headers=as_bob).json()["items"] == []  # answered
    assert client.post(f"/v1/invitations/{invitation['id']}/accept", headers=as_bob).status_code == 404


def test_inviting_tells_nothing_about_who_exists_elsewhere(db: Database, client: TestClient, acme: Tenant,
                                                          globex: Tenant) -> None:
    somebody, _ = member_of(db, globex, "Somebody")
    answers = [invite(client, acme, user_id) for user_id in
               (somebody, format_id("user"), "0193a5b0-7000-7000-8000-0000000000aa")]
    assert [a.status_code for a in answers] == [202, 202, 202]

    def shape(answer: Any) -> dict[str, Any]:
        body = dict(answer.json()["invitation"])
        for varying in ("id", "user_id", "created_at", "expires_at"):
            body.pop(varying)
        return body

    assert shape(answers[0]) == shape(answers[1]) == shape(answers[2])
    # no extra header tells them apart either (the request ID is random per request, whoever is invited)
    assert {h for a in answers for h in a.headers if h.lower().startswith("x-")} <= {"x-request-id"}
    assert len({a.headers["x-request-id"] for a in answers}) == 3


@pytest.mark.parametrize("who", ["another person", "nobody", "signed context"])
def test_only_the_invited_person_can_answer(db: Database, client: TestClient, acme: Tenant, globex: Tenant,
                                            who: str) -> None:
    bob, _ = member_of(db, globex, "Bob")
    invitation = invite(client, acme, bob).json()["invitation"]["id"]
    if who == "another person":
        _, headers = member_of(db, globex, "Eve")
        expected = 404  # the same as no such invitation
    elif who == "nobody":
        headers, expected = globex.headers("owner"), 403  # a key that acts as no person
    else:
        with client.websocket_connect("/v1/ws", headers=globex.headers("owner")) as ws:
            ws.send_json({"id": 1, "method": "context.sign"})
            token = ws.receive_json()["result"]["token"]
        headers, expected = bearer(token), 403
    for action in ("accept", "decline"):
        assert client.post(f"/v1/invitations/{invitation}/{action}", headers=headers).status_code == expected
    assert bob not in {m["user_id"] for m in client.get("/v1/org/members", headers=acme.headers()).json()["items"]}


def test_declined_withdrawn_and_expired_invitations_cannot_be_accepted(db: Database, client: TestClient,
                                                                       acme: Tenant, globex: Tenant) -> None:
    bob, as_bob = member_of(db, globex, "Bob")
    first = invite(client, acme, bob).json()["invitation"]["id"]
    assert client.post(f"/v1/invitations/{first}/decline", headers=as_bob).status_code == 204
    assert client.post(f"/v1/invitations/{first}/accept", headers=as_bob).status_code == 404
    second = invite(client, acme, bob).json()["invitation"]["id"]  # invited again after declining
    assert invite(client, acme, bob).status_code == 409  # but not twice at once
    assert client.delete(f"/v1/org/invitations/{second}", headers=acme.headers()).status_code == 204
    assert client.post(f"/v1/invitations/{second}/accept", headers=as_bob).status_code == 404
    with db.transaction() as tx:
        third = invitations.invite(tx, acme.scope, bob, "member", invited_by=None).id
        tx.execute("UPDATE org_invitations SET expires_at = '2000-01-01T00:00:00.000000Z' WHERE id = :id",
                   {"id": third})
    assert client.get("/v1/invitations", headers=as_bob).json()["items"] == []
    assert client.post(f"/v1/invitations/{third}/accept", headers=as_bob).status_code == 404
    assert invite(client, acme, bob).status_code == 202  # an expired invitation does not block a new one


def test_inviting_a_member_is_a_conflict_and_roles_are_bounded(db: Database, client: TestClient,
                                                               acme: Tenant) -> None:
    ann, _ = member_of(db, acme, "Ann")
    assert invite(client, acme, ann).status_code == 409
    bob = format_id("user")
    over = client.post("/v1/org/members", json={"user_id": bob, "role": "owner"}, headers=acme.headers("admin"))
    assert over.status_code == 403  # an admin key cannot hand out the owner role, by invitation either
    bad = client.post("/v1/org/members", json={"user_id": "user-not-an-id"}, headers=acme.headers())
    assert bad.status_code == 422 and bad.json()["error"]["field"] == "user_id"
