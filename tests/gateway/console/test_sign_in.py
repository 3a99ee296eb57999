"""Signing in to the console: the key in a sealed HttpOnly, SameSite=Strict cookie and never in a URL, a bad
key shown the API's error, CSRF tokens required, signing out, forged and revoked sessions, on both engines."""

from __future__ import annotations

from fastapi.testclient import TestClient

from agentfy.gateway.app import create_app
from agentfy.settings import ServeSettings, Settings
from agentfy.store.db import Database
from agentfy.store.repos import api_keys
from tests.gateway.console.conftest import SignedIn
from tests.gateway.console.helpers import csrf_of, sign_in
from tests.helpers.tenants import Tenant


def test_a_good_key_signs_in_into_a_sealed_strict_cookie(client: TestClient, acme: Tenant) -> None:
    answer = sign_in(client, acme.keys["admin"])
    assert answer.status_code == 303 and answer.headers["location"] == "/console/agents"
    cookie = answer.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/console" in cookie
    assert acme.keys["admin"] not in cookie and acme.keys["admin"] not in answer.headers["location"]
    page = client.get("/console/agents")
    assert page.status_code == 200
    assert '<span id="tenant-slug">acme</span>' in page.text and '<span id="role">admin</span>' in page.text
    assert acme.keys["admin"] not in page.text


def test_a_bad_key_is_shown_the_apis_error_and_signs_nobody_in(client: TestClient) -> None:
    answer = sign_in(client, "agfy_not-a-key")
    assert answer.status_code == 401
    assert 'role="alert"' in answer.text and "HTTP 401" in answer.text and "unauthorized" in answer.text
    assert client.get("/console/agents", follow_redirects=False).headers["location"] == "/console/sign-in"


def test_sign_in_needs_the_forms_csrf_token(client: TestClient, acme: Tenant) -> None:
    client.get("/console/sign-in")
    for token in ({}, {"csrf": "forged"}):
        answer = client.post("/console/sign-in", data={"api_key": acme.keys["admin"], **token},
                             follow_redirects=False)
        assert answer.status_code == 403 and "csrf_token_invalid" in answer.text
    assert client.get("/console/agents", follow_redirects=False).status_code == 303


def test_pages_without_a_session_send_you_to_sign_in(client: TestClient) -> None:
    for path in ("/console/", "/console/agents", "/console/agents/agent-calm-rivers-k8m4p2d7n9x3"):
        answer = client.get(path, follow_redirects=False)
        assert answer.status_code == 303 and answer.headers["location"] in ("/console/sign-in", "/console/agents")


def test_an_edited_or_foreign_cookie_is_no_session(client: TestClient, acme: Tenant) -> None:
    sign_in(client, acme.keys["admin"])
    sealed = client.cookies["agentfy_console"]
    for forged in (sealed[:-2] + ("AA" if not sealed.endswith("AA") else "BB"), "garbage", ""):
        client.cookies.clear()
        client.cookies.set("agentfy_console", forged, path="/console")
        assert client.get("/console/agents", follow_redirects=False).headers["location"] == "/console/sign-in"


def test_sign_out_clears_the_session_and_needs_the_token(signed_in: SignedIn) -> None:
    client = signed_in("member")
    assert client.post("/console/sign-out", data={}, follow_redirects=False).status_code == 403
    token = csrf_of(client.get("/console/agents").text)
    answer = client.post("/console/sign-out", data={"csrf": token}, follow_redirects=False)
    assert answer.status_code == 303 and answer.headers["location"] == "/console/sign-in"
    assert client.get("/console/agents", follow_redirects=False).headers["location"] == "/console/sign-in"


def test_a_key_revoked_after_sign_in_goes_back_to_sign_in(signed_in: SignedIn, db: Database, acme: Tenant) -> None:
    client = signed_in("admin")
    with db.transaction() as tx:
        (key,) = [k for k in api_keys.list_api_keys(tx, acme.scope) if k.name == "admin"]
        api_keys.revoke_api_key(tx, acme.scope, key.id)
    answer = client.get("/console/agents", follow_redirects=False)
    assert answer.status_code == 303 and answer.headers["location"] == "/console/sign-in?refused=1"
    assert "no longer accepts the key" in client.get("/console/sign-in?refused=1").text


def test_a_server_with_the_console_turned_off_serves_the_api_and_no_console(db: Database, acme: Tenant) -> None:
    """``serve.console = false``: ``/console`` (and its static files) is a 404 in the API's error shape, the API
    answers as before."""
    app = create_app(db, signing_secret=b"s" * 32, settings=Settings(serve=ServeSettings(console=False)))
    with TestClient(app) as client:
        for path in ("/console", "/console/sign-in", "/console/static/htmx.min.js"):
            answer = client.get(path)
            assert answer.status_code == 404, path
            assert answer.json()["error"]["code"] == "not_found", path
        assert client.get("/v1/agents", headers=acme.headers("owner")).status_code == 200
