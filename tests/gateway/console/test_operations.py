"""The Operations screen: admins only; owners issue a key (shown this once) and revoke one; the ID explainer
says which kind of ID a value is and why one is not valid; admins change members' roles and remove them (the
API's refusals shown), store and delete credentials (never shown), see the bus and requeue their own
organization's dead letters (another's is the API's 404); every change needs the CSRF token; on both
engines."""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from agentfy.events import admin
from agentfy.gateway.app import create_app
from agentfy.gateway.console.screens import ops_bus
from agentfy.settings import Settings
from agentfy.store.db import Database
from agentfy.store.repos import agents, api_keys, credentials, orgs, prices
from agentfy.store.repos.credentials import CredentialCipher
from tests.gateway.console.conftest import SignedIn
from tests.gateway.console.helpers import csrf_of, post_form, sign_in
from tests.helpers.dead_letters import dead_letter
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


@pytest.fixture
def keyed(db: Database, acme: Tenant) -> Iterator[SignedIn]:
    """``signed_in`` on a gateway given a credentials key (storing a credential needs one, on either engine)."""
    settings = Settings(credentials_key=SecretStr(base64.b64encode(b"k" * 32).decode()))
    app = create_app(db, signing_secret=b"s" * 32, settings=settings)
    clients: list[TestClient] = []

    def make(role: str) -> TestClient:
        client = TestClient(app, base_url="http://testserver")
        clients.append(client)
        assert sign_in(client, acme.keys[role]).status_code == 303
        return client

    try:
        yield make
    finally:
        for client in clients:
            client.close()


def _person(db: Database, tenant: Tenant, name: str, role: str) -> str:
    with db.transaction() as tx:
        user_id = orgs.create_user(tx, display_name=name).id
        orgs.add_member(tx, tenant.scope, user_id, role)
    return user_id


def _roles(db: Database, tenant: Tenant) -> dict[str, str]:
    with db.transaction(write=False) as tx:
        return {m.user_id: m.role for m in orgs.list_members(tx, tenant.scope, after=None, limit=100)}


def test_an_admin_changes_a_role_removes_a_member_and_sees_the_apis_refusal(
        signed_in: SignedIn, db: Database, acme: Tenant, globex: Tenant) -> None:
    alice, owner = _person(db, acme, "Alice", "member"), _person(db, acme, "Olga", "owner")
    theirs = _person(db, globex, "Carol", "member")
    client = signed_in("admin")
    page = client.get(SCREEN).text
    assert alice in page and owner in page and theirs not in page and 'id="members"' in page
    changed = post_form(client, SCREEN, f"{SCREEN}/members/{alice}/role", {"role": "operator"})
    assert changed.status_code == 303 and _roles(db, acme)[alice] == "operator"
    assert "role was changed" in client.get(changed.headers["location"]).text
    refused = post_form(client, SCREEN, f"{SCREEN}/members/{alice}/role", {"role": "owner"})
    assert refused.status_code == 403 and "cannot hand out a member with the owner role" in refused.text
    assert _roles(db, acme)[alice] == "operator"
    foreign = post_form(client, SCREEN, f"{SCREEN}/members/{theirs}/remove", {})
    assert foreign.status_code == 404 and _roles(db, globex) == {theirs: "member"}
    bad = post_form(client, SCREEN, f"{SCREEN}/members/user-nope/role", {"role": "member"})
    assert bad.status_code == 422 and "user-nope" in bad.text
    removed = post_form(client, SCREEN, f"{SCREEN}/members/{alice}/remove", {})
    assert removed.status_code == 303 and alice not in _roles(db, acme)
    added = post_form(client, SCREEN, f"{SCREEN}/members", {"display_name": "Newton", "email": "", "role": "member"})
    assert added.status_code == 303 and sorted(_roles(db, acme).values()) == ["member", "owner"]
    member = signed_in("member")
    sneaky = member.post(f"{SCREEN}/members/{owner}/remove", data={"csrf": csrf_of(member.get("/console/agents").text)},
                         follow_redirects=False)
    assert sneaky.status_code == 403 and _roles(db, acme)[owner] == "owner"


def test_credentials_are_listed_masked_stored_rotated_and_deleted(keyed: SignedIn, db: Database, acme: Tenant,
                                                                  globex: Tenant) -> None:
    with db.transaction() as tx:
        credentials.put_credential(tx, globex.scope, CredentialCipher(b"k" * 32), "theirs", b"their-secret")
    client = keyed("admin")
    secret = "sk-live-0123456789abcdefWXYZ"
    stored = post_form(client, SCREEN, f"{SCREEN}/credentials", {"credential_name": "openai", "secret": secret})
    assert stored.status_code == 303
    page = client.get(stored.headers["location"]).text
    assert "The credential was stored." in page and "<code>openai</code>" in page and "theirs" not in page
    assert secret not in page and "WXYZ" not in page and 'type="password"' in page
    rotated = post_form(client, SCREEN, f"{SCREEN}/credentials", {"credential_name": "openai", "secret": "other"})
    assert "credential was replaced" in client.get(rotated.headers["location"]).text
    bad = post_form(client, SCREEN, f"{SCREEN}/credentials", {"credential_name": "Not A Slug", "secret": "x"})
    assert bad.status_code == 422 and "x" not in re.findall(r'<strong>(.*?)</strong>', bad.text)
    gone = post_form(client, SCREEN, f"{SCREEN}/credentials/theirs/delete", {})
    assert gone.status_code == 404
    deleted = post_form(client, SCREEN, f"{SCREEN}/credentials/openai/delete", {})
    assert deleted.status_code == 303
    with db.transaction(write=False) as tx:
        assert credentials.list_credential_names(tx, acme.scope) == []
        assert credentials.list_credential_names(tx, globex.scope) == ["theirs"]


