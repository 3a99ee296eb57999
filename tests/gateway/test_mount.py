"""Mounting the /v1 routers: every route module is mounted, and no route can escape authentication or the
access policy."""

from __future__ import annotations

import importlib
import pkgutil
import threading
from contextvars import ContextVar

import pytest
from fastapi import APIRouter, Depends, FastAPI
from fastapi.testclient import TestClient

import agentfy.gateway.routes as routes_package
from agentfy.channels.telegram_webhook import TelegramBot
from agentfy.gateway.deps import Authenticated
from agentfy.gateway.routes import mount
from agentfy.gateway.routing import ApiRoute


def test_every_route_module_with_a_router_is_mounted() -> None:
    found = []
    for info in pkgutil.iter_modules(routes_package.__path__):
        router = getattr(importlib.import_module(f"{routes_package.__name__}.{info.name}"), "router", None)
        if isinstance(router, APIRouter):
            found.append(info.name)
            assert router in mount.ROUTERS, f"routes/{info.name}.py has a router that mount.ROUTERS does not list"
    assert len(found) == len(mount.ROUTERS)


def test_the_hottest_read_is_matched_first() -> None:
    assert mount.ROUTERS[0] is importlib.import_module("agentfy.gateway.routes.agents").router


def test_a_route_without_authentication_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    stray = APIRouter()

    @stray.get("/open", operation_id="agents.get")
    def open_door() -> dict[str, str]:
        return {}

    monkeypatch.setattr(mount, "ROUTERS", (stray,))
    with pytest.raises(RuntimeError, match=r"/open does not authenticate its caller"):
        mount.register(FastAPI())


def test_a_route_without_a_rule_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    stray = APIRouter()

    @stray.get("/unruled", operation_id="nobody.knows")
    def unruled(call: Authenticated) -> dict[str, str]:
        return {}

    monkeypatch.setattr(mount, "ROUTERS", (stray,))
    with pytest.raises(RuntimeError, match=r"'nobody.knows', which is not in agentfy.permissions.access.RULES"):
        mount.register(FastAPI())


def test_a_route_of_another_class_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    stray = APIRouter()  # FastAPI's own route class: a sync endpoint would pay a second thread hop

    @stray.get("/two-hops", operation_id="agents.list")
    def two_hops(call: Authenticated) -> dict[str, str]:
        return {}

    monkeypatch.setattr(mount, "ROUTERS", (stray,))
    with pytest.raises(RuntimeError, match=r"/two-hops is a APIRoute: make its router with route_class="):
        mount.register(FastAPI())


def test_a_sync_endpoint_runs_once_in_a_worker_thread_with_the_request_context() -> None:
    seen: list[tuple[str, str | None]] = []
    marker: ContextVar[str | None] = ContextVar("marker", default=None)
    router = APIRouter(route_class=ApiRoute)

    async def mark() -> None:
        marker.set("the request's")

    @router.get("/where", dependencies=[Depends(mark)])
    def where(limit: int = 3) -> dict[str, int]:
        """Documented."""
        seen.append((threading.current_thread().name, marker.get()))
        return {"limit": limit}

    app = FastAPI()
    app.include_router(router)
    with TestClient(app) as client:
        assert client.get("/where?limit=5").json() == {"limit": 5}
        assert client.get("/where?limit=x").status_code == 422  # its parameters are still its own
        operation = client.get("/openapi.json").json()["paths"]["/where"]["get"]
    assert operation["description"] == "Documented." and operation["operationId"] == "where_where_get"
    [(thread, context)] = seen
    assert thread != threading.main_thread().name and context == "the request's"


def test_register_reports_every_mounted_operation_as_authenticated(monkeypatch: pytest.MonkeyPatch) -> None:
    operations = mount.register(FastAPI())
    assert "agents.get" in operations and "agents.create" in operations
    assert operations <= set(mount.RULES)


def test_a_webhook_without_a_platform_verifier_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    stray = APIRouter()

    @stray.post("/channels/open/webhook", operation_id="channels.open", include_in_schema=False)
    def open_webhook() -> dict[str, str]:
        return {}

    monkeypatch.setattr(mount, "CHANNEL_ROUTERS", (stray,))
    with pytest.raises(RuntimeError, match=r"/channels/open/webhook does not verify the platform"):
        mount.register(FastAPI())


def test_a_webhook_in_the_openapi_document_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    stray = APIRouter()

    @stray.post("/channels/telegram/{bot}/listed", operation_id="channels.listed")
    def listed(binding: TelegramBot) -> dict[str, str]:
        return {}

    monkeypatch.setattr(mount, "CHANNEL_ROUTERS", (stray,))
    with pytest.raises(RuntimeError, match=r"is in the OpenAPI document"):
        mount.register(FastAPI())


def test_the_webhooks_are_mounted_verified_and_unlisted(client: TestClient) -> None:
    # mounted and verified: no API key is asked for, the platform's proof is, and without it the answer is 401
    for path in ("/v1/channels/telegram/SupportBot/webhook", "/v1/channels/discord/123456789012345678/interactions"):
        answer = client.post(path, json={})
        assert answer.status_code == 401 and "Bearer" not in answer.json()["error"]["message"], path
    assert not [path for path in client.get("/openapi.json").json()["paths"] if path.startswith("/v1/channels/")]
    assert not any(op.startswith("channels.") and op.endswith(("webhook", "interactions"))
                   for op in mount.register(FastAPI()))
