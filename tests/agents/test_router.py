"""The router: canonical cache keys, tenant scoping, exact invalidation, TTL, is_running (both engines)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from agentfy.agents.router import Router, canonical_key, resolve_agent_id, resolve_agent_id_cached
from agentfy.identity import InvalidIdError, Scope
from agentfy.identity.context import MissingTenantError, RequestContext
from agentfy.store.db import Database
from agentfy.store.errors import NotFoundError
from agentfy.store.repos import agents
from tests.store.helpers import new_agent, new_tenant


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def store_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every store resolution the router makes."""
    calls: list[str] = []
    real = agents.resolve_agent

    def counting(tx, scope, id_or_key):  # type: ignore[no-untyped-def]
        calls.append(id_or_key)
        return real(tx, scope, id_or_key)

    monkeypatch.setattr(agents, "resolve_agent", counting)
    return calls


@pytest.fixture
def router(db: Database) -> Iterator[Router]:
    yield Router(db, clock=Clock())


def ctx(scope: Scope) -> RequestContext:
    return RequestContext(tenant_id=scope.tenant_id)


def test_key_and_id_share_one_entry_and_id_callers_hit_the_cache(db: Database, router: Router,
                                                                   store_calls: list[str]) -> None:
    acme = new_tenant(db, "acme")
    bot = new_agent(db, acme, "bot")
    by_key = router.get(ctx(acme), "bot")
    by_id = router.get(ctx(acme), bot.id)
    assert by_key is by_id and len(router) == 1
    for _ in range(5):
        assert router.get(ctx(acme), bot.id) is by_key
        assert router.get(ctx(acme), "bot") is by_key
    assert store_calls == ["bot"]  # one store round trip in all


def test_id_first_then_key_also_makes_one_entry(db: Database, router: Router, store_calls: list[str]) -> None:
    acme = new_tenant(db, "acme")
    bot = new_agent(db, acme, "bot")
    assert router.get(ctx(acme), bot.id) is router.get(ctx(acme), "bot")
    assert store_calls == [bot.id] and len(router) == 1
    assert router.get_cached(ctx(acme), "bot") is not None


def test_no_tenant_in_context_is_an_error_never_a_bare_key_lookup(router: Router, store_calls: list[str]) -> None:
    for call in (lambda: router.get(RequestContext(), "bot"), lambda: router.get_cached(RequestContext(), "bot"),
                 lambda: router.is_running(RequestContext(), "bot"),
                 lambda: resolve_agent_id(router.db, RequestContext(), "bot")):
        with pytest.raises(MissingTenantError, match="needs a tenant"):
            call()
    assert store_calls == []


def test_same_key_in_two_tenants_are_two_loops(db: Database, router: Router) -> None:
    acme, globex = new_tenant(db, "acme"), new_tenant(db, "globex")
    a, g = new_agent(db, acme, "tieu-ho"), new_agent(db, globex, "tieu-ho")
    loop_a, loop_g = router.get(ctx(acme), "tieu-ho"), router.get(ctx(globex), "tieu-ho")
    assert loop_a is not loop_g and (loop_a.agent.id, loop_g.agent.id) == (a.id, g.id)


def test_another_tenants_id_is_not_served_from_the_cache(db: Database, router: Router) -> None:
    acme, globex = new_tenant(db, "acme"), new_tenant(db, "globex")
    theirs = new_agent(db, globex, "secret")
    router.get(ctx(globex), theirs.id)  # cached for globex
    assert router.get_cached(ctx(acme), theirs.id) is None
    with pytest.raises(NotFoundError):
        router.get(ctx(acme), theirs.id)


def test_invalidation_is_an_exact_match_on_the_whole_canonical_key(db: Database, router: Router) -> None:
    acme, globex = new_tenant(db, "acme"), new_tenant(db, "globex")
    for key in ("bot", "robot", "my-bot", "bot-2"):
        new_agent(db, acme, key)
        router.get(ctx(acme), key)
    new_agent(db, globex, "bot")
    router.get(ctx(globex), "bot")
    assert router.invalidate_agent(acme.tenant_id, "bot") is True
    assert router.get_cached(ctx(acme), "bot") is None
    for survivor in ("robot", "my-bot", "bot-2"):
        assert router.get_cached(ctx(acme), survivor) is not None
    assert router.get_cached(ctx(globex), "bot") is not None
    assert router.invalidate_agent(acme.tenant_id, "bot") is False


