"""Driving the console through a TestClient as a browser would: sign in with the form, post forms with the
page's CSRF token."""

from __future__ import annotations

import re

import httpx
from fastapi.testclient import TestClient

_CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def csrf_of(page: str) -> str:
    found = _CSRF.search(page)
    assert found is not None, "the page has no form with a CSRF token"
    return found.group(1)


def sign_in(client: TestClient, key: str) -> httpx.Response:
    """Sign in with ``key`` through the form; returns the answer to the POST (a 303 to the agents on success)."""
    form = client.get("/console/sign-in")
    return client.post("/console/sign-in", data={"api_key": key, "csrf": csrf_of(form.text)},
                       follow_redirects=False)


def post_form(client: TestClient, page_path: str, action: str, data: dict[str, str]) -> httpx.Response:
    """Open ``page_path`` and post ``data`` to ``action`` with the page's CSRF token (redirects not followed)."""
    page = client.get(page_path)
    assert page.status_code == 200, page.text
    return client.post(action, data={**data, "csrf": csrf_of(page.text)}, follow_redirects=False)
