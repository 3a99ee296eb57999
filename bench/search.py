"""Benchmark of the full-text search (``agentfy.store.repos.search``) against the engine's own query.

Run: ``make bench-search`` (that is, ``.venv/bin/python -m bench.search``; ``--documents N`` for a smaller
test run, ``--engine sqlite`` or ``postgresql`` for one engine).

Data: ten organizations with one agent each; the measured one holds ``N`` (default 100,000) chunk-sized memory
documents (32 words each) spread over ten memory SCOPEs, the nine others ``N / 10`` each, all drawn from the
same 5,000-word vocabulary, so the index holds other tenants' and scopes' matches too.  The text is
deterministic: each document's words come from the BLAKE2 digest of its number, skewed towards the first words
of the vocabulary as natural text is.

Measured, interleaved query by query (the order swapped every round), the same queries on both sides:

* **ours**: ``search.search(kinds=["memory"], limit=10)`` in its own read transaction — input checks, the
  agent look-up, the search statement (hits with snippets);
* **raw**: the engine's plain full-text query on one driver connection with the same filters (tenant, agent,
  SCOPE), ranking, limit and snippet: FTS5 ``MATCH`` with ``bm25`` and ``snippet`` on SQLite, ``@@`` on the
  GIN-indexed ``tsvector`` with ``ts_rank`` and ``ts_headline`` on PostgreSQL.

Goals: ours within 1.5x of raw (p50 and p99), and p99 under 20 ms on PostgreSQL.

``--hybrid`` measures the hybrid search instead (``make bench-search HYBRID=1``): the measured SCOPE's documents
(``N / 10``: 10,000 at the default) get vectors of :data:`DIMENSIONS` dimensions (a hashed bag of their words,
made here, stored with ``vectors.store_vectors``), and the same queries run interleaved as ``search.search``
with the query's vector (**hybrid**: full-text and brute-force cosine over every vector of the SCOPE, merged by
rank) and without (**fts**).  What the vectors cost is the difference: reading the SCOPE's vectors (about 1 KB
each) and one matrix product.
"""

from __future__ import annotations

import argparse
import hashlib
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

from agentfy.identity import Scope
from agentfy.store.db import Database
from agentfy.store.migrate import upgrade
from agentfy.store.repos import agents, memory, orgs, search, vectors
from agentfy.store.repos.memory import MemoryDocumentInput
from bench.harness import header
from bench.postgres import scratch_database, server_problem
from bench.verdicts import record

