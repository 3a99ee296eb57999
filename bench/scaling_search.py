"""The search curve: full-text memory search latency (p50, p99) at 10k, 100k and 1M documents in the searched
SCOPE, on SQLite and PostgreSQL, beside the engine's raw query.

The data, the queries and both sides are :mod:`bench.search`'s (its text generator, :data:`~bench.search.QUERIES`,
:func:`~bench.search.time_queries`: ``search.search`` against the engine's own full-text query with the same
filters, interleaved query by query).  What differs is the layout: here the searched SCOPE (``scope-0`` of the
measured agent) holds all ``N`` documents, and another organization holds :data:`OTHER_DOCUMENTS` (the same at
every point; fewer in a trial run below that size), so the index also holds another tenant's matches.  One
database grows from point to point: the documents of the next size are added to those already there, then the
database is settled
(:func:`~bench.search.settle`: ``ANALYZE``, or ``VACUUM ANALYZE`` on PostgreSQL) before the queries run.

The rows go in with the drivers' bulk paths, not ``upsert_memory_documents`` (whose per-batch check for existing
paths is part of what a write costs, not of what a search costs): ``COPY`` on PostgreSQL (the generated
``tsvector`` column and its GIN index are maintained by the server as rows arrive), ``executemany`` on SQLite
(the triggers fill the FTS5 index).  IDs are minted by the database handle, as the store mints them.
"""

from __future__ import annotations

import sqlite3
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psycopg

from agentfy.identity import Scope
from agentfy.store.db import Database, now
from agentfy.store.repos import agents, orgs
from bench.scaling_plot import figure, log_x, log_y, save
from bench.scaling_table import Table, ms
from bench.search import QUERIES, databases, percentile, settle, text_of, time_queries

SIZES = (10_000, 100_000, 1_000_000)
OTHER_DOCUMENTS = 10_000
ROUNDS = 3
BATCH = 20_000
_COLUMNS = ("id", "tenant_id", "agent_id", "user_id", "path", "content", "metadata", "created_at", "updated_at")


@dataclass(frozen=True)
class Point:
    """One engine at one size: p50 and p99 of ours and of the raw query (ms), hits, and the load's seconds."""

    engine: str
    documents: int
    ours_p50: float
    ours_p99: float
    raw_p50: float
    raw_p99: float
    hits: float
    load_seconds: float


class Loader:
    """Appends memory documents to one agent's SCOPE with the driver's bulk path; numbers continue across calls
    (and across agents: every document's text is distinct)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.number = 0

    def add(self, scope: Scope, agent: str, user_id: str, count: int) -> None:
        for first in range(0, count, BATCH):
            size = min(BATCH, count - first)
            stamp = now()
            rows = [(self.db.mint("memory-document"), scope.tenant_id, agent, user_id,
                     f"notes/{self.number + i}.md", text_of(self.number + i), "{}", stamp, stamp)
                    for i in range(size)]
            self.number += size
            self._write(rows)

    def _write(self, rows: list[tuple[str, ...]]) -> None:
        if self.db.dialect == "sqlite":
            path = self.db.engine.url.database
            assert path
            connection = sqlite3.connect(path, isolation_level=None)
            try:
                connection.execute("BEGIN IMMEDIATE")
                connection.executemany(f"INSERT INTO memory_documents ({', '.join(_COLUMNS)}) "
                                       f"VALUES ({', '.join('?' for _ in _COLUMNS)})", rows)
                connection.execute("COMMIT")
            finally:
                connection.close()
            return
        with psycopg.connect(self.db.conninfo) as connection, connection.cursor() as cursor, \
                cursor.copy(f"COPY memory_documents ({', '.join(_COLUMNS)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)


def others(sizes: tuple[int, ...]) -> int:
    """The other tenant's documents: :data:`OTHER_DOCUMENTS`, or the smallest size if that is smaller."""
    return min(OTHER_DOCUMENTS, *sizes)


