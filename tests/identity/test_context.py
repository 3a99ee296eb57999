"""The request context: typed fields, actor vs scope, and no leak between tasks or threads."""

from __future__ import annotations

import asyncio
import threading

import pytest

from agentfy.identity import InvalidAgentKeyError, InvalidIdError
from agentfy.identity import context as rc
from agentfy.identity.context import MissingTenantError, RequestContext

ORG = "org-calm-rivers-k8m4p2d7n9x3"
OTHER_ORG = "org-brave-suns-0123456789ab"
AGENT = "agent-calm-rivers-k8m4p2d7n9x3"


def test_bind_sets_each_field_for_the_block_only() -> None:
    with rc.bind(tenant_id=ORG, agent_id=AGENT, agent_key="bot", tool_agent_key="tool-bot",
                 user_id="group:telegram:-100", sender_id="42", role="member"):
        context = rc.current()
        assert context.tenant_id == ORG
        assert context.agent_id == AGENT
        assert context.agent_key == "bot"
        assert context.tool_agent_key == "tool-bot"
        assert context.user_id == "group:telegram:-100"
        assert context.sender_id == "42"
        assert context.role == "member"
        assert context.actor_id == "42"
        assert str(context.scope()) == ORG
    assert rc.current() == rc.EMPTY


def test_actor_falls_back_to_the_user_when_there_is_no_sender() -> None:
    with rc.bind(user_id="http-user"):
        assert rc.current().actor_id == "http-user"
    assert RequestContext(user_id="group:telegram:1", sender_id="7").actor_id == "7"


def test_ids_and_keys_cannot_be_swapped_when_binding() -> None:
    with pytest.raises(InvalidIdError):
        rc.bind(agent_id="bot").__enter__()
    with pytest.raises(InvalidAgentKeyError):
        rc.bind(agent_key=AGENT).__enter__()
    with pytest.raises(InvalidIdError):
        rc.bind(tenant_id="acme").__enter__()  # a slug is never a tenant
    with pytest.raises(ValueError, match="role 'root' is unknown"):
        rc.bind(role="root").__enter__()
    with pytest.raises(TypeError):
        rc.bind(nonsense=1).__enter__()
    assert rc.current() == rc.EMPTY


def test_scope_without_tenant_is_an_error() -> None:
    with pytest.raises(MissingTenantError):
        RequestContext().scope()


def test_context_never_leaks_between_concurrent_asyncio_tasks() -> None:
    async def worker(tenant: str, seen: list[str | None]) -> None:
        with rc.bind(tenant_id=tenant):
            for _ in range(50):
                await asyncio.sleep(0)
                seen.append(rc.current().tenant_id)

    async def main() -> tuple[list[str | None], list[str | None], str | None]:
        a: list[str | None] = []
        b: list[str | None] = []
        await asyncio.gather(worker(ORG, a), worker(OTHER_ORG, b))
        return a, b, rc.current().tenant_id

    a, b, after = asyncio.run(main())
    assert set(a) == {ORG} and set(b) == {OTHER_ORG} and after is None


def test_context_never_leaks_between_threads() -> None:
    seen: dict[str, set[str | None]] = {}
    barrier = threading.Barrier(2)

    def worker(tenant: str) -> None:
        with rc.bind(tenant_id=tenant):
            barrier.wait()
            seen[tenant] = {rc.current().tenant_id for _ in range(1000)}

    with rc.bind(tenant_id=ORG):
        other = threading.Thread(target=lambda: seen.setdefault("fresh", {rc.current().tenant_id}))
        other.start()
        other.join()
    threads = [threading.Thread(target=worker, args=(t,)) for t in (ORG, OTHER_ORG)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {"fresh": {None}, ORG: {ORG}, OTHER_ORG: {OTHER_ORG}}


def test_use_restores_the_previous_context() -> None:
    rebuilt = RequestContext(tenant_id=ORG, sender_id="7")  # type: ignore[arg-type]
    with rc.use(rebuilt):
        assert rc.current() is rebuilt
    assert rc.current() == rc.EMPTY
