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


def test_helpers_bind_and_read_each_field() -> None:
    with rc.with_tenant_id(ORG), rc.with_agent_id(AGENT), rc.with_agent_key("bot"), \
            rc.with_tool_agent_key("tool-bot"), rc.with_user_id("group:telegram:-100"), \
            rc.with_sender_id("42"), rc.with_role("member"):
        assert rc.tenant_id_from_context() == ORG
        assert rc.agent_id_from_context() == AGENT
        assert rc.agent_key_from_context() == "bot"
        assert rc.tool_agent_key_from_context() == "tool-bot"
        assert rc.user_id_from_context() == "group:telegram:-100"
        assert rc.sender_id_from_context() == "42"
        assert rc.role_from_context() == "member"
        assert rc.actor_id() == "42"
        assert str(rc.current().scope()) == ORG
    assert rc.current() == rc.EMPTY


def test_actor_falls_back_to_the_user_when_there_is_no_sender() -> None:
    with rc.with_user_id("http-user"):
        assert rc.actor_id() == "http-user"
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
        with rc.with_tenant_id(tenant):
            for _ in range(50):
                await asyncio.sleep(0)
                seen.append(rc.tenant_id_from_context())

    async def main() -> tuple[list[str | None], list[str | None], str | None]:
        a: list[str | None] = []
        b: list[str | None] = []
        await asyncio.gather(worker(ORG, a), worker(OTHER_ORG, b))
        return a, b, rc.tenant_id_from_context()

    a, b, after = asyncio.run(main())
    assert set(a) == {ORG} and set(b) == {OTHER_ORG} and after is None


def test_context_never_leaks_between_threads() -> None:
    seen: dict[str, set[str | None]] = {}
    barrier = threading.Barrier(2)

    def worker(tenant: str) -> None:
        with rc.with_tenant_id(tenant):
            barrier.wait()
            seen[tenant] = {rc.tenant_id_from_context() for _ in range(1000)}

    with rc.with_tenant_id(ORG):
        other = threading.Thread(target=lambda: seen.setdefault("fresh", {rc.tenant_id_from_context()}))
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