def organization(db: Database, slug: str) -> tuple[Scope, str]:
    """A new organization with one agent; returns its scope and the agent's ID."""
    with db.transaction() as tx:
        scope = Scope(orgs.create_organization(tx, slug=slug, name=slug).id)
        return scope, agents.create_agent(tx, scope, agent_key="bot").id


def measure(*, engines: list[str], sizes: tuple[int, ...] = SIZES, rounds: int = ROUNDS,
            log: Callable[[str], None] = print) -> list[Point]:
    """Every engine's points, each engine on one database that grows through ``sizes``."""
    points: list[Point] = []
    for engine, db in databases(engines):
        loader = Loader(db)
        scope, agent = organization(db, "measured")
        other_scope, other_agent = organization(db, "other")
        started = time.perf_counter()
        loader.add(other_scope, other_agent, "scope-0", others(sizes))
        loaded = 0
        for size in sorted(sizes):
            loader.add(scope, agent, "scope-0", size - loaded)
            loaded = size
            settle(db)
            load_seconds = time.perf_counter() - started
            log(f"# search: {engine}, {size:,} documents loaded and settled in {load_seconds:.0f} s")
            hits, times = time_queries(db, scope, agent, rounds=rounds)
            points.append(Point(engine, size, statistics.median(times["ours"]), percentile(times["ours"], 0.99),
                                statistics.median(times["raw"]), percentile(times["raw"], 0.99),
                                statistics.mean(hits), load_seconds))
            log(f"# search: {engine}, {size:,}: p50 {points[-1].ours_p50:.2f} ms, p99 {points[-1].ours_p99:.2f} ms")
            started = time.perf_counter()
    return points


def table(points: list[Point], rounds: int) -> Table:
    sizes = tuple(p.documents for p in points)
    result = Table(f"full-text memory search: {len(QUERIES)} queries x {rounds} rounds, limit 10, "
                   f"documents in the searched SCOPE (+{others(sizes):,} of another tenant)",
                   ["engine", "documents", "ours p50 ms", "ours p99 ms", "raw p50 ms", "raw p99 ms", "p50 vs raw",
                    "hits", "load+settle s"])
    for p in points:
        result.add(p.engine, f"{p.documents:,}", ms(p.ours_p50), ms(p.ours_p99), ms(p.raw_p50), ms(p.raw_p99),
                   f"{p.ours_p50 / p.raw_p50:.2f}x", f"{p.hits:.1f}", f"{p.load_seconds:.0f}")
    result.notes.append("load+settle s: adding that size's new documents (bulk insert, index upkeep) and "
                        "(VACUUM) ANALYZE")
    return result


def plot(points: list[Point], path: Path) -> Path:
    engines = sorted({p.engine for p in points})
    fig, axes = figure("Full-text memory search latency vs documents in the searched SCOPE",
                       " and ".join({"sqlite": "SQLite (FTS5)", "postgresql": "PostgreSQL 15 (GIN tsvector)"}[e]
                                    for e in engines), 2)
    colours = {"sqlite": "tab:blue", "postgresql": "tab:green"}
    sizes = sorted({p.documents for p in points})
    for axis, (stat, ours, raw) in zip(axes, (("p50", "ours_p50", "raw_p50"), ("p99", "ours_p99", "raw_p99")),
                                       strict=True):
        for engine in engines:
            mine = sorted((p for p in points if p.engine == engine), key=lambda p: p.documents)
            xs = [p.documents for p in mine]
            axis.plot(xs, [getattr(p, ours) for p in mine], "o-", color=colours[engine], label=f"{engine}: agentfy")
            axis.plot(xs, [getattr(p, raw) for p in mine], "s--", color=colours[engine], alpha=0.6,
                      label=f"{engine}: raw query")
        log_y(axis, f"{stat} latency per search, ms (log)")
        axis.set_title(f"{stat} (solid: agentfy, dashed: the engine's raw query)", fontsize=10)
        log_x(axis, "memory documents in the searched SCOPE (log)", sizes)
        axis.legend(fontsize=8)
    return save(fig, path)
