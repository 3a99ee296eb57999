"""A whole run on the OpenAI-compatible provider: an agent configured for a local fake server, its stored
credential, a streamed tool call with a typed argument, the tool's result sent back, the streamed reply."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentfy.agents.router import Router
from agentfy.permissions.channels import telegram_context
from agentfy.runtime.inbound import Reply
from agentfy.runtime.model import Usage
from agentfy.runtime.providers import Providers
from agentfy.runtime.runner import Runtime
from agentfy.store.db import Database
from agentfy.store.repos import credentials, sessions
from agentfy.store.repos.credentials import CredentialCipher
from tests.helpers.fake_openai import Completion, FakeOpenAI, FakeToolCall
from tests.helpers.tenants import make_tenant
from tests.runtime.helpers import inbound, run

KEY = "sk-org-secret"


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def test_a_run_streams_a_typed_tool_call_and_the_reply(db: Database, tmp_path: Path, fake: FakeOpenAI) -> None:
    cipher = CredentialCipher(os.urandom(32))
    acme = make_tenant(db, "acme", agent_key="bot", config={"model": {
        "provider": "openai", "base_url": fake.url, "model": "gpt-test", "credential": "llm"}})
    with db.transaction() as tx:
        credentials.put_credential(tx, acme.scope, cipher, "llm", KEY.encode())
    fake.script(Completion(tool_calls=[FakeToolCall("c1", "search_memory", {"query": "launch", "limit": 2})],
                           usage=Usage(100, 10, 64)),
                Completion(text="Nothing about the launch yet.", usage=Usage(130, 8)))
    providers = Providers(cipher=cipher)
    runtime = Runtime(db, Router(db), workspace_root=tmp_path, providers=providers)
    pieces: list[str] = []

    async def sink(piece: str) -> None:
        pieces.append(piece)

    async def go() -> Reply:
        try:
            return await runtime(inbound(acme, telegram_context(555, 1001, is_group=False, tenant_id=acme.id),
                                         "what about the launch?"), on_text=sink)
        finally:
            await providers.aclose()

    reply = run(go())
    assert reply.text == "Nothing about the launch yet." == "".join(pieces)
    assert reply.usage == Usage(230, 18, 64)
    first, second = fake.requests
    assert first.headers["authorization"] == f"Bearer {KEY}" and first.body["stream"] is True
    tool_result = second.body["messages"][-1]
    assert tool_result["role"] == "tool" and tool_result["tool_call_id"] == "c1"
    assert "no memory matches 'launch'" in tool_result["content"]
    with db.transaction(write=False) as tx:
        stored = sessions.list_messages(tx, acme.scope, reply.session_key)
    # The call is stored as a structure with its typed arguments, its result answering it by ID.
    call = next(m for m in stored if m.tool_calls)
    assert [(c.id, c.name, dict(c.arguments)) for c in call.tool_calls] == [
        ("c1", "search_memory", {"query": "launch", "limit": 2})]
    answered = next(m for m in stored if m.role == "tool")
    assert answered.tool_call_id == "c1" and answered.content == "no memory matches 'launch'"
    runtime.close()
