"""The console's static files: the vendored htmx is the pinned release (its hash as its README states), every
file is served with the console and shipped in the package data; pages load nothing from elsewhere."""

from __future__ import annotations

import hashlib
import re
import tomllib
from pathlib import Path

from fastapi.testclient import TestClient

from agentfy.gateway.console.app import STATIC_DIR

ROOT = Path(__file__).resolve().parents[3]
HTMX_SHA256 = "d6fdc75f204e6bdefa99b69bf1e6d4ac69b8a364f77929f45c13476b4000f717"  # htmx.org 2.0.11, dist/htmx.min.js


def test_the_vendored_htmx_is_the_pinned_release() -> None:
    assert hashlib.sha256((STATIC_DIR / "htmx.min.js").read_bytes()).hexdigest() == HTMX_SHA256
    readme = (STATIC_DIR / "README.md").read_text()
    assert HTMX_SHA256 in readme and "htmx 2.0.11" in readme


def test_static_files_are_served_and_packaged(client: TestClient) -> None:
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert package_data["agentfy.gateway.console"] == ["static/*"]
    for name, kind in (("htmx.min.js", "javascript"), ("console.js", "javascript"), ("events.js", "javascript"),
                       ("console.css", "text/css")):
        answer = client.get(f"/console/static/{name}")
        assert answer.status_code == 200 and kind in answer.headers["content-type"]
        assert answer.content == (STATIC_DIR / name).read_bytes()


def test_pages_load_only_the_consoles_own_files(client: TestClient) -> None:
    page = client.get("/console/sign-in").text
    sources = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert sources and all(source.startswith("/console/") for source in sources)
