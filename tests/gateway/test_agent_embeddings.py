"""``/v1/agents/{agent}/embeddings`` on both engines: an admin sets, reads and removes an agent's embeddings
model (the rest of the configuration kept, the credential's secret never echoed, the existing memory queued
for embedding); a bad configuration is 422 naming the field and writes nothing; an unknown credential is
refused; other roles get 403 and another organization's agent 404."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from pydantic import SecretStr

from agentfy.events.embedding import MEMORY_EMBED
from agentfy.gateway.app import create_app
from agentfy.settings import Settings
from agentfy.store import schema
from agentfy.store.db import Database
from agentfy.store.repos import agents
from tests.gateway.test_credentials_routes import KEY, SECRET, World

EMBEDDINGS = {"base_url": "https://embed.test/v1", "model": "text-embedding-3-small", "credential": "openai",
              "dimensions": 256}


@pytest.fixture
def world(db: Database) -> World:
    return World(db)


@pytest.fixture
def client(db: Database, tmp_path: Path) -> Iterator[TestClient]:
    settings = Settings(credentials_key=SecretStr(base64.b64encode(KEY).decode()))
    with TestClient(create_app(db, signing_secret=b"s" * 32, settings=settings,
                               workspace_root=tmp_path / "ws")) as test_client:
        yield test_client


def _config(world: World) -> dict[str, Any]:
    with world.db.transaction(write=False) as tx:
        return agents.get_agent(tx, world.acme, world.bot).config


def _queued(world: World) -> list[dict[str, Any]]:
    table = schema.event_outbox
    with world.db.transaction(write=False) as tx:
        rows = tx.all(sa.select(table.c.payload, table.c.agent_id).where(table.c.type == MEMORY_EMBED))
    return [{"payload": json.loads(row[0]), "agent_id": row[1]} for row in rows]


def test_an_admin_sets_reads_and_removes_the_embeddings_model(world: World, client: TestClient) -> None:
    admin = world.as_("admin")
    assert client.get("/v1/agents/bot/embeddings", headers=admin).json() == {
        "configured": False, "base_url": None, "model": None, "credential": None, "dimensions": None,
        "min_similarity": None}
    client.put("/v1/credentials/openai", json={"secret": SECRET}, headers=admin)
    set_ = client.put("/v1/agents/bot/embeddings", json=EMBEDDINGS, headers=admin)
    assert set_.status_code == 200, set_.text
    assert set_.json() == {**EMBEDDINGS, "configured": True, "min_similarity": 0.3}
    assert SECRET not in set_.text
    read = client.get(f"/v1/agents/{world.bot}/embeddings", headers=admin)
    assert read.json() == set_.json() and SECRET not in read.text
    config = _config(world)
    assert config["keep"] is True and config["embeddings"]["model"] == "text-embedding-3-small"  # the rest kept
    assert _queued(world) == [{"payload": {"catch_up": True}, "agent_id": world.bot}]  # the existing memory

    assert client.delete("/v1/agents/bot/embeddings", headers=admin).status_code == 204
    assert "embeddings" not in _config(world) and _config(world)["keep"] is True
    assert client.get("/v1/agents/bot/embeddings", headers=admin).json()["configured"] is False
    again = client.delete("/v1/agents/bot/embeddings", headers=admin)
    assert again.status_code == 404 and "has no embeddings model" in again.json()["error"]["message"]
    assert again.json()["error"]["field"] == "config.embeddings"  # what is missing; the agent is there


def test_an_unknown_credential_is_422_naming_it_and_nothing_is_written(world: World, client: TestClient) -> None:
    answer = client.put("/v1/agents/bot/embeddings", json=EMBEDDINGS, headers=world.as_("admin"))
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert error["field"] == "credential" and "'openai' is not stored" in error["message"]
    assert "embeddings" not in _config(world) and _queued(world) == []


@pytest.mark.parametrize(("body", "field"), [
    ({"model": "m"}, "base_url"),
    ({"base_url": "https://x.test/v1"}, "model"),
    ({"base_url": "ftp://x.test", "model": "m"}, "base_url"),
    ({"base_url": "https://x.test/v1", "model": "m", "dimensions": 0}, "dimensions"),
    ({"base_url": "https://x.test/v1", "model": "m", "dimensions": 100_000}, "dimensions"),
    ({"base_url": "https://x.test/v1", "model": "m", "min_similarity": 1.5}, "min_similarity"),
    ({"base_url": "https://x.test/v1", "model": "m", "credential": "Not A Slug"}, "credential"),
    ({"base_url": "https://x.test/v1", "model": "m", "api_key": SECRET}, "api_key"),
])
def test_a_bad_configuration_is_422_naming_the_field(world: World, client: TestClient, body: dict[str, Any],
                                                     field: str) -> None:
    answer = client.put("/v1/agents/bot/embeddings", json=body, headers=world.as_("admin"))
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"]["field"] == field
    assert SECRET not in answer.text and "embeddings" not in _config(world)


def test_a_stored_configuration_a_search_cannot_use_is_422_naming_its_field(world: World,
                                                                            client: TestClient) -> None:
    with world.db.transaction() as tx:
        agents.update_agent(tx, world.acme, world.bot, config={"embeddings": {"base_url": "nope", "model": "m"}})
    answer = client.get("/v1/agents/bot/embeddings", headers=world.as_("admin"))
    assert answer.status_code == 422 and answer.json()["error"]["field"] == "config.embeddings.base_url"


def test_the_embeddings_routes_are_for_admins_and_the_callers_organization(world: World,
                                                                           client: TestClient) -> None:
    for role in ("member", "operator"):
        assert client.get("/v1/agents/bot/embeddings", headers=world.as_(role)).status_code == 403
        assert client.put("/v1/agents/bot/embeddings", json=EMBEDDINGS, headers=world.as_(role)).status_code == 403
        assert client.delete("/v1/agents/bot/embeddings", headers=world.as_(role)).status_code == 403
    stranger = world.as_("globex")
    assert client.get(f"/v1/agents/{world.bot}/embeddings", headers=stranger).status_code == 404
    assert client.put(f"/v1/agents/{world.bot}/embeddings", json={**EMBEDDINGS, "credential": None},
                      headers=stranger).status_code == 404
    assert client.delete(f"/v1/agents/{world.bot}/embeddings", headers=stranger).status_code == 404
    assert "embeddings" not in _config(world)