def test_an_owner_sees_the_bus_and_requeues_a_dead_letter_of_its_own_organization_only(
        signed_in: SignedIn, db: Database, acme: Tenant, globex: Tenant) -> None:
    mine = dead_letter(db, acme.scope, "order-1", payload={"text": "private words"})
    theirs = dead_letter(db, globex.scope, "order-2")
    client = signed_in("owner")
    page = client.get(SCREEN).text
    assert mine in page and theirs not in page and "private words" not in page
    assert re.search(r'id="bus-dead">1<', page) and "the handler refuses it" in page
    foreign = post_form(client, SCREEN, f"{SCREEN}/dead-letters/{theirs}/requeue", {})
    assert foreign.status_code == 404 and "dead letter" in foreign.text
    assert admin.status_of(db, theirs)[0] == "dead"  # type: ignore[index]
    bad = post_form(client, SCREEN, f"{SCREEN}/dead-letters/domain-event-nope/requeue", {})
    assert bad.status_code == 422 and "event_id" in bad.text
    unsigned = client.post(f"{SCREEN}/dead-letters/{mine}/requeue", follow_redirects=False)
    assert unsigned.status_code == 403 and admin.status_of(db, mine)[0] == "dead"  # type: ignore[index]
    done = post_form(client, SCREEN, f"{SCREEN}/dead-letters/{mine}/requeue", {})
    assert done.status_code == 303 and admin.status_of(db, mine)[0] == "pending"  # type: ignore[index]
    after = client.get(done.headers["location"]).text
    assert "was requeued" in after and mine not in after and "No dead letters." in after
    scanned = client.get(SCREEN, params={"scan": "orphans"}).text
    assert re.search(r"No problems in the \d+ tables scanned\.", scanned)
    assert 'id="orphans"' not in client.get(SCREEN).text  # the scan runs only when asked for
    stale = client.get(SCREEN, params={"dead_after": "forged.cursor"})
    assert stale.status_code == 422 and "invalid_cursor" in stale.text and f'href="{SCREEN}"' in stale.text


def test_dead_letters_come_a_page_at_a_time(signed_in: SignedIn, db: Database, acme: Tenant,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ops_bus, "PAGE_SIZE", 1)
    first, second = dead_letter(db, acme.scope, "first"), dead_letter(db, acme.scope, "second")
    client = signed_in("admin")
    page = client.get(SCREEN).text
    assert first in page and second not in page
    link = re.search(r'id="dead-letters-next" href="([^"]+)"', page)
    assert link is not None
    following = client.get(html.unescape(link.group(1))).text
    assert second in following and first not in following and 'id="dead-letters-next"' not in following


def test_an_admin_sets_a_price_sees_the_apis_refusals_and_deletes_it(signed_in: SignedIn, db: Database,
                                                                     acme: Tenant, globex: Tenant) -> None:
    with db.transaction() as tx:
        prices.put_price(tx, globex.scope, provider="openai", model="their-model",
                         effective_from="2026-01-01T00:00:00Z", currency="EUR", input_micros_per_million=1,
                         output_micros_per_million=1)
    client = signed_in("admin")
    price = {"provider": "openai", "price_model": "gpt-x", "price_from": "2026-03-01T09:30",
             "price_currency": "USD", "price_input": "2.50", "price_output": "10"}
    set_ = post_form(client, SCREEN, f"{SCREEN}/prices", price)
    assert set_.status_code == 303, set_.text
    page = client.get(set_.headers["location"]).text
    assert "The price was set" in page and "their-model" not in page
    row = page.split('id="prices"')[1].split("</tr>")[1]
    assert re.findall(r"<td>(.*?)</td>", row)[:6] == ["openai", "<code>gpt-x</code>", "2026-03-01T09:30:00.000000Z",
                                                      "USD", "2.5", "10"]
    again = post_form(client, SCREEN, f"{SCREEN}/prices", {**price, "price_input": "3"})
    assert "The price was replaced" in client.get(again.headers["location"]).text
    for name, value in (("price_currency", "usd"), ("price_input", "-1"), ("price_output", "1e3")):
        bad = post_form(client, SCREEN, f"{SCREEN}/prices", {**price, name: value})
        assert bad.status_code == 422 and "invalid" in bad.text, (name, bad.text)
    theirs = post_form(client, SCREEN, f"{SCREEN}/prices/delete", {
        "provider": "openai", "model": "their-model", "effective_from": "2026-01-01T00:00:00.000000Z"})
    assert theirs.status_code == 404
    deleted = post_form(client, SCREEN, f"{SCREEN}/prices/delete", {
        "provider": "openai", "model": "gpt-x", "effective_from": "2026-03-01T09:30:00.000000Z"})
    assert deleted.status_code == 303 and "The price was deleted" in client.get(deleted.headers["location"]).text
    with db.transaction(write=False) as tx:
        assert prices.list_prices(tx, acme.scope) == [] and len(prices.list_prices(tx, globex.scope)) == 1
    unsigned = client.post(f"{SCREEN}/prices", data=price, follow_redirects=False)
    assert unsigned.status_code == 403
