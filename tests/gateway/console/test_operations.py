"""The Operations screen: admins only; owners issue a key (shown this once) and revoke one; the ID explainer
says which kind of ID a value is and why one is not valid; every change needs the CSRF token; on both engines."""

from __future__ import annotations

import re

from agentfy.store.db import Database
from agentfy.store.repos import agents, api_keys
from tests.gateway.console.conftest import SignedIn
from tests.gateway.console.helpers import csrf_of, post_form
from tests.helpers.tenants import Tenant

SCREEN = "/console/operations"


def test_members_and_operators_do_not_see_it(signed_in: SignedIn) -> None:
    for role in ("member", "operator"):
        client = signed_in(role)
        assert "/console/operations" not in client.get("/console/agents").text
        answer = client.get(SCREEN)
        assert answer.status_code == 403 and f"role is {role}" in answer.text
    refused = post_form(signed_in("operator"), "/console/agents", f"{SCREEN}/api-keys",
                        {"key_name": "sneaky", "key_role": "owner"})
    assert refused.status_code == 403 and "owner role" in refused.text


def test_an_owner_issues_a_key_shown_once_and_revokes_it(signed_in: SignedIn, db: Database, acme: Tenant,
                                                         globex: Tenant) -> None:
    client = signed_in("owner")
    listed = client.get(SCREEN).text
    assert 'href="/console/operations"' in listed and "globex" not in listed
    issued = post_form(client, SCREEN, f"{SCREEN}/api-keys", {"key_name": "ci bot", "key_role": "operator"})
    assert issued.status_code == 200
    key = re.search(r'<div class="notice" role="status" id="issued">.*?<code class="id">([^<]+)</code>',
                    issued.text, re.S)
    assert key is not None and key.group(1).startswith("agfy_")
    with db.transaction(write=False) as tx:
        (made,) = [k for k in api_keys.list_api_keys(tx, acme.scope) if k.name == "ci bot"]
    assert made.role == "operator"
    again = client.get(SCREEN).text
    assert key.group(1) not in again and "ci bot" in again  # shown once
    revoked = post_form(client, SCREEN, f"{SCREEN}/api-keys/{made.id}/revoke", {})
    assert revoked.status_code == 303
    with db.transaction(write=False) as tx:
        (after,) = [k for k in api_keys.list_api_keys(tx, acme.scope) if k.name == "ci bot"]
    assert after.revoked_at is not None
    assert client.post(f"{SCREEN}/api-keys", data={"key_name": "x"}, follow_redirects=False).status_code == 403


def test_an_admin_sees_why_keys_are_not_theirs_and_explains_ids(signed_in: SignedIn, db: Database,
                                                                acme: Tenant, globex: Tenant) -> None:
    with db.transaction() as tx:
        mine = agents.create_agent(tx, acme.scope, agent_key="support")
        theirs = agents.create_agent(tx, globex.scope, agent_key="support")
    client = signed_in("admin")
    page = client.get(SCREEN).text
    assert "needs the owner role" in page and "Issue key" not in page
    explained = client.get(SCREEN, params={"id": mine.id}).text
    assert "&quot;exists_in_your_organization&quot;: true" in explained and "agent" in explained
    foreign = client.get(SCREEN, params={"id": theirs.id}).text
    assert "&quot;exists_in_your_organization&quot;: false" in foreign
    broken = client.get(SCREEN, params={"id": "agent-not-an-id"}).text
    assert 'id="explanation"' in broken and "&quot;valid&quot;: false" in broken
    assert csrf_of(page)
