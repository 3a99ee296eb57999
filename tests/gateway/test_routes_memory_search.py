"""The memory search and the episodic summaries over HTTP: the search is the agent's own (what its
``search_memory`` tool finds in a chat, the route finds in that chat's SCOPE, and nothing of another scope),
the SCOPE is named explicitly, bad parameters are 422 naming the parameter, a member reads its own person's
scope only, and another organization's agent is 404.  Both engines."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from agentfy.events.embedding import MEMORY_EMBED
from agentfy.events.settings import BusSettings
from agentfy.events.worker import Worker
from agentfy.gateway.app import create_app
from agentfy.identity.context import RequestContext
from agentfy.runtime.embeddings import QueryEmbedder
from agentfy.runtime.memory_embedder import MemoryEmbedder
from agentfy.runtime.memory_models import ModelCalls
from agentfy.runtime.providers import Providers
from agentfy.runtime.tools import ToolEnv
from agentfy.runtime.tools.records import search_memory
from agentfy.settings import Settings
from agentfy.store.db import Database
from agentfy.store.repos import agents, api_keys, credentials, memory, orgs
from agentfy.store.repos.agents import Agent
from agentfy.store.repos.credentials import CredentialCipher
from tests.helpers.fake_openai import FakeOpenAI
from tests.helpers.tenants import Tenant

GROUP = "group:telegram:42"
SEARCH = "/v1/agents/{}/memory/search"
FAST = BusSettings(backoff_base_seconds=0.0, backoff_max_seconds=0.0, backoff_jitter=0.0, max_attempts=3)
EPISODES = "/v1/agents/{}/memory/episodes"


def _agent(db: Database, tenant: Tenant, key: str = "bot") -> Agent:
    with db.transaction() as tx:
        return agents.create_agent(tx, tenant.scope, agent_key=key)


def _remember(client: TestClient, tenant: Tenant, agent: str, documents: list[dict[str, Any]]) -> None:
    answer = client.post(f"/v1/agents/{agent}/memory/documents:batch-upsert", json={"documents": documents},
                         headers=tenant.headers("operator"))
    assert answer.status_code == 200, answer.text


def _summary(db: Database, tenant: Tenant, agent: Agent, user_id: str, session_key: str, text: str,
             compaction: int = 0) -> str:
    with db.transaction() as tx:
        summary, _ = memory.create_episodic_summary(tx, tenant.scope, agent_id=agent.id, user_id=user_id,
                                                    session_key=session_key, compaction_count=compaction,
                                                    summary=text)
    return summary.id


def _member_person(db: Database, tenant: Tenant) -> tuple[str, dict[str, str]]:
    """A member key of ``tenant`` acting as a person: (the person's user ID, its headers)."""
    with db.transaction() as tx:
        user_id = orgs.create_user(tx, display_name="Member").id
        orgs.add_member(tx, tenant.scope, user_id, "member")
        key = api_keys.create_api_key(tx, tenant.scope, name="member person", role="member", user_id=user_id).key
    return user_id, {"Authorization": f"Bearer {key}"}


def _search(client: TestClient, tenant: Tenant, agent: str, role: str = "operator", **params: Any) -> Any:
    return client.get(SEARCH.format(agent), params=params, headers=tenant.headers(role))


def _error(answer: Any, status: int) -> dict[str, Any]:
    assert answer.status_code == status, answer.text
    error: dict[str, Any] = answer.json()["error"]
    assert "select" not in answer.text.lower()
    return error


def test_the_search_finds_what_the_agents_tool_finds_in_that_scope(db: Database, client: TestClient, acme: Tenant,
                                                                    tmp_path: Path) -> None:
    bot = _agent(db, acme)
    _remember(client, acme, "bot", [
        {"user_id": GROUP, "path": "remembered/a.md", "content": "the espresso machine is on floor three"},
        {"user_id": GROUP, "path": "remembered/b.md", "content": "espresso beans come on mondays"},
        {"user_id": "", "path": "MEMORY.md", "content": "the agent's own espresso note"},
        {"user_id": "someone-else", "path": "MEMORY.md", "content": "espresso for someone else"}])
    _summary(db, acme, bot, GROUP, "tg-42", "we talked about the espresso machine and floor three")

    found = _search(client, acme, bot.id, query="espresso machine", scope=GROUP)
    assert found.status_code == 200, found.text
    hits = found.json()["items"]
    assert {(hit["kind"], hit["title"]) for hit in hits} == {("memory", "remembered/a.md"),
                                                              ("episodic", "tg-42 #0")}  # every word, this scope
    assert all("espresso" in hit["snippet"].lower() and isinstance(hit["score"], float) for hit in hits)

    # The agent's own tool, in a chat of that group: the same matches, in the same order.
    context = RequestContext(tenant_id=acme.scope.tenant_id, agent_id=bot.id, agent_key=bot.agent_key,
                             user_id=GROUP, sender_id="member-7")
    env = ToolEnv(db, bot, acme.slug, tmp_path, context, "test", "chat", None, 0)  # type: ignore[arg-type]
    told = asyncio.run(search_memory(env, {"query": "espresso machine", "limit": 20})).splitlines()
    assert [line.split(":", 1)[0] for line in told] == [f"[{hit['kind']}] {hit['title']}" for hit in hits]

    own = _search(client, acme, "bot", query="espresso", scope="").json()["items"]  # by key; the agent's own
    assert [hit["title"] for hit in own] == ["MEMORY.md"] and "own espresso" in own[0]["snippet"]
    assert len(_search(client, acme, "bot", query="espresso", scope=GROUP, limit=1).json()["items"]) == 1
    assert _search(client, acme, "bot", query="nothing-like-it", scope=GROUP).json()["items"] == []


@pytest.mark.parametrize(("params", "field"), [
    ({"query": "   ", "scope": GROUP}, "query"),
    ({"scope": GROUP}, "query"),
    ({"query": "x" * 1001, "scope": GROUP}, "query"),
    ({"query": "espresso"}, "scope"),
    ({"query": "espresso", "scope": "group:\x00"}, "scope"),
    ({"query": "espresso", "scope": GROUP, "limit": 0}, "limit"),
    ({"query": "espresso", "scope": GROUP, "limit": 101}, "limit"),
    ({"query": "espresso", "scope": GROUP, "limit": "many"}, "limit"),
])
def test_bad_search_parameters_are_422_naming_the_parameter(db: Database, client: TestClient, acme: Tenant,
                                                            params: dict[str, Any], field: str) -> None:
    _agent(db, acme)
    error = _error(_search(client, acme, "bot", **params), 422)
    assert error["code"] == "invalid_input" and error["field"] == field, error


def test_another_organizations_agent_is_404_and_its_memory_never_found(db: Database, client: TestClient,
                                                                       acme: Tenant, globex: Tenant) -> None:
    mine, theirs = _agent(db, acme), _agent(db, globex)
    _remember(client, globex, "bot", [{"user_id": GROUP, "path": "secret.md", "content": "globex espresso plans"}])
    _summary(db, globex, theirs, GROUP, "globex-chat", "globex espresso talk")
    for path in (SEARCH.format(theirs.id), EPISODES.format(theirs.id)):
        answer = client.get(path, params={"query": "espresso", "scope": GROUP}, headers=acme.headers("owner"))
        assert _error(answer, 404)["code"] == "not_found" and "globex" not in answer.text
    assert _search(client, acme, mine.id, query="espresso", scope=GROUP).json()["items"] == []
    episodes = client.get(EPISODES.format(mine.id), headers=acme.headers("owner"))
    assert episodes.status_code == 200 and episodes.json()["items"] == []


def test_a_member_searches_and_lists_its_own_persons_scope_only(db: Database, client: TestClient,
                                                               acme: Tenant) -> None:
    bot = _agent(db, acme)
    person, headers = _member_person(db, acme)
    _remember(client, acme, "bot", [{"user_id": person, "path": "mine.md", "content": "my espresso order"},
                                    {"user_id": GROUP, "path": "group.md", "content": "the group espresso order"}])
    mine = _summary(db, acme, bot, person, "dm", "espresso in the direct chat")
    _summary(db, acme, bot, GROUP, "group", "espresso in the group")

    own = client.get(SEARCH.format("bot"), params={"query": "espresso", "scope": person}, headers=headers)
    assert own.status_code == 200 and {hit["title"] for hit in own.json()["items"]} == {"mine.md", "dm #0"}
    for scope in (GROUP, "", "someone-else"):
        refused = client.get(SEARCH.format("bot"), params={"query": "espresso", "scope": scope}, headers=headers)
        assert _error(refused, 403)["code"] == "forbidden" and "own person's scope" in refused.text
    nobody = _search(client, acme, "bot", role="member", query="espresso", scope="")  # a member acting as nobody
    assert _error(nobody, 403)["code"] == "forbidden"

    listed = client.get(EPISODES.format("bot"), headers=headers).json()["items"]
    assert [summary["id"] for summary in listed] == [mine]
    assert client.get(EPISODES.format("bot"), params={"user_id": GROUP}, headers=headers).status_code == 403
    assert client.get(EPISODES.format("bot"), headers=acme.headers("member")).json()["items"] == []


def test_episodes_are_listed_by_scope_session_and_compaction_a_page_at_a_time(db: Database, client: TestClient,
                                                                              acme: Tenant) -> None:
    bot = _agent(db, acme)
    second = _summary(db, acme, bot, GROUP, "chat-b", "later", compaction=1)
    first = _summary(db, acme, bot, GROUP, "chat-b", "earlier", compaction=0)
    own = _summary(db, acme, bot, "", "cron-run", "the agent's own")
    headers = acme.headers("operator")
    page = client.get(EPISODES.format(bot.id), params={"limit": 2}, headers=headers).json()
    assert [s["id"] for s in page["items"]] == [own, first] and page["next_cursor"]
    rest = client.get(EPISODES.format(bot.id), params={"limit": 2, "cursor": page["next_cursor"]},
                      headers=headers).json()
    assert [s["id"] for s in rest["items"]] == [second] and rest["next_cursor"] is None
    item = rest["items"][0]
    assert (item["user_id"], item["session_key"], item["compaction_count"], item["summary"],
            item["promoted_at"]) == (GROUP, "chat-b", 1, "later", None)
    scoped = client.get(EPISODES.format(bot.id), params={"user_id": ""}, headers=headers).json()["items"]
    assert [s["id"] for s in scoped] == [own]
    documents_cursor = client.get(EPISODES.format(bot.id), params={"cursor": "e30.AAAA"}, headers=headers)
    assert _error(documents_cursor, 422)["code"] == "invalid_cursor"


KEY = bytes(range(32))


@pytest.fixture
def keyed_client(db: Database, tmp_path: Path) -> Iterator[TestClient]:
    """A gateway whose runtime can decrypt credentials (an embeddings model's key is one)."""
    settings = Settings(credentials_key=SecretStr(base64.b64encode(KEY).decode()))
    with TestClient(create_app(db, signing_secret=b"s" * 32, settings=settings,
                               workspace_root=tmp_path / "ws")) as test_client:
        yield test_client


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        server.meanings = {"automobile": "car", "vehicle": "car"}
        yield server


def test_with_embeddings_the_route_and_the_tool_run_the_same_hybrid_search(
        db: Database, keyed_client: TestClient, acme: Tenant, fake: FakeOpenAI, tmp_path: Path) -> None:
    cipher = CredentialCipher(KEY)
    config = {"embeddings": {"base_url": fake.url, "model": "embed-small", "credential": "emb",
                             "min_similarity": 0.15}}
    with db.transaction() as tx:
        credentials.put_credential(tx, acme.scope, cipher, "emb", b"sk-embed")
        bot = agents.create_agent(tx, acme.scope, agent_key="bot", config=config)
    _remember(keyed_client, acme, "bot", [
        {"user_id": GROUP, "path": "remembered/car.md", "content": "my car is parked on level three"},
        {"user_id": GROUP, "path": "remembered/automobile.md", "content": "the automobile club meets on fridays"},
        {"user_id": GROUP, "path": "remembered/other.md", "content": "the espresso machine is on floor two"},
        {"user_id": "someone-else", "path": "remembered/car.md", "content": "their car is blue"}])
    calls = ModelCalls(Providers(cipher=cipher))
    try:  # the event workers' embedding of the new memory
        worker = Worker(db, {MEMORY_EMBED: MemoryEmbedder(calls, bus=FAST)}, settings=FAST)
        while worker.run_once():
            pass
    finally:
        calls.close()
    embedded = len(fake.embedding_requests)

    found = _search(keyed_client, acme, "bot", query="automobile", scope=GROUP)
    assert found.status_code == 200, found.text
    titles = [hit["title"] for hit in found.json()["items"]]
    # by its word, and by meaning (no shared word): both; never another scope's
    assert set(titles) == {"remembered/automobile.md", "remembered/car.md"}, titles
    assert len(fake.embedding_requests) == embedded + 1 and fake.embedding_requests[-1]["input"] == ["automobile"]

    context = RequestContext(tenant_id=acme.scope.tenant_id, agent_id=bot.id, agent_key=bot.agent_key,
                             user_id=GROUP, sender_id="member-7")
    env = ToolEnv(db, bot, acme.slug, tmp_path, context, "test", "chat", None, 0,  # type: ignore[arg-type]
                  QueryEmbedder(Providers(cipher=cipher)))
    told = asyncio.run(search_memory(env, {"query": "automobile", "limit": 10})).splitlines()
    assert [line.split(":", 1)[0] for line in told] == [f"[memory] {title}" for title in titles]

    fake.embeddings_down = True  # the embedding fails: the words alone, like the tool's
    words = _search(keyed_client, acme, "bot", query="automobile", scope=GROUP).json()["items"]
    assert [hit["title"] for hit in words] == ["remembered/automobile.md"]
