"""The router: canonical cache keys, tenant scoping, exact invalidation, TTL, is_running (both engines)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from agentfy.agents.router import Router, canonical_key
from agentfy.identity import InvalidIdError, Scope
from agentfy.identity.context import MissingTenantError, RequestContext
from agentfy.store.db import Database
from agentfy.store.errors import NotFoundError
from agentfy.store.repos import agents, orgs
from tests.helpers.tenants import make_tenant
from tests.store.helpers import new_agent


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
    acme = make_tenant(db, "acme").scope
    bot = new_agent(db, acme, "bot")
    by_key = router.get(ctx(acme), "bot")
    by_id = router.get(ctx(acme), bot.id)
    assert by_key is by_id and len(router) == 1
    for _ in range(5):
        assert router.get(ctx(acme), bot.id) is by_key
        assert router.get(ctx(acme), "bot") is by_key
    assert store_calls == ["bot"]  # one store round trip in all


def test_id_first_then_key_also_makes_one_entry(db: Database, router: Router, store_calls: list[str]) -> None:
    acme = make_tenant(db, "acme").scope
    bot = new_agent(db, acme, "bot")
    assert router.get(ctx(acme), bot.id) is router.get(ctx(acme), "bot")
    assert store_calls == [bot.id] and len(router) == 1
    assert router.get_cached(ctx(acme), "bot") is not None


def test_no_tenant_in_context_is_an_error_never_a_bare_key_lookup(router: Router, store_calls: list[str]) -> None:
    for call in (lambda: router.get(RequestContext(), "bot"), lambda: router.get_cached(RequestContext(), "bot"),
                 lambda: router.is_running(RequestContext(), "bot")):
        with pytest.raises(MissingTenantError, match="needs a tenant"):
            call()
    assert store_calls == []


def test_same_key_in_two_tenants_are_two_loops(db: Database, router: Router) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    a, g = new_agent(db, acme, "tieu-ho"), new_agent(db, globex, "tieu-ho")
    loop_a, loop_g = router.get(ctx(acme), "tieu-ho"), router.get(ctx(globex), "tieu-ho")
    assert loop_a is not loop_g and (loop_a.agent.id, loop_g.agent.id) == (a.id, g.id)


def test_another_tenants_id_is_not_served_from_the_cache(db: Database, router: Router) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    theirs = new_agent(db, globex, "secret")
    router.get(ctx(globex), theirs.id)  # cached for globex
    assert router.get_cached(ctx(acme), theirs.id) is None
    with pytest.raises(NotFoundError):
        router.get(ctx(acme), theirs.id)


def test_invalidation_is_an_exact_match_on_the_whole_canonical_key(db: Database, router: Router) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
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
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    for scope in (acme, globex):
        for key in ("a", "b"):
            new_agent(db, scope, key)
            router.get(ctx(scope), key)
    assert router.invalidate_tenant(acme.tenant_id) == 2
    assert router.get_cached(ctx(acme), "a") is None and router.get_cached(ctx(globex), "a") is not None


def test_rename_update_archive_and_delete_through_the_store_invalidate(db: Database, router: Router) -> None:
    acme = make_tenant(db, "acme").scope
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
    acme = make_tenant(db, "acme").scope
    bot = new_agent(db, acme, "bot")
    router.get(ctx(acme), "bot")
    with pytest.raises(RuntimeError), db.transaction() as tx:
        agents.rename_agent(tx, acme, bot.id, "helper")
        raise RuntimeError("abort")
    assert router.get(ctx(acme), "bot").agent.id == bot.id


def test_entries_expire_after_the_ttl_but_the_loop_is_kept(db: Database, store_calls: list[str]) -> None:
    clock = Clock()
    router = Router(db, ttl=10, clock=clock)
    acme = make_tenant(db, "acme").scope
    new_agent(db, acme, "bot")
    first = router.get(ctx(acme), "bot")
    clock.now += 9.9
    assert router.sweep() == 0 and router.get_cached(ctx(acme), "bot") is first
    clock.now += 0.2
    assert router.sweep() == 1 and router.get_cached(ctx(acme), "bot") is None
    assert router.get(ctx(acme), "bot") is first  # reloaded from the store, same loop (run state)
    assert store_calls == ["bot", "bot"]


def test_a_sweep_drops_exactly_the_expired_entries_oldest_first(db: Database, store_calls: list[str]) -> None:
    """Entries expire in the order they were cached; a refresh (a reload after a change) puts an entry at the
    back of the line, so a sweep never drops a fresher entry nor keeps a stale one behind a live one."""
    clock = Clock()
    router = Router(db, ttl=10, clock=clock)
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    for key in ("a", "b", "c"):
        new_agent(db, acme, key)
    new_agent(db, globex, "a")
    router.get(ctx(acme), "a")
    clock.now += 3
    router.get(ctx(acme), "b")
    router.get(ctx(globex), "a")
    clock.now += 3
    router.get(ctx(acme), "c")
    router.invalidate_agent(acme.tenant_id, "a")  # a change: the next look-up caches it afresh, last in line
    router.get(ctx(acme), "a")
    clock.now += 4.5  # 10.5 after a, 7.5 after b and globex's a, 4.5 after c and the refreshed a
    assert router.sweep() == 0 and len(router) == 4
    clock.now += 3  # 10.5 after b and globex's a
    assert router.sweep() == 2 and len(router) == 2
    assert router.get_cached(ctx(acme), "b") is None and router.get_cached(ctx(globex), "a") is None
    assert router.get_cached(ctx(acme), "a") is not None and router.get_cached(ctx(acme), "c") is not None
    clock.now += 3
    assert router.sweep() == 2 and len(router) == 0 and router.sweep() == 0


def test_dropping_a_tenant_leaves_every_other_tenants_entries_loops_and_expiry(db: Database) -> None:
    clock = Clock()
    router = Router(db, ttl=10, clock=clock)
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    for key in ("a", "b"):
        new_agent(db, acme, key)
        new_agent(db, globex, key)
    globex_loops = [router.get(ctx(globex), key) for key in ("a", "b")]
    acme_a = router.get(ctx(acme), "a")
    router.get(ctx(acme), "b")
    assert router.invalidate_tenant(acme.tenant_id) == 2 and len(router) == 2
    assert router.invalidate_tenant(acme.tenant_id) == 0
    assert router.get_cached(ctx(acme), "a") is None
    assert router.get(ctx(acme), "a") is not acme_a  # the loop went with the tenant: a fresh one
    assert [router.get_cached(ctx(globex), key) for key in ("a", "b")] == globex_loops
    clock.now += 11
    assert router.sweep() == 3 and len(router) == 0


def test_run_state_survives_expiry_rename_update_and_a_flush(db: Database) -> None:
    clock = Clock()
    router = Router(db, ttl=10, clock=clock)
    acme = make_tenant(db, "acme").scope
    bot = new_agent(db, acme, "bot")
    loop = router.get(ctx(acme), "bot")
    with loop.run():
        clock.now += 11  # the entry expires
        router.sweep()
        assert router.is_running(ctx(acme), "bot") is True
        with db.transaction() as tx:
            agents.rename_agent(tx, acme, bot.id, "helper")
        assert router.is_running(ctx(acme), "helper") is True and router.is_running(ctx(acme), "bot") is False
        with db.transaction() as tx:
            agents.update_agent(tx, acme, bot.id, display_name="Helper")
        router.clear()  # what a lost change-feed connection does
        again = router.get(ctx(acme), bot.id)
        assert again is loop and again.running
        assert (again.agent.agent_key, again.agent.display_name) == ("helper", "Helper")  # the fresh record
    assert router.is_running(ctx(acme), "helper") is False


def test_deleting_an_organization_drops_its_agents_and_loops(db: Database, router: Router) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    new_agent(db, acme, "bot")
    new_agent(db, globex, "bot")
    held = router.get(ctx(acme), "bot")
    router.get(ctx(globex), "bot")
    with db.transaction() as tx:
        orgs.delete_organization(tx, acme.tenant_id)
    assert router.get_cached(ctx(acme), "bot") is None and router.get_cached(ctx(globex), "bot") is not None
    with pytest.raises(NotFoundError):
        router.get(ctx(acme), "bot")
    assert held.agent.tenant_id == acme.tenant_id and len(router) == 1


@pytest.mark.parametrize("not_a_tenant", ["acme", "", "agent-calm-rivers-k8m4p2d7n9x3", "org-calm-river-k8m4p2d7n9x3"])
def test_invalidating_with_something_that_is_not_a_tenant_id_raises(router: Router, not_a_tenant: str) -> None:
    with pytest.raises(InvalidIdError, match="tenant_id"):
        router.invalidate_agent(not_a_tenant, "bot")
    with pytest.raises(InvalidIdError, match="tenant_id"):
        router.invalidate_tenant(not_a_tenant)


def test_a_load_that_raced_with_a_change_is_returned_but_not_cached(db: Database, router: Router,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    acme = make_tenant(db, "acme").scope
    bot = new_agent(db, acme, "bot")
    real = agents.resolve_agent

    def read_then_change(tx, scope, id_or_key):  # type: ignore[no-untyped-def]
        found = real(tx, scope, id_or_key)  # the old row, read before the rename commits
        with db.transaction() as other:
            agents.rename_agent(other, acme, bot.id, "helper")
        return found

    monkeypatch.setattr(agents, "resolve_agent", read_then_change)
    assert router.get(ctx(acme), "bot").agent.agent_key == "bot"  # what the read saw
    monkeypatch.setattr(agents, "resolve_agent", real)
    assert router.get_cached(ctx(acme), "bot") is None  # but the stale row was never cached
    with pytest.raises(NotFoundError):
        router.get(ctx(acme), "bot")


def test_nothing_is_cached_while_the_feed_cannot_tell_us_about_changes(db: Database, router: Router) -> None:
    acme = make_tenant(db, "acme").scope
    new_agent(db, acme, "bot")
    db.changes.lost("test: the listening connection is down")
    try:
        router.get(ctx(acme), "bot")
        assert router.get_cached(ctx(acme), "bot") is None
    finally:
        db.changes.listening("test: back")
    router.get(ctx(acme), "bot")
    assert router.get_cached(ctx(acme), "bot") is not None


def test_is_running_is_tenant_scoped(db: Database, router: Router) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    new_agent(db, acme, "bot")
    new_agent(db, globex, "bot")
    loop = router.get(ctx(acme), "bot")
    router.get(ctx(globex), "bot")
    with loop.run():
        assert router.is_running(ctx(acme), "bot") is True
        assert router.is_running(ctx(globex), "bot") is False
    assert router.is_running(ctx(acme), "bot") is False
    assert loop.id() == "bot"


def test_look_ups_accept_id_or_key_and_refuse_other_entities(db: Database, router: Router,
                                                            store_calls: list[str]) -> None:
    acme = make_tenant(db, "acme").scope
    bot = new_agent(db, acme, "bot")
    for value in (bot.id, "bot"):
        with db.transaction(write=False) as tx:
            assert agents.resolve_agent(tx, acme, value).id == bot.id
        assert router.get(ctx(acme), value).agent.id == bot.id
    calls_before = len(store_calls)
    for _ in range(3):
        assert router.get(ctx(acme), bot.id).agent.id == bot.id
    assert len(store_calls) == calls_before  # the hot path stays in the cache
    with pytest.raises(InvalidIdError):
        router.get(ctx(acme), "team-calm-rivers-k8m4p2d7n9x3")


def test_concurrent_first_loads_keep_one_loop_per_agent(db: Database, router: Router) -> None:
    acme = make_tenant(db, "acme").scope
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
