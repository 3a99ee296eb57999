"""The indexed route dispatch picks what FastAPI's linear scan picks, for every path.

The real application is driven twice for each request, on the same instance: once through
:class:`agentfy.gateway.dispatch.IndexedDispatch`, once through FastAPI's own dispatch (the reference), and the
route chosen (``scope["route"]``, ``scope["endpoint"]``, the path parameters) and the answer (status,
``Allow``, ``Location``, and the body of any answer but a 200, whose body can be the process's state) must be
the same.  The requests carry no credential, so no route does anything: an API
route answers 401, an unknown path 404, a known path with the wrong method 405, a path off by its trailing
slash a redirect — which is exactly what distinguishes one dispatch decision from another.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.routing import APIRouter, _IncludedRouter
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st
from starlette.types import Receive, Scope, Send

from agentfy.gateway import dispatch
from agentfy.gateway.app import create_app
from agentfy.store.db import Database

METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
_PARAM = re.compile(r"\(\?P<(\w+)>([^)]*)\)")
#: Values a path parameter takes in the generated paths: an ID, a key, a number, text with a dot.
SAMPLES = ("agent-calm-rivers-k8m4p2d7n9x3", "support-bot", "42", "a.b")


class Recorder:
    """The router's dispatch, recording what it chose in the scope it was given."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.chosen: tuple[Any, ...] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self.inner(scope, receive, send)
        finally:
            if scope["type"] != "lifespan":
                self.chosen = (scope.get("route"), scope.get("endpoint"), scope.get("path_params"),
                               scope.get("root_path"))


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FastAPI]:
    from agentfy.store.migrate import upgrade

    directory = tmp_path_factory.mktemp("dispatch")
    db = Database(f"sqlite:///{directory / 'dispatch.db'}")
    upgrade(db)
    application = create_app(db, signing_secret=b"s" * 32, workspace_root=directory / "workspaces")
    yield application
    db.dispose()


@pytest.fixture(scope="module")
def client(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app, follow_redirects=False, raise_server_exceptions=False) as test_client:
        yield test_client


def _indexed(app: FastAPI) -> dispatch.IndexedDispatch:
    stack = app.router.middleware_stack
    assert isinstance(stack, dispatch.IndexedDispatch)
    return stack


def outcome(app: FastAPI, client: TestClient, method: str, path: str, *, indexed: bool) -> tuple[Any, ...]:
    """What the application chose and answered for ``method path`` with one dispatch or the other: sent as
    the ASGI scope a server makes of it (``path`` decoded: any character, control characters included), on
    the test client's event loop."""
    indexed_dispatch = _indexed(app)
    recorder = Recorder(indexed_dispatch if indexed else app.router.app)
    app.router.middleware_stack = recorder
    try:
        status, headers, body = client.portal.call(_send, app, method, path)
    finally:
        app.router.middleware_stack = indexed_dispatch
    # A 200's body may be the process's state (the metrics count these very requests): the route decides it.
    return (status, headers.get(b"allow"), headers.get(b"location"), body if status != 200 else None,
            recorder.chosen)


async def _send(app: FastAPI, method: str, path: str) -> tuple[int, dict[bytes, bytes], bytes]:
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
             "scheme": "http", "path": path, "raw_path": path.encode("utf-8", "surrogateescape"),
             "query_string": b"", "root_path": "", "headers": [(b"host", b"testserver")],
             "client": ("127.0.0.1", 50000), "server": ("testserver", 80), "state": {}}
    messages: list[dict[str, Any]] = []
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if delivered:
            return {"type": "http.disconnect"}
        delivered = True
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        messages.append(message)

    await app(scope, receive, send)
    start = next(message for message in messages if message["type"] == "http.response.start")
    body = b"".join(message.get("body", b"") for message in messages if message["type"] == "http.response.body")
    return start["status"], dict(start.get("headers", [])), body