TENANTS = 10
SCOPES = 10
WORDS_PER_DOCUMENT = 32
VOCABULARY_SIZE = 5_000
BATCH = 2_000
ROUNDS = 5
RATIO_GOAL = 1.5
PG_P99_GOAL_MS = 20.0
DIMENSIONS = 256
MODEL = "bench-embed"
_SYLLABLES = [c + v for c in "bcdfghklmnprstvz" for v in "aeiou"]  # 80 syllables: 80^2 = 6,400 two-syllable words
VOCABULARY = [_SYLLABLES[i // len(_SYLLABLES)] + _SYLLABLES[i % len(_SYLLABLES)] + ("n" if i % 3 == 0 else "")
              for i in range(VOCABULARY_SIZE)]
#: Queries: one word and two words, from common to rare ranks of the vocabulary (never the few commonest,
#: which match a third of all documents: no one searches their memory for "the").
QUERIES = ([VOCABULARY[rank] for rank in range(20, 4_000, 40)]
           + [f"{VOCABULARY[rank]} {VOCABULARY[rank * 3 % 997 + 5]}" for rank in range(25, 3_000, 60)])

RAW_SQLITE = ("SELECT d.source_id, d.label, snippet(search_fts, -1, '', '', '…', 24), bm25(search_fts, 2.0, 1.0) "
              "FROM search_fts JOIN search_entries AS d ON d.rowid = search_fts.rowid "
              "WHERE search_fts MATCH ? AND d.tenant_id = ? AND d.agent_id = ? AND d.user_id = ? "
              "AND d.kind = 'memory' ORDER BY bm25(search_fts, 2.0, 1.0) LIMIT 10")
RAW_PG = ("SELECT id, path, ts_headline('simple', content, q, "
          "'MaxWords=24, MinWords=8, StartSel=\"\", StopSel=\"\"'), score FROM ("
          "SELECT id, path, content, q, ts_rank(search_vector, q, 1) AS score "
          "FROM memory_documents, plainto_tsquery('simple', %s) AS q "
          "WHERE search_vector @@ q AND tenant_id = %s AND agent_id = %s AND user_id = %s "
          "ORDER BY score DESC LIMIT 10) AS hits ORDER BY score DESC")


def text_of(number: int) -> str:
    """Document ``number``'s 32 words: two digest bytes per word, squared, so low ranks are more common."""
    digest = hashlib.blake2b(number.to_bytes(8, "big"), digest_size=2 * WORDS_PER_DOCUMENT).digest()
    words = []
    for i in range(WORDS_PER_DOCUMENT):
        value = int.from_bytes(digest[2 * i:2 * i + 2], "big")
        words.append(VOCABULARY[value * value * VOCABULARY_SIZE // (1 << 32)])
    return " ".join(words)


def load(db: Database, documents: int) -> tuple[Scope, str]:
    """The ten organizations and their documents; returns the measured organization and its agent."""
    measured: tuple[Scope, str] | None = None
    number = 0
    started = time.perf_counter()
    for tenant in range(TENANTS):
        with db.transaction() as tx:
            scope = Scope(orgs.create_organization(tx, slug=f"bench-{tenant}", name=f"Bench {tenant}").id)
            agent = agents.create_agent(tx, scope, agent_key="bot").id
        if measured is None:
            measured = (scope, agent)
        count = documents if tenant == 0 else documents // 10
        for first in range(0, count, BATCH):
            rows = [MemoryDocumentInput(user_id=f"scope-{i % SCOPES}", path=f"notes/{i}.md",
                                        content=text_of(number + i)) for i in range(first, min(count, first + BATCH))]
            with db.transaction() as tx:
                memory.upsert_memory_documents(tx, scope, agent, rows)
        number += count
    settle(db)
    print(f"# loaded {number:,} documents ({documents:,} in the measured tenant) in "
          f"{time.perf_counter() - started:.0f} s")
    assert measured is not None
    return measured


def settle(db: Database) -> None:
    """Bring the freshly loaded database to the state it has in service: planner statistics, and on PostgreSQL
    what autovacuum does after a bulk insert — the GIN indexes' pending lists merged (until then every search
    scans them) and the rows' visibility hint bits set (until then the first reads write pages)."""
    if db.dialect == "sqlite":
        with db.transaction() as tx:
            tx.execute("ANALYZE")
        return
    url = db.engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("VACUUM ANALYZE")


def databases(engines: list[str]) -> Iterator[tuple[str, Database]]:
    """A migrated SQLite file, then a migrated PostgreSQL scratch database (skipped, with the reason, without a
    server), as ``engines`` asks; each disposed of after its turn."""
    if "sqlite" in engines:
        with tempfile.TemporaryDirectory() as tmp:
            db = Database(f"sqlite:///{Path(tmp) / 'bench.db'}")
            upgrade(db)
            yield "sqlite", db
            db.dispose()
    if "postgresql" in engines:
        problem = server_problem()
        if problem is not None:
            print(f"# postgresql: skipped, {problem}")
            return
        with scratch_database() as url:
            db = Database(url)
            upgrade(db)
            yield "postgresql", db
            db.dispose()


def raw_search(db: Database, scope: Scope, agent: str) -> tuple[Callable[[str], object], Callable[[], None]]:
    """The baseline search function on a bare driver connection, and how to close it."""
    if db.dialect == "sqlite":
        path = db.engine.url.database
        assert path
        connection: Any = sqlite3.connect(path, isolation_level=None, check_same_thread=False)

        def run_sqlite(query: str) -> object:
            return connection.execute(RAW_SQLITE, (search.fts5_match(query), scope.tenant_id, agent,
                                                   "scope-0")).fetchall()
        return run_sqlite, connection.close
    url = db.engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
    pg = psycopg.connect(url, autocommit=True)

    def run_pg(query: str) -> object:
        return pg.execute(RAW_PG, (query, scope.tenant_id, agent, "scope-0")).fetchall()
    return run_pg, pg.close


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def ours_search(db: Database, scope: Scope, agent: str) -> Callable[[str], object]:
    """The measured side: ``search.search`` over the memory of SCOPE ``scope-0``, in its own read transaction."""
    def ours(query: str) -> object:
        with db.transaction(write=False) as tx:
            return search.search(tx, scope, agent_id=agent, user_id="scope-0", query=query, kinds=["memory"],
                                 limit=10)
    return ours


def time_queries(db: Database, scope: Scope, agent: str, *,
                 rounds: int = ROUNDS) -> tuple[list[int], dict[str, list[float]]]:
    """Every query of :data:`QUERIES` on both sides (``ours``, ``raw``), ``rounds`` times, interleaved query by
    query and the order swapped every round; returns the hits per query and each side's times (ms).  Raises
    ``AssertionError`` when the two sides find different numbers of hits."""
    raw, close = raw_search(db, scope, agent)
    ours = ours_search(db, scope, agent)
    try:
        hits = [len(ours(query)) for query in QUERIES]  # type: ignore[arg-type]  # warm-up, and the sides agree
        assert hits == [len(raw(query)) for query in QUERIES]  # type: ignore[arg-type]
        times: dict[str, list[float]] = {"ours": [], "raw": []}
        for round_number in range(rounds):
            sides = [("ours", ours), ("raw", raw)]
            for query in QUERIES:
                for name, side in sides if round_number % 2 == 0 else reversed(sides):
                    start = time.perf_counter()
                    side(query)
                    times[name].append((time.perf_counter() - start) * 1000)
    finally:
        close()
    return hits, times


def measure(dialect: str, db: Database, documents: int) -> None:
    scope, agent = load(db, documents)
    hits, times = time_queries(db, scope, agent)
    p50 = {name: statistics.median(values) for name, values in times.items()}
    p99 = {name: percentile(values, 0.99) for name, values in times.items()}
    label = f"{dialect}: search, {documents:,} documents"
    print(f"{label}: {len(QUERIES)} queries x {ROUNDS} rounds, {statistics.mean(hits):.1f} hits on average")
    for stat, figures in (("p50", p50), ("p99", p99)):
        ratio = figures["ours"] / figures["raw"]
        print(f"  {stat}: ours {figures['ours']:.2f} ms vs raw {figures['raw']:.2f} ms = {ratio:.2f}x  "
              f"goal <= {RATIO_GOAL}x: {'met' if ratio <= RATIO_GOAL else 'NOT met'}")
        record("search", f"{label}, {stat}", f"{ratio:.2f}x the raw query (goal <= {RATIO_GOAL}x)",
               met=ratio <= RATIO_GOAL)
    if dialect == "postgresql":
        print(f"  p99 goal < {PG_P99_GOAL_MS:.0f} ms: {'met' if p99['ours'] < PG_P99_GOAL_MS else 'NOT met'}")
        record("search", f"{label}, p99", f"{p99['ours']:.2f} ms (goal < {PG_P99_GOAL_MS:.0f} ms)",
               met=p99["ours"] < PG_P99_GOAL_MS)


def vector_of(text: str) -> list[float]:
    """A hashed bag of ``text``'s words: what the tests' fake embeddings server answers, made in process."""
    vector = np.zeros(DIMENSIONS)
    for word in text.split():
        vector[int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "big") % DIMENSIONS] += 1.0
    return [float(v) for v in vector]


def embed_scope(db: Database, scope: Scope, agent: str) -> int:
    """Vectors for the measured SCOPE's documents, as the background embedder stores them; returns how many."""
    started = time.perf_counter()
    with db.transaction(write=False) as tx:
        sources = [vectors.Source("memory", row[0], "scope-0", row[1], row[2]) for row in tx.all(
            "SELECT id, updated_at, content FROM memory_documents WHERE tenant_id = :tenant_id AND agent_id = "
            ":agent_id AND user_id = 'scope-0'", {"tenant_id": scope.tenant_id, "agent_id": agent})]
    stored = 0
    for first in range(0, len(sources), BATCH):
        with db.transaction() as tx:
            stored += vectors.store_vectors(tx, scope, agent, model=MODEL, vectors=[
                (s, vectors.pack(vector_of(s.text))) for s in sources[first:first + BATCH]])
    settle(db)
    print(f"# embedded {stored:,} documents of the measured SCOPE in {time.perf_counter() - started:.0f} s")
    return stored


def measure_hybrid(dialect: str, db: Database, documents: int) -> None:
    scope, agent = load(db, documents)
    count = embed_scope(db, scope, agent)
    queries = {query: vectors.QueryVector(MODEL, DIMENSIONS, vectors.pack(vector_of(query))) for query in QUERIES}

    def side(vector: bool) -> Callable[[str], object]:
        def run(query: str) -> object:
            with db.transaction(write=False) as tx:
                return search.search(tx, scope, agent_id=agent, user_id="scope-0", query=query, kinds=["memory"],
                                     limit=10, vector=queries[query] if vector else None)
        return run

    hybrid, fts = side(True), side(False)
    for query in QUERIES:  # warm-up
        hybrid(query)
        fts(query)
    times: dict[str, list[float]] = {"hybrid": [], "fts": []}
    for round_number in range(ROUNDS):
        sides = [("hybrid", hybrid), ("fts", fts)]
        for query in QUERIES:
            for name, run in sides if round_number % 2 == 0 else reversed(sides):
                start = time.perf_counter()
                run(query)
                times[name].append((time.perf_counter() - start) * 1000)
    print(f"{dialect}: hybrid search, {count:,} vectors of {DIMENSIONS} dimensions in the SCOPE "
          f"({documents:,} documents in the tenant): {len(QUERIES)} queries x {ROUNDS} rounds")
    for stat, figure in (("p50", statistics.median), ("p99", lambda v: percentile(v, 0.99))):
        print(f"  {stat}: hybrid {figure(times['hybrid']):.2f} ms vs fts {figure(times['fts']):.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=100_000, help="documents of the measured tenant")
    parser.add_argument("--engine", choices=["sqlite", "postgresql"], action="append",
                        help="one engine (repeat for both; default both)")
    parser.add_argument("--hybrid", action="store_true", help="the hybrid search (vectors) against full-text only")
    arguments = parser.parse_args()
    header("hybrid search: full-text and vectors vs full-text only" if arguments.hybrid
           else "full-text search: ours vs the engine's raw query")
    for dialect, db in databases(arguments.engine or ["sqlite", "postgresql"]):
        (measure_hybrid if arguments.hybrid else measure)(dialect, db, arguments.documents)


if __name__ == "__main__":
    main()
