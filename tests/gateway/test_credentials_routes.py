"""``/v1/credentials`` and ``/v1/agents/{agent}/model`` (both engines): admins store, list, rotate and delete the
organization's secrets, never shown back; an agent's model is set with the runtime's validator, its credential
must exist, and a check calls the model (a fake OpenAI-compatible server) through the runtime's providers."""

from __future__ import annotations

import base64
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from agentfy.gateway.app import create_app
from agentfy.identity import Scope
from agentfy.runtime.openai_compat import CallPolicy
from agentfy.settings import Settings
from agentfy.store.db import Database
from agentfy.store.repos import agents, api_keys, credentials, orgs
from agentfy.store.repos.credentials import CredentialCipher
from tests.helpers.mock_openai import MockOpenAI

KEY = b"k" * 32
SECRET = "sk-live-0123456789abcdefWXYZ"
ROTATED = "sk-next-9876543210zyxwvuQRST"
MODEL = {"provider": "openai", "base_url": "https://llm.test/v1", "model": "gpt-test", "credential": "openai"}


class World:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.keys: dict[str, str] = {}
        with db.transaction() as tx:
            self.acme = Scope(orgs.create_organization(tx, slug="acme", name="Acme").id)
            self.globex = Scope(orgs.create_organization(tx, slug="globex", name="Globex").id)
            self.bot = agents.create_agent(tx, self.acme, agent_key="bot", config={"keep": True}).id
            agents.create_agent(tx, self.globex, agent_key="bot")
            for role in ("owner", "admin", "operator", "member"):
                person = orgs.create_user(tx, display_name=role).id
                orgs.add_member(tx, self.acme, person, role)
                self.keys[role] = api_keys.create_api_key(tx, self.acme, name=role, role=role, user_id=person).key
            self.keys["globex"] = api_keys.create_api_key(tx, self.globex, name="g", role="owner").key

    def as_(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys[who]}"}


@pytest.fixture
def world(db: Database) -> World:
    return World(db)


@pytest.fixture
def fake() -> MockOpenAI:
    return MockOpenAI()


def _app(db: Database, tmp_path: Path, fake: MockOpenAI, *, key: bytes | None = KEY) -> Any:
    settings = Settings(credentials_key=None if key is None else SecretStr(base64.b64encode(key).decode()))
    app = create_app(db, signing_secret=b"s" * 32, settings=settings, workspace_root=tmp_path / "ws")
    app.state.gateway.runtime.providers.clients = fake.clients()
    app.state.gateway.runtime.providers.policy = CallPolicy(attempts=1)  # a refusal answers at once
    if key is None:
        app.state.gateway.runtime.providers.cipher = None  # an embedded database would make its own key file
    return app


@pytest.fixture
def client(db: Database, tmp_path: Path, fake: MockOpenAI) -> Iterator[TestClient]:
    with TestClient(_app(db, tmp_path, fake)) as test_client:
        yield test_client