def same_outcome(app: FastAPI, client: TestClient, method: str, path: str) -> None:
    reference = outcome(app, client, method, path, indexed=False)
    assert outcome(app, client, method, path, indexed=True) == reference, (method, path)


def leaf_patterns(app: FastAPI) -> list[tuple[str, set[str]]]:
    """Every route's path pattern (included routers' effective routes too) and its methods."""
    found: list[tuple[str, set[str]]] = []
    for route in app.router.routes:
        leaves = route.effective_candidates() if isinstance(route, _IncludedRouter) else [route]
        for leaf in leaves:
            effective = getattr(leaf, "starlette_route", None) or leaf
            pattern = getattr(effective, "path_regex", None)
            if isinstance(pattern, re.Pattern):
                found.append((pattern.pattern, set(getattr(effective, "methods", None) or {"GET"})))
    return found


def concrete(pattern: str, value: str) -> str:
    """A path ``pattern`` matches, each parameter given ``value`` (a ``path`` parameter ``value/more``)."""
    body = pattern.removeprefix("^").removesuffix("$")
    body = _PARAM.sub(lambda m: f"{value}/more" if m.group(2) == ".*" else value, body)
    return re.sub(r"\\(.)", r"\1", body)


def test_the_app_dispatches_through_the_index(app: FastAPI) -> None:
    index = _indexed(app).index()
    assert index is not None
    assert not index.anywhere  # every route of the app has a literal prefix the index can use


def test_every_route_path_method_and_slash_is_dispatched_as_the_linear_scan_does(
        app: FastAPI, client: TestClient) -> None:
    patterns = leaf_patterns(app)
    assert len(patterns) > 100
    checked = 0
    for pattern, methods in patterns:
        for value in SAMPLES[:2]:
            path = concrete(pattern, value)
            for variant in {path, path + "/", path.rstrip("/") or "/", path + "x", path + "/extra"}:
                for method in sorted(methods | {"GET", "POST", "DELETE"}):
                    same_outcome(app, client, method, variant)
                    checked += 1
    assert checked > 1000


@pytest.mark.parametrize("path", [
    "/", "/v1", "/v1/", "/v1//agents", "/v1/agents//", "//v1/agents", "/v1/agents/%2F", "/v1/agents/a%00b",
    "/V1/agents", "/v1/AGENTS", "/healthz/", "/console", "/console/", "/docs", "/docs/", "/openapi.json",
    "/v1/chat/completions/", "/v1/agents/x/messages/", "/v1/sessions", "/v1/sessions/", "/nowhere",
    "/v1/agents/\u00e9t\u00e9", "/v1/agents/x/../y",
])
@pytest.mark.parametrize("method", ["GET", "POST", "PATCH"])
def test_odd_paths_are_dispatched_as_the_linear_scan_does(app: FastAPI, client: TestClient, method: str,
                                                         path: str) -> None:
    same_outcome(app, client, method, path)


def _segments(app: FastAPI) -> list[str]:
    words: set[str] = set()
    for pattern, _ in leaf_patterns(app):
        words.update(part for part in re.split(r"[/^$\\]", _PARAM.sub("", pattern)) if part)
    return sorted(words)


@given(data=st.data())
def test_generated_paths_are_dispatched_as_the_linear_scan_does(app: FastAPI, client: TestClient,
                                                                data: st.DataObject) -> None:
    words = [*_segments(app), "", "x", "agent-calm-rivers-k8m4p2d7n9x3", "%20", "\u00fc", ".."]
    parts = data.draw(st.lists(st.one_of(st.sampled_from(words), st.text(
        st.characters(codec="utf-8", exclude_characters="/"), max_size=6)), min_size=0, max_size=6))
    path = "/" + "/".join(parts) + data.draw(st.sampled_from(["", "/"]))
    method = data.draw(st.sampled_from(METHODS))
    same_outcome(app, client, method, path)


