"""Embeddings of an agent's memory: the vectors of its memory documents and episodic summaries, and the
nearest of them to a query's vector.

A row of ``memory_embeddings`` is one source (a memory document or an episodic summary) embedded by one
model: the source's tenant, agent and memory SCOPE (copied from the source, so the candidates of a search are
filtered in SQL, like the full-text search's), the model's name, the vector's dimensions and the vector as
float32 little-endian bytes scaled to unit length (:func:`pack`), so a cosine similarity is a dot product.
``source_version`` is the source's ``updated_at`` (a summary's ``created_at``) when its text was read.  A
rewritten document's vectors are deleted in the rewriting transaction (:func:`~agentfy.store.repos.memory.
upsert_memory_documents`), and a vector is stored only if its source still has the version it was read at,
checked under a share lock of the source row on PostgreSQL (a concurrent rewrite waits for the store, then its
delete sees the vector) — so the search compares current vectors only, without joining the sources.

Why brute force: PostgreSQL here has no ``vector`` type (the pgvector extension is not installed), and both
engines store the same bytes.  :func:`nearest` reads the vectors of the candidates — one tenant, agent, SCOPE,
model and dimension, in SQL — and scores them with one matrix product (numpy); at 10,000 candidates that is
a few milliseconds of arithmetic after the read (docs/benchmarks.md).  With pgvector, the ``vector`` column
would become ``vector(n)`` with an HNSW index and the scoring an ``ORDER BY vector <=> :query LIMIT k`` in the
same filtered statement; the callers would not change.

Vectors of another model or dimension than the query's are never read: the model and the dimension are
conditions of the statement.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

import numpy as np

from agentfy.identity import AgentId, Scope, parse_id
from agentfy.store.db import Tx, now
from agentfy.store.errors import InvalidInputError
from agentfy.store.inputs import check_text
from agentfy.store.repos._batch import USER_ID_MAX_LENGTH, require_agent
from agentfy.store.repos.agents import Agent

SourceKind = Literal["memory", "episodic"]
SOURCE_KINDS: Final[tuple[SourceKind, ...]] = ("memory", "episodic")
#: How much of a memory document is embedded: its path and the start of its content (characters).  An
#: embeddings model reads a few thousand tokens at most; the start of a note says what it is about.
EMBEDDED_CHARS: Final = 8_000
#: The longest vector stored (OpenAI's largest model has 3,072 dimensions).
DIMENSIONS_MAX: Final = 8_192
MODEL_MAX_LENGTH: Final = 200
#: How long a vector hit's snippet is: the start of its text, in words.
SNIPPET_WORDS: Final = 24


@dataclass(frozen=True, slots=True)
class Source:
    """A source waiting for its vector: what it is, its SCOPE, the version read and the text to embed."""

    kind: SourceKind
    id: str
    user_id: str
    version: str
    text: str


@dataclass(frozen=True, slots=True)
class QueryVector:
    """A query's vector (:func:`pack`ed) and the model that made it: only vectors of that model and dimension
    are compared with it, and a hit needs at least ``min_similarity`` (cosine)."""

    model: str
    dimensions: int
    data: bytes
    min_similarity: float = 0.0


@dataclass(frozen=True, slots=True)
class VectorHit:
    """One near source: its kind, ID, title (a path, or a session key and compaction number), the start of
    its text, and its cosine similarity to the query."""

    kind: SourceKind
    id: str
    title: str
    snippet: str
    similarity: float


def pack(values: Sequence[float]) -> bytes:
    """``values`` as unit-length float32 little-endian bytes; :class:`InvalidInputError` for an empty vector,
    one that is too long, a value that is not a finite number, or all zeros (it has no direction)."""
    if not values or len(values) > DIMENSIONS_MAX:
        raise InvalidInputError(f"invalid vector of {len(values)} values: expected 1 to {DIMENSIONS_MAX}",
                                field="vector", value=len(values))
    if not all(type(v) in (float, int) and math.isfinite(v) for v in values):
        raise InvalidInputError("invalid vector: expected finite numbers only", field="vector", value=None)
    array = np.asarray(values, dtype=np.float64)
    norm = float(np.linalg.norm(array))
    if norm == 0.0:
        raise InvalidInputError("invalid vector: all of its values are zero", field="vector", value=None)
    return (array / norm).astype("<f4").tobytes()


# -- what waits for a vector --------------------------------------------------------------------------------
# A document waits when it has no vector of the model, or one of an older version; a summary never changes.
_PENDING: Final = (
    "SELECT 'memory', d.id, d.user_id, d.updated_at, d.path || :newline || substr(d.content, 1, :chars) "
    "FROM memory_documents AS d LEFT JOIN memory_embeddings AS e ON e.source_id = d.id AND e.model = :model "
    "WHERE d.tenant_id = :tenant_id AND d.agent_id = :agent_id "
    "AND (e.source_id IS NULL OR e.source_version <> d.updated_at) "
    "UNION ALL "
    "SELECT 'episodic', s.id, s.user_id, s.created_at, substr(s.summary, 1, :chars) "
    "FROM episodic_summaries AS s LEFT JOIN memory_embeddings AS e ON e.source_id = s.id AND e.model = :model "
    "WHERE s.tenant_id = :tenant_id AND s.agent_id = :agent_id AND e.source_id IS NULL "
    "ORDER BY 2 LIMIT :limit")


def memory_filter(agent_id: str | Agent, user_id: str | None) -> tuple[str, str]:
    """The agent and memory SCOPE a search of memory filters by, checked: the agent's ID (an agent's record, a
    run's already resolved, gives its own), and the SCOPE as stored (``None``, the agent's own memory, is the
    empty scope).  The one set-up of the full-text search (:func:`agentfy.store.repos.search.search`) and of
    :func:`nearest`, so both filter alike."""
    agent = agent_id.id if isinstance(agent_id, Agent) else parse_id(agent_id, AgentId, field="agent_id")
    user = "" if user_id is None else check_text(user_id, "user_id", max_length=USER_ID_MAX_LENGTH,
                                                 allow_empty=True)
    return agent, user


def _check_model(model: object) -> str:
    return check_text(model, "model", max_length=MODEL_MAX_LENGTH)


def pending_sources(tx: Tx, scope: Scope, agent_id: str, *, model: str, limit: int) -> list[Source]:
    """The agent's memory documents and summaries without a current vector of ``model``, at most ``limit``
    (by ID); an agent that is not the tenant's is :class:`~agentfy.store.errors.NotFoundError`."""
    agent = require_agent(tx, scope, agent_id)
    rows = tx.all(_PENDING, {"tenant_id": scope.tenant_id, "agent_id": agent, "model": _check_model(model),
                             "chars": EMBEDDED_CHARS, "newline": "\n", "limit": limit})
    return [Source(row[0], row[1], row[2], row[3], row[4]) for row in rows]