def test_invalidate_tenant_drops_only_that_tenant(db: Database, router: Router) -> None:
    acme, globex = new_tenant(db, "acme"), new_tenant(db, "globex")
    for scope in (acme, globex):
        for key in ("a", "b"):
            new_agent(db, scope, key)
            router.get(ctx(scope), key)
    assert router.invalidate_tenant(acme.tenant_id) == 2
    assert router.get_cached(ctx(acme), "a") is None and router.get_cached(ctx(globex), "a") is not None


def test_rename_update_archive_and_delete_through_the_store_invalidate(db: Database, router: Router) -> None:
    acme = new_tenant(db, "acme")
    bot = new_agent(db, acme, "bot")
    router.get(ctx(acme), "bot")
    with db.transaction() as tx:
        agents.rename_agent(tx, acme, bot.id, "helper")
    assert router.get_cached(ctx(acme), "bot") is None and router.get_cached(ctx(acme), bot.id) is None
    assert router.get(ctx(acme), bot.id).agent.agent_key == "helper"
    with pytest.raises(NotFoundError):
        router.get(ctx(acme), "bot")
    with db.transaction() as tx:
        agents.update_agent(tx, acme, bot.id, display_name="Helper")
    assert router.get(ctx(acme), "helper").agent.display_name == "Helper"
    with db.transaction() as tx:
        agents.archive_agent(tx, acme, bot.id)
    with pytest.raises(NotFoundError):
        router.get(ctx(acme), "helper")
    other = new_agent(db, acme, "other")
    router.get(ctx(acme), other.id)
    with db.transaction() as tx:
        agents.delete_agent(tx, acme, other.id)
    assert len(router) == 0
    with pytest.raises(NotFoundError):
        router.get(ctx(acme), other.id)


def test_a_rolled_back_rename_only_costs_a_reload(db: Database, router: Router) -> None:
    acme = new_tenant(db, "acme")
    bot = new_agent(db, acme, "bot")
    router.get(ctx(acme), "bot")
    with pytest.raises(RuntimeError), db.transaction() as tx:
        agents.rename_agent(tx, acme, bot.id, "helper")
        raise RuntimeError("abort")
    assert router.get(ctx(acme), "bot").agent.id == bot.id


def test_entries_expire_after_the_ttl(db: Database) -> None:
    clock = Clock()
    router = Router(db, ttl=10, clock=clock)
    acme = new_tenant(db, "acme")
    new_agent(db, acme, "bot")
    first = router.get(ctx(acme), "bot")
    clock.now += 9.9
    assert router.get_cached(ctx(acme), "bot") is first
    clock.now += 0.2
    assert router.get_cached(ctx(acme), "bot") is None
    assert router.get(ctx(acme), "bot") is not first


def test_is_running_is_tenant_scoped(db: Database, router: Router) -> None:
    acme, globex = new_tenant(db, "acme"), new_tenant(db, "globex")
    new_agent(db, acme, "bot")
    new_agent(db, globex, "bot")
    loop = router.get(ctx(acme), "bot")
    router.get(ctx(globex), "bot")
    with loop.run():
        assert router.is_running(ctx(acme), "bot") is True
        assert router.is_running(ctx(globex), "bot") is False
    assert router.is_running(ctx(acme), "bot") is False
    assert loop.id() == "bot"


def test_resolvers_accept_id_or_key_and_refuse_other_entities(db: Database, router: Router,
                                                            store_calls: list[str]) -> None:
    acme = new_tenant(db, "acme")
    bot = new_agent(db, acme, "bot")
    for value in (bot.id, "bot"):
        assert resolve_agent_id(db, ctx(acme), value) == bot.id
        assert resolve_agent_id_cached(router, ctx(acme), value) == bot.id
    calls_before = len(store_calls)
    for _ in range(3):
        assert resolve_agent_id_cached(router, ctx(acme), bot.id) == bot.id
    assert len(store_calls) == calls_before  # the hot path stays in the cache
    with pytest.raises(InvalidIdError):
        resolve_agent_id_cached(router, ctx(acme), "team-calm-rivers-k8m4p2d7n9x3")


def test_concurrent_first_loads_keep_one_loop_per_agent(db: Database, router: Router) -> None:
    acme = new_tenant(db, "acme")
    bot = new_agent(db, acme, "bot")
    loops: list[object] = []
    start = threading.Barrier(8)

    def load(i: int) -> None:
        start.wait()
        loops.append(router.get(ctx(acme), bot.id if i % 2 else "bot"))

    threads = [threading.Thread(target=load, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(router) == 1
    assert len({id(loop) for loop in loops}) == 1 and router.get(ctx(acme), "bot") is loops[0]


def test_canonical_key_shape() -> None:
    assert canonical_key("org-calm-rivers-k8m4p2d7n9x3", "bot") == "org-calm-rivers-k8m4p2d7n9x3:bot"
