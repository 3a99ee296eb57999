"""The router and change-feed curve: what a look-up and a change cost at 1k, 100k and 1M cached agents.

One process, an embedded SQLite database that grows from point to point (the agents go in with one
``executemany`` of :mod:`bench.store`'s plain ``INSERT``; the router and the feed are the same code on
PostgreSQL, only the miss path's store look-up differs).  At each size a fresh :class:`Router` holds every agent
(each loaded once through its miss path), and a sample of :data:`SAMPLE` agents drawn at random over all of them
is measured (drawn with replacement, so every size times the same number of look-ups; in order, the first
agents' entries would stay in the CPU caches):

* **get by key / by ID**: cached ``Router.get`` against an inline ``d[(tenant, value)]`` on a plain dict holding
  the same number of entries (:mod:`bench.router`'s runners; the floor any cache in Python pays);
* **apply**: a change notification as the listening connection hands it over — ``Change.decode`` of an
  ``agent.updated`` payload, then ``ChangeFeed.arrived``, which tells the router (the entry is dropped); the
  rate per change over :data:`CHANGES` distinct agents (fewer at the smallest size), in rounds alternating with
* **re-load**: the next ``Router.get`` of each of those agents (a miss: the store look-up and the re-cache),
  against the uncached store look-up alone (:func:`bench.router.store_by`);
* **org deleted**: one ``org.deleted`` change of another organization with a single cached agent — the router
  drops every entry of that tenant (``Router.invalidate_tenant``) — and **sweep**: one TTL sweep with nothing
  expired (``Router.sweep``), each the median of :data:`SINGLE_RUNS` runs, in milliseconds.  Both run under the
  router's lock, which every miss and every change notification waits for, so they must cost what they drop,
  not what the cache holds: the curve shows whether they stay flat as the cache grows.
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agentfy.agents.router import Router
from agentfy.identity import Scope
from agentfy.identity.context import RequestContext
from agentfy.ids import format_id
from agentfy.store.changefeed import Change
from agentfy.store.db import Database, now
from agentfy.store.migrate import upgrade
from agentfy.store.repos import agents, orgs
from bench.harness import compare
from bench.router import dict_lookup, router_by, store_by
from bench.scaling_plot import figure, log_x, log_y, save
from bench.scaling_table import Table, per_second, ratio
from bench.store import INSERT_AGENT, Plain

SIZES = (1_000, 100_000, 1_000_000)
ROUNDS = 5
SAMPLE = 100_000
#: Changes per apply/re-load round: each re-load is a store look-up.
CHANGES = 5_000
SINGLE_RUNS = 5
BATCH = 50_000


@dataclass(frozen=True)
class Point:
    """One size: rates (per second) of each operation and its baseline, and the two operations under the
    router's lock that must not grow with the cache (ms)."""

    agents: int
    by_key: float
    by_id: float
    floor: float
    apply: float
    reload: float
    store: float
    org_deleted_ms: float
    sweep_ms: float
    warm_seconds: float


def add_agents(db: Database, scope: Scope, first: int, count: int) -> None:
    """Agents ``agent-{first}`` … in ``scope``, with one ``executemany`` per batch on a driver connection."""
    plain = Plain(db)
    try:
        insert = plain.sql(INSERT_AGENT)
        for start in range(first, first + count, BATCH):
            stamp = now()
            rows = [(format_id("agent"), scope.tenant_id, f"agent-{i}", f"agent-{i}", stamp, stamp)
                    for i in range(start, min(first + count, start + BATCH))]
            plain.begin()
            plain.cur.executemany(insert, rows)
            plain.commit()
    finally:
        plain.conn.close()


def single(run: Callable[[], object], prepare: Callable[[], object]) -> float:
    """The median of :data:`SINGLE_RUNS` runs of ``run`` (ms), each after ``prepare``."""
    times = []
    for _ in range(SINGLE_RUNS):
        prepare()
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def measure_size(db: Database, scope: Scope, other: Scope, size: int, rounds: int) -> Point:
    tenant = scope.tenant_id
    ctx, other_ctx = RequestContext(tenant_id=tenant), RequestContext(tenant_id=other.tenant_id)
    with db.transaction(write=False) as tx:
        rows = tx.all("SELECT agent_key, id FROM agents WHERE tenant_id = :tenant_id",  # type: ignore[arg-type]
                      {"tenant_id": tenant})
    keys, ids = [row[0] for row in rows], [row[1] for row in rows]
    router = Router(db, ttl=3600)
    started = time.perf_counter()
    for key in keys:
        router.get(ctx, key)
    router.get(other_ctx, "bot")
    warm_seconds = time.perf_counter() - started
    plain: dict[tuple[str, str], object] = {(tenant, key): router.get(ctx, key) for key in keys}
    draw = random.Random(size)
    looked_up = draw.choices(range(len(keys)), k=SAMPLE)  # with replacement: every size times SAMPLE look-ups
    sample_keys, sample_ids = [keys[i] for i in looked_up], [ids[i] for i in looked_up]
    n = SAMPLE
    picked = draw.sample(range(len(keys)), min(CHANGES, len(keys)))  # distinct: each change drops an entry
    by_key = compare("get by key", router_by(router, ctx, sample_keys), dict_lookup(plain, tenant, sample_keys),
                     n=n, rounds=rounds)
    by_id = compare("get by ID", router_by(router, ctx, sample_ids), dict_lookup(plain, tenant, sample_keys),
                    n=n, rounds=rounds)
    changed = [(key, Change("agent", "updated", tenant, ids[i], key, key).encode())
               for i, key in ((i, keys[i]) for i in picked)]
    feed = db.changes
    applies: list[float] = []
    reloads: list[float] = []
    stores: list[float] = []
    store = store_by(db, scope, [key for key, _ in changed])
    for number in range(rounds):
        started = time.perf_counter()
        for _key, payload in changed:
            feed.arrived(Change.decode(payload))
        applies.append(len(changed) / (time.perf_counter() - started))
        if router.get_cached(ctx, changed[0][0]) is not None:
            raise AssertionError("the change feed did not drop the entry")
        get = router_by(router, ctx, [key for key, _ in changed])
        first, second = (get, store) if number % 2 == 0 else (store, get)
        timed = []
        for run in (first, second):
            started = time.perf_counter()
            run(len(changed))
            timed.append(len(changed) / (time.perf_counter() - started))
        reload_rate, store_rate = timed if number % 2 == 0 else timed[::-1]
        reloads.append(reload_rate)
        stores.append(store_rate)
    deleted = Change("org", "deleted", other.tenant_id, other.tenant_id).encode()
    org_deleted_ms = single(lambda: feed.arrived(Change.decode(deleted)), lambda: router.get(other_ctx, "bot"))
    sweep_ms = single(router.sweep, lambda: None)
    if len(router) < size:
        raise AssertionError(f"the router holds {len(router)} agents, not {size}")
    return Point(size, by_key.candidate_rate, by_id.candidate_rate,
                 statistics.median([by_key.baseline_rate, by_id.baseline_rate]), statistics.median(applies),
                 statistics.median(reloads), statistics.median(stores), org_deleted_ms, sweep_ms, warm_seconds)