_PENDING_ONE: Final[dict[SourceKind, str]] = {
    "memory": ("SELECT 'memory', d.id, d.user_id, d.updated_at, d.path || :newline || substr(d.content, 1, :chars) "
               "FROM memory_documents AS d LEFT JOIN memory_embeddings AS e ON e.source_id = d.id "
               "AND e.model = :model WHERE d.tenant_id = :tenant_id AND d.agent_id = :agent_id AND d.id = :id "
               "AND (e.source_id IS NULL OR e.source_version <> d.updated_at)"),
    "episodic": ("SELECT 'episodic', s.id, s.user_id, s.created_at, substr(s.summary, 1, :chars) "
                 "FROM episodic_summaries AS s LEFT JOIN memory_embeddings AS e ON e.source_id = s.id "
                 "AND e.model = :model WHERE s.tenant_id = :tenant_id AND s.agent_id = :agent_id AND s.id = :id "
                 "AND e.source_id IS NULL"),
}
_KIND_OF_PREFIX: Final[dict[str, SourceKind]] = {"memory-document": "memory", "episodic-summary": "episodic"}


def kind_of(source_id: str) -> SourceKind | None:
    """Which kind of source ``source_id`` names (by its prefix), ``None`` for anything else."""
    for prefix, kind in _KIND_OF_PREFIX.items():
        if source_id.startswith(prefix + "-"):
            return kind
    return None


def pending_of(tx: Tx, scope: Scope, agent_id: str, *, model: str, ids: Sequence[str]) -> list[Source]:
    """Those of ``ids`` (memory documents and summaries of the agent) without a current vector of ``model``,
    in the order given; an ID of another agent, tenant or kind, or of a source gone since, is left out."""
    agent = require_agent(tx, scope, agent_id)
    name = _check_model(model)
    found: list[Source] = []
    for source_id in dict.fromkeys(ids):
        kind = kind_of(source_id) if isinstance(source_id, str) else None
        if kind is None:
            continue
        row = tx.one(_PENDING_ONE[kind], {"tenant_id": scope.tenant_id, "agent_id": agent, "model": name,
                                          "id": source_id, "chars": EMBEDDED_CHARS, "newline": "\n"})
        if row is not None:
            found.append(Source(row[0], row[1], row[2], row[3], row[4]))
    return found


# -- writing vectors ------------------------------------------------------------------------------------------
_VERSION: Final[dict[SourceKind, str]] = {
    "memory": "SELECT updated_at, user_id FROM memory_documents WHERE tenant_id = :tenant_id AND agent_id = "
              ":agent_id AND id = :id",
    "episodic": "SELECT created_at, user_id FROM episodic_summaries WHERE tenant_id = :tenant_id AND agent_id = "
                ":agent_id AND id = :id",
}
_DELETE: Final = "DELETE FROM memory_embeddings WHERE tenant_id = :tenant_id AND source_id = :id AND model = :model"
_INSERT: Final = (
    "INSERT INTO memory_embeddings (source_id, tenant_id, agent_id, user_id, kind, document_id, summary_id, "
    "source_version, model, dimensions, vector, created_at) VALUES (:id, :tenant_id, :agent_id, :user_id, :kind, "
    ":document_id, :summary_id, :version, :model, :dimensions, :vector, :created_at)")