def test_candidates_leave_out_only_routes_that_cannot_match(app: FastAPI) -> None:
    """The structural half of the contract: a route the index leaves out answers NONE for the path and for
    its slash-toggled twin."""
    indexed = _indexed(app)
    index = indexed.index()
    assert index is not None
    for pattern, _ in leaf_patterns(app):
        path = concrete(pattern, "x")
        for candidate_path in (path, path + "/", path + "/x"):
            scope = {"type": "http", "path": candidate_path, "root_path": "", "method": "GET"}
            view = index.view(scope)
            for other, _methods in leaf_patterns(app):
                compiled = re.compile(other)
                if compiled.match(candidate_path) or compiled.match(candidate_path.rstrip("/") or "/") \
                        or compiled.match(candidate_path + "/"):
                    assert any(_pattern_of(leaf) == other for route in view.routes for leaf in (
                        route._effective_candidates if isinstance(route, _IncludedRouter) else [route])), \
                        (candidate_path, other)


def _pattern_of(leaf: Any) -> str | None:
    effective = getattr(leaf, "starlette_route", None) or leaf
    pattern = getattr(effective, "path_regex", None)
    return pattern.pattern if isinstance(pattern, re.Pattern) else None


def test_shapes() -> None:
    shape = dispatch.shape_of
    any_segment = dispatch.ANY_SEGMENT
    assert shape(re.compile(r"^/v1/agents/(?P<agent>[^/]+)$")) == dispatch.Shape(("v1", "agents", any_segment),
                                                                                   exact=True)
    assert shape(re.compile(r"^/v1/agents/(?P<agent>[^/]+)/memory/search$")) == dispatch.Shape(
        ("v1", "agents", any_segment, "memory", "search"), exact=True)
    assert shape(re.compile(r"^/v1/chat/completions$")) == dispatch.Shape(("v1", "chat", "completions"), exact=True)
    assert shape(re.compile(r"^/$")) == dispatch.Shape(("",), exact=True)
    assert shape(re.compile(r"^/org/api\-keys/$")) == dispatch.Shape(("org", "api-keys", ""), exact=True)
    assert shape(re.compile(r"^/a\.b/\d+$")) == dispatch.Shape(("a.b",))
    assert shape(re.compile(r"^/n/(?P<n>[0-9]+)$")) == dispatch.Shape(("n",))
    assert shape(re.compile(r"^/f/v(?P<n>[^/]+)$")) == dispatch.Shape(("f",))
    assert shape(re.compile(r"^/f/(?P<n>[^/]+)\.json$")) == dispatch.Shape(("f",))
    assert shape(re.compile(r"^/console/(?P<path>.*)$")) == dispatch.Shape(("console",))
    assert shape(re.compile(r"^/(?P<path>.*)$")) == dispatch.Shape(())
    assert shape(re.compile("^host$", re.IGNORECASE)) == dispatch.ANYWHERE
    assert shape(re.compile("^(?P<x>[^/]+)$")) == dispatch.ANYWHERE


def test_a_route_added_later_is_dispatched(tmp_path: Any, sqlite_db: Database) -> None:
    application = create_app(sqlite_db, signing_secret=b"s" * 32, workspace_root=tmp_path)
    with TestClient(application) as test_client:
        assert test_client.get("/healthz").status_code == 200
        late = APIRouter()

        @late.get("/late/{thing}")
        def late_route(thing: str) -> dict[str, str]:
            return {"thing": thing}

        application.include_router(late)
        assert test_client.get("/late/one").json() == {"thing": "one"}
        late.add_api_route("/later", lambda: {"later": True})
        assert test_client.get("/later").json() == {"later": True}


def test_a_router_with_its_own_middleware_is_refused() -> None:
    from starlette.middleware.gzip import GZipMiddleware

    application = FastAPI()
    application.router.middleware_stack = GZipMiddleware(application.router.app)
    with pytest.raises(RuntimeError, match="middleware of its own"):
        dispatch.install(application)