def measure(*, sizes: tuple[int, ...] = SIZES, rounds: int = ROUNDS,
            log: Callable[[str], None] = print) -> list[Point]:
    points: list[Point] = []
    with tempfile.TemporaryDirectory() as tmp:
        db = Database(f"sqlite:///{Path(tmp) / 'bench.db'}")
        upgrade(db)
        with db.transaction() as tx:
            scope = Scope(orgs.create_organization(tx, slug="bench", name="Bench").id)
            other = Scope(orgs.create_organization(tx, slug="other", name="Other").id)
            agents.create_agent(tx, other, agent_key="bot")
        made = 0
        try:
            for size in sorted(sizes):
                started = time.perf_counter()
                add_agents(db, scope, made, size - made)
                made = size
                with db.transaction() as tx:
                    tx.execute("ANALYZE")
                log(f"# router: {size:,} agents inserted in {time.perf_counter() - started:.0f} s")
                points.append(measure_size(db, scope, other, size, rounds))
                log(f"# router: {size:,} agents: get by key {points[-1].by_key:,.0f}/s, "
                    f"cache warmed in {points[-1].warm_seconds:.0f} s")
        finally:
            db.dispose()
    return points


def table(points: list[Point], rounds: int) -> Table:
    result = Table(f"router and change feed, SQLite store, one process (medians of {rounds} rounds; "
                   f"sample of {SAMPLE:,} agents, {CHANGES:,} changes)",
                   ["agents", "get key/s", "get ID/s", "dict/s", "key vs dict", "apply/s", "re-load/s",
                    "store/s", "re-load vs store", "org deleted ms", "sweep ms"])
    for p in points:
        result.add(f"{p.agents:,}", per_second(p.by_key), per_second(p.by_id), per_second(p.floor),
                   ratio(p.by_key / p.floor), per_second(p.apply), per_second(p.reload), per_second(p.store),
                   ratio(p.reload / p.store), f"{p.org_deleted_ms:,.3f}", f"{p.sweep_ms:,.3f}")
    result.notes.append("apply: Change.decode + ChangeFeed.arrived of an agent.updated payload (the router drops "
                        "the entry); re-load: the next Router.get (a miss); store: resolve_agent uncached")
    result.notes.append("org deleted / sweep: one org.deleted change of another tenant (1 agent) / one TTL sweep "
                        "(nothing expired), under the router's lock: each costs what it drops (a per-tenant index; "
                        "entries expire in the order they were cached)")
    return result


def plot(points: list[Point], path: Path) -> Path:
    fig, (rates, walks) = figure("Agent router and change feed vs cached agents (one process)",
                                 "SQLite store (router and feed: the same code on PostgreSQL)", 2)
    points = sorted(points, key=lambda p: p.agents)
    xs = [p.agents for p in points]
    for label, values, style in (("Router.get by key (cached)", [p.by_key for p in points], "o-"),
                                 ("Router.get by ID (cached)", [p.by_id for p in points], "^-"),
                                 ("dict d[(tenant, key)] (floor)", [p.floor for p in points], "k--"),
                                 ("change applied (decode + feed.arrived)", [p.apply for p in points], "s-"),
                                 ("re-load after a change (miss)", [p.reload for p in points], "D-"),
                                 ("uncached store look-up", [p.store for p in points], "x:")):
        rates.plot(xs, values, style, label=label)
    log_y(rates, "operations per second (log)")
    rates.set_title("per look-up / per change", fontsize=10)
    walks.plot(xs, [p.org_deleted_ms for p in points], "o-", color="tab:red",
               label="org.deleted of a 1-agent tenant")
    walks.plot(xs, [p.sweep_ms for p in points], "s-", color="tab:purple", label="TTL sweep, nothing expired")
    log_y(walks, "ms per operation (log), lock held")
    walks.set_title("under the router's lock", fontsize=10)
    for axis in (rates, walks):
        log_x(axis, "cached agents (log)", xs)
        axis.legend(fontsize=7)
    return save(fig, path)