def store_vectors(tx: Tx, scope: Scope, agent_id: str, *, model: str,
                  vectors: Sequence[tuple[Source, bytes]]) -> int:
    """Write each source's vector (:func:`pack`ed) for ``model``, replacing the one it had; returns how many
    were written.  A source that changed since it was read (another version) or is gone is skipped: its
    newer text is embedded by a later pass, and an old text's vector is never stored as the new one's."""
    agent = parse_id(agent_id, AgentId, field="agent_id")
    name = _check_model(model)
    stamp = now()
    written = 0
    for source, data in vectors:
        if not data or len(data) % 4 or len(data) // 4 > DIMENSIONS_MAX:
            raise InvalidInputError(f"invalid vector of {len(data)} bytes for {source.id}: expected float32 values",
                                    field="vector", value=len(data))
        key = {"tenant_id": scope.tenant_id, "agent_id": agent, "id": source.id}
        lock = " FOR SHARE" if tx.db.dialect == "postgresql" else ""
        current = tx.one(_VERSION[source.kind] + lock, key)
        if current is None or current[0] != source.version:
            continue
        tx.execute(_DELETE, {**key, "model": name})
        tx.execute(_INSERT, {**key, "user_id": current[1], "kind": source.kind,
                             "document_id": source.id if source.kind == "memory" else None,
                             "summary_id": source.id if source.kind == "episodic" else None,
                             "version": source.version, "model": name, "dimensions": len(data) // 4,
                             "vector": data, "created_at": stamp})
        written += 1
    return written


# -- the nearest sources --------------------------------------------------------------------------------------
# Candidates: the SCOPE's vectors of the model and dimension (all current: see the module docstring).  The kinds'
# list is filled from SOURCE_KINDS only, never from input.
_CANDIDATES: Final = (
    "SELECT e.kind, e.source_id, e.vector FROM memory_embeddings AS e "
    "WHERE e.tenant_id = :tenant_id AND e.agent_id = :agent_id AND e.user_id = :user_id AND e.model = :model "
    "AND e.dimensions = :dimensions AND e.kind IN ({kinds})")
# The hits' titles and texts, in one statement: the IDs are a JSON list (one statement text for any count).
_IDS_IN: Final = {"postgresql": "IN (SELECT json_array_elements_text(CAST(:ids AS json)))",
                  "sqlite": "IN (SELECT value FROM json_each(:ids))"}
_TITLES: Final = (
    "SELECT id, path, substr(content, 1, :chars) FROM memory_documents WHERE tenant_id = :tenant_id AND id {ids} "
    "UNION ALL "
    "SELECT id, session_key || ' #' || compaction_count, substr(summary, 1, :chars) FROM episodic_summaries "
    "WHERE tenant_id = :tenant_id AND id {ids}")


def _snippet(text: str) -> str:
    return " ".join(text.split()[:SNIPPET_WORDS])


def nearest(tx: Tx, scope: Scope, *, agent_id: str, user_id: str | None, query: QueryVector,
            kinds: Sequence[SourceKind] = SOURCE_KINDS, limit: int = 10) -> list[VectorHit]:
    """The ``limit`` sources of the SCOPE ``user_id`` (``None``: the agent's own memory) nearest to ``query``,
    nearest first, each at least ``query.min_similarity``; only vectors of ``query.model`` and its dimension
    are read.  An agent that is not the tenant's is :class:`~agentfy.store.errors.NotFoundError`."""
    agent, user = memory_filter(agent_id, user_id)
    wanted = tuple(kind for kind in SOURCE_KINDS if kind in kinds)
    if len(query.data) != 4 * query.dimensions or not wanted:
        return []
    require_agent(tx, scope, agent)
    rows = tx.all_binary(_CANDIDATES.format(kinds=", ".join(f"'{kind}'" for kind in wanted)),
                  {"tenant_id": scope.tenant_id, "agent_id": agent, "user_id": user,
                   "model": _check_model(query.model), "dimensions": query.dimensions})
    if not rows:
        return []
    matrix = np.frombuffer(b"".join([row[2] for row in rows]), dtype="<f4").reshape(len(rows), query.dimensions)
    scores = matrix @ np.frombuffer(query.data, dtype="<f4")
    count = min(limit, len(rows))
    best = np.argpartition(-scores, count - 1)[:count] if count < len(rows) else np.arange(len(rows))
    ranked = [(similarity, source_id, kind) for similarity, source_id, kind in sorted(
        ((float(scores[i]), rows[i][1], rows[i][0]) for i in best), key=lambda s: (-s[0], s[1]))
        if similarity >= query.min_similarity]
    if not ranked:
        return []
    sql = _TITLES.format(ids=_IDS_IN["postgresql" if tx.db.dialect == "postgresql" else "sqlite"])
    found = {row[0]: row for row in tx.all(sql, {"tenant_id": scope.tenant_id, "chars": 2_000,
                                                 "ids": json.dumps([source_id for _, source_id, _ in ranked])})}
    return [VectorHit(kind, source_id, found[source_id][1], _snippet(found[source_id][2] or ""), similarity)
            for similarity, source_id, kind in ranked if source_id in found]