def test_an_admin_stores_lists_shows_rotates_and_deletes_a_credential(
        world: World, client: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    answers = []
    stored = client.put("/v1/credentials/openai", json={"secret": SECRET}, headers=world.as_("admin"))
    answers.append(stored)
    assert stored.status_code == 200, stored.text
    body = stored.json()
    assert body["name"] == "openai" and body["rotated"] is False and body["hint"] == "…WXYZ"
    assert body["created_at"].endswith("Z")
    short = client.put("/v1/credentials/short", json={"secret": "abc"}, headers=world.as_("owner"))
    answers.append(short)
    assert short.json()["hint"] is None  # a short secret gets no hint
    listed = client.get("/v1/credentials", headers=world.as_("admin"))
    answers.append(listed)
    assert [item["name"] for item in listed.json()["items"]] == ["openai", "short"]
    shown = client.get("/v1/credentials/openai", headers=world.as_("owner"))
    answers.append(shown)
    assert shown.json() == {"name": "openai", "created_at": body["created_at"], "rotated_at": None, "hint": None,
                            "rotated": None}
    rotated = client.put("/v1/credentials/openai", json={"secret": ROTATED}, headers=world.as_("admin"))
    answers.append(rotated)
    assert rotated.json()["rotated"] is True and rotated.json()["created_at"] == body["created_at"]
    rotated_at = rotated.json()["rotated_at"]
    assert rotated_at is not None and rotated_at >= body["created_at"]
    assert client.get("/v1/credentials/openai", headers=world.as_("admin")).json()["rotated_at"] == rotated_at
    listed = client.get("/v1/credentials", headers=world.as_("admin")).json()["items"]
    assert [(item["name"], item["rotated_at"]) for item in listed] == [("openai", rotated_at), ("short", None)]
    with world.db.transaction(write=False) as tx:
        assert credentials.get_credential(tx, world.acme, CredentialCipher(KEY), "openai") == ROTATED.encode()
    gone = client.delete("/v1/credentials/openai", headers=world.as_("admin"))
    assert gone.status_code == 204
    again = client.delete("/v1/credentials/openai", headers=world.as_("admin"))
    answers.append(again)
    assert again.status_code == 404 and again.json()["error"]["value"] == "openai"
    for answer in answers:
        assert SECRET not in answer.text and ROTATED not in answer.text and "sk-" not in answer.text
    assert SECRET not in caplog.text and ROTATED not in caplog.text


def test_members_and_operators_are_refused_and_another_organizations_names_are_invisible(
        world: World, client: TestClient) -> None:
    assert client.put("/v1/credentials/openai", json={"secret": SECRET}, headers=world.as_("admin")).status_code == 200
    for role in ("member", "operator"):
        for method, path, body in (("PUT", "/v1/credentials/x", {"secret": "s"}), ("GET", "/v1/credentials", None),
                                   ("GET", "/v1/credentials/openai", None),
                                   ("DELETE", "/v1/credentials/openai", None)):
            answer = client.request(method, path, json=body, headers=world.as_(role))
            assert answer.status_code == 403, (role, method, path, answer.text)
    theirs = world.as_("globex")
    assert client.get("/v1/credentials", headers=theirs).json()["items"] == []
    assert client.get("/v1/credentials/openai", headers=theirs).status_code == 404
    assert client.delete("/v1/credentials/openai", headers=theirs).status_code == 404
    assert client.get("/v1/credentials/openai", headers=world.as_("admin")).status_code == 200


@pytest.mark.parametrize("name", ["Open AI", "-x", "a--b", "UPPER", "x" * 64])
def test_a_bad_name_is_422_naming_the_field(world: World, client: TestClient, name: str) -> None:
    answer = client.put(f"/v1/credentials/{name}", json={"secret": SECRET}, headers=world.as_("admin"))
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"]["field"] == "name"
    assert SECRET not in answer.text


@pytest.mark.parametrize("secret", ["", "bad\x00" + SECRET, SECRET * 1000])
def test_a_bad_secret_is_422_naming_secret_without_echoing_it(world: World, client: TestClient,
                                                              secret: str) -> None:
    answer = client.put("/v1/credentials/openai", json={"secret": secret}, headers=world.as_("admin"))
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert error["field"] == "secret" and "value" not in error
    assert SECRET not in answer.text


def test_a_server_without_a_credentials_key_answers_503_naming_the_setting(
        db: Database, world: World, tmp_path: Path, fake: MockOpenAI) -> None:
    with TestClient(_app(db, tmp_path, fake, key=None)) as keyless:
        answer = keyless.put("/v1/credentials/openai", json={"secret": SECRET}, headers=world.as_("admin"))
    assert answer.status_code == 503
    assert "AGENTFY_CREDENTIALS_KEY" in answer.json()["error"]["message"] and SECRET not in answer.text


def test_the_model_is_set_read_and_checked_through_the_runtime(world: World, client: TestClient,
                                                               fake: MockOpenAI) -> None:
    admin = world.as_("admin")
    unknown = client.put("/v1/agents/bot/model", json=MODEL, headers=admin)
    assert unknown.status_code == 422 and unknown.json()["error"]["field"] == "credential"
    client.put("/v1/credentials/openai", json={"secret": SECRET}, headers=admin)
    set_ = client.put(f"/v1/agents/{world.bot}/model", json=MODEL, headers=admin)
    assert set_.status_code == 200, set_.text
    assert set_.json() == {**MODEL, "context_window": 8000, "max_tokens": None}
    assert client.get("/v1/agents/bot/model", headers=admin).json() == set_.json()
    agent = client.get("/v1/agents/bot", headers=admin).json()
    assert agent["config"]["keep"] is True and agent["config"]["model"]["model"] == "gpt-test"  # the rest kept
    checked = client.post("/v1/agents/bot/model/check", headers=admin)
    assert checked.status_code == 200, checked.text
    assert checked.json()["ok"] is True and checked.json()["model"] == "gpt-test"
    assert checked.json()["latency_ms"] >= 0
    assert fake.authorizations() == [f"Bearer {SECRET}"]
    assert str(fake.requests[0].url) == "https://llm.test/v1/chat/completions"
    client.put("/v1/credentials/openai", json={"secret": ROTATED}, headers=admin)
    assert client.post("/v1/agents/bot/model/check", headers=admin).status_code == 200
    assert fake.authorizations()[-1] == f"Bearer {ROTATED}"  # the runtime decrypts the rotated secret


def test_a_model_that_refuses_is_502_model_error_without_the_secret(world: World, client: TestClient,
                                                                     fake: MockOpenAI) -> None:
    admin = world.as_("admin")
    client.put("/v1/credentials/openai", json={"secret": SECRET}, headers=admin)
    assert client.put("/v1/agents/bot/model", json=MODEL, headers=admin).status_code == 200
    fake.status = 401
    failed = client.post("/v1/agents/bot/model/check", headers=admin)
    assert failed.status_code == 502, failed.text
    assert failed.json()["error"]["code"] == "model_error" and SECRET not in failed.text
    client.delete("/v1/credentials/openai", headers=admin)
    missing = client.post("/v1/agents/bot/model/check", headers=admin)
    assert missing.status_code == 422 and missing.json()["error"]["field"] == "config.model.credential"


@pytest.mark.parametrize(("body", "field"), [
    ({"provider": "openai", "model": "m"}, "base_url"),
    ({"provider": "openai", "base_url": "https://x.test"}, "model"),
    ({"provider": "openai", "base_url": "ftp://x.test", "model": "m"}, "base_url"),
    ({"provider": "claude"}, "provider"),
    ({"context_window": 10}, "context_window"),
    ({"credential": "Not A Slug"}, "credential"),
    ({"provider": "offline", "api_key": SECRET}, "api_key"),
    ({"provider": "anthropic"}, "model"),
    ({"provider": "anthropic", "model": "claude", "max_tokens": 0}, "max_tokens"),
    ({"provider": "openai", "base_url": "https://x.test", "model": "m", "max_tokens": 100}, "max_tokens"),
])
def test_a_bad_model_is_422_naming_the_field(world: World, client: TestClient, body: dict[str, Any],
                                             field: str) -> None:
    answer = client.put("/v1/agents/bot/model", json=body, headers=world.as_("admin"))
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"]["field"] == field
    assert SECRET not in answer.text


def test_the_model_routes_are_for_admins_and_the_callers_organization(world: World, client: TestClient) -> None:
    for role in ("member", "operator"):
        assert client.get("/v1/agents/bot/model", headers=world.as_(role)).status_code == 403
        assert client.put("/v1/agents/bot/model", json={}, headers=world.as_(role)).status_code == 403
        assert client.post("/v1/agents/bot/model/check", headers=world.as_(role)).status_code == 403
    assert client.get(f"/v1/agents/{world.bot}/model", headers=world.as_("globex")).status_code == 404
    offline = client.post("/v1/agents/bot/model/check", headers=world.as_("owner"))
    assert offline.status_code == 200 and offline.json()["model"] == "offline"
