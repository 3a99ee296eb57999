"""Agent memory: episodic summaries (one per session compaction) and memory documents with their chunks.

Memory documents are written in batches (the memory flush), all or nothing: every row is validated — IDs,
required fields, the agent belonging to the scope's tenant — before the first write, and one bad row fails the
whole batch with an error naming the row index, the field and the value, so nothing is written.  The batch
helpers live in ``_batch``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from agentfy.identity import (
    AgentId,
    EpisodicSummaryId,
    MemoryChunkId,
    MemoryDocumentId,
    OrgId,
    Scope,
    parse_id,
)
from agentfy.ids import IdCollisionError, with_id_retry
from agentfy.store.db import Sql, Tx, now
from agentfy.store.errors import ConflictError, InvalidInputError, NotFoundError, UniqueViolation
from agentfy.store.inputs import check_text
from agentfy.store.paging import Keyset
from agentfy.store.repos._batch import (
    CONTENT_MAX_LENGTH,
    PATH_MAX_LENGTH,
    SESSION_KEY_MAX_LENGTH,
    USER_ID_MAX_LENGTH,
    RowNotFoundError,
    check_json,
    json_list,
    json_values,
    parse_row_ids,
    require_agent,
    require_agents,
    row_field,
)
from agentfy.store.repos._common import load_json
from agentfy.store.schema import episodic_summaries, memory_chunks, memory_documents, memory_embeddings
from agentfy.store.sql import insert

_SUMMARY_COLUMNS: Final = (episodic_summaries.c.id, episodic_summaries.c.tenant_id, episodic_summaries.c.agent_id,
                           episodic_summaries.c.user_id, episodic_summaries.c.session_key,
                           episodic_summaries.c.compaction_count, episodic_summaries.c.summary,
                           episodic_summaries.c.created_at, episodic_summaries.c.promoted_at)
_SUMMARY_IN_TENANT: Final = episodic_summaries.c.tenant_id == sa.bindparam("tenant_id")
_SUMMARY_FIELDS: Final = ("id", "tenant_id", "agent_id", "user_id", "session_key", "compaction_count", "summary",
                          "created_at")


def _insert_summary(dialect: str) -> sa.ClauseElement:
    # No conflict target: a minted-ID collision and an existing (tenant, session, compaction) both return no
    # row; the caller tells them apart by looking the triple up.
    values: dict[str, Any] = {c: sa.bindparam(c) for c in _SUMMARY_FIELDS}
    table = episodic_summaries
    if dialect == "postgresql":
        return postgresql.insert(table).values(values).on_conflict_do_nothing().returning(table.c.id)
    return sqlite.insert(table).values(values).on_conflict_do_nothing().returning(table.c.id)


_INSERT_SUMMARY: Final = Sql(_insert_summary)
_SUMMARY_BY_KEY: Final = sa.select(*_SUMMARY_COLUMNS).where(
    _SUMMARY_IN_TENANT, episodic_summaries.c.session_key == sa.bindparam("session_key"),
    episodic_summaries.c.compaction_count == sa.bindparam("compaction_count"))
_UNPROMOTED: Final = (sa.select(*_SUMMARY_COLUMNS)
                      .where(_SUMMARY_IN_TENANT, episodic_summaries.c.agent_id == sa.bindparam("agent_id"),
                             episodic_summaries.c.user_id == sa.bindparam("user_id"),
                             episodic_summaries.c.promoted_at.is_(None))
                      .order_by(episodic_summaries.c.created_at, episodic_summaries.c.session_key,
                                episodic_summaries.c.compaction_count))
_SUMMARY_ORDER: Final = (episodic_summaries.c.user_id, episodic_summaries.c.session_key,
                          episodic_summaries.c.compaction_count)
_SUMMARY_OF_AGENT: Final = (_SUMMARY_IN_TENANT, episodic_summaries.c.agent_id == sa.bindparam("agent_id"))
#: An agent's summaries by scope, session and compaction (unique in the tenant: a stable page key).
SUMMARY_PAGES: Final[Keyset[EpisodicSummary]] = Keyset(
    sa.select(*_SUMMARY_COLUMNS).where(*_SUMMARY_OF_AGENT), _SUMMARY_ORDER,
    lambda s: (s.user_id, s.session_key, s.compaction_count))
SCOPE_SUMMARY_PAGES: Final[Keyset[EpisodicSummary]] = Keyset(
    sa.select(*_SUMMARY_COLUMNS).where(*_SUMMARY_OF_AGENT, episodic_summaries.c.user_id == sa.bindparam("user_id")),
    _SUMMARY_ORDER, lambda s: (s.user_id, s.session_key, s.compaction_count))
_SUMMARIES_IN_TENANT: Final = Sql(lambda d: sa.select(episodic_summaries.c.id).where(
    _SUMMARY_IN_TENANT, episodic_summaries.c.id.in_(json_values("ids", d))))
_MARK_PROMOTED: Final = Sql(lambda d: sa.update(episodic_summaries).where(
    _SUMMARY_IN_TENANT, episodic_summaries.c.promoted_at.is_(None),
    episodic_summaries.c.id.in_(json_values("ids", d))).values(promoted_at=sa.bindparam("now")))


@dataclass(frozen=True, slots=True)
class EpisodicSummary:
    """The summary of one session compaction, waiting to be promoted into long-term memory."""

    id: EpisodicSummaryId
    tenant_id: OrgId
    agent_id: AgentId
    user_id: str
    session_key: str
    compaction_count: int
    summary: str
    created_at: str
    promoted_at: str | None = None


def _summary(row: tuple[Any, ...]) -> EpisodicSummary:
    return EpisodicSummary(EpisodicSummaryId(row[0]), OrgId(row[1]), AgentId(row[2]), row[3], row[4], int(row[5]),
                           row[6], row[7], row[8])


def create_episodic_summary(tx: Tx, scope: Scope, *, agent_id: str, user_id: str, session_key: str,
                            compaction_count: int, summary: str) -> tuple[EpisodicSummary, bool]:
    """Record a session compaction's summary, idempotently: ``(summary, created)``.

    The key is (tenant, ``session_key``, ``compaction_count``): the episodic worker may see the same event
    twice, and the second call returns the row written by the first with ``created=False`` (its summary is
    kept; a summary regenerated on redelivery is not a change).  The same key used for another agent or
    user scope is a bug in the caller and raises :class:`ConflictError`.
    """
    agent = parse_id(agent_id, AgentId, field="agent_id")
    if type(compaction_count) is not int or compaction_count < 0:
        raise InvalidInputError(f"invalid compaction_count {compaction_count!r}: expected an integer >= 0",
                                field="compaction_count", value=compaction_count)
    values: dict[str, Any] = {
        "tenant_id": scope.tenant_id, "agent_id": agent,
        "user_id": check_text(user_id, "user_id", max_length=USER_ID_MAX_LENGTH, allow_empty=True),
        "session_key": check_text(session_key, "session_key", max_length=SESSION_KEY_MAX_LENGTH),
        "compaction_count": compaction_count,
        "summary": check_text(summary, "summary", max_length=CONTENT_MAX_LENGTH),
        "created_at": now(),
    }
    require_agent(tx, scope, agent)

    def attempt() -> tuple[EpisodicSummary, bool]:
        values["id"] = tx.db.mint("episodic-summary")
        if tx.execute(_INSERT_SUMMARY, values).fetchone() is not None:
            return EpisodicSummary(EpisodicSummaryId(values["id"]), scope.tenant_id, agent, values["user_id"],
                                   values["session_key"], compaction_count, values["summary"],
                                   values["created_at"]), True
        row = tx.one(_SUMMARY_BY_KEY, values)
        if row is None:
            raise IdCollisionError(values["id"])  # the minted ID was taken: try again with a new one
        existing = _summary(row)
        if existing.agent_id != agent or existing.user_id != values["user_id"]:
            raise ConflictError(f"session {values['session_key']!r} compaction {compaction_count} already has a "
                                f"summary for agent {existing.agent_id} and user scope {existing.user_id!r}",
                                field="session_key", value=values["session_key"])
        return existing, False

    return with_id_retry(attempt)


def list_unpromoted_summaries(tx: Tx, scope: Scope, agent_id: str, user_id: str) -> list[EpisodicSummary]:
    """The agent's summaries for one user scope not yet promoted, oldest first (the dreaming worker's input)."""
    agent = parse_id(agent_id, AgentId, field="agent_id")
    user = check_text(user_id, "user_id", max_length=USER_ID_MAX_LENGTH, allow_empty=True)
    require_agent(tx, scope, agent)
    rows = tx.all(_UNPROMOTED, {"tenant_id": scope.tenant_id, "agent_id": agent, "user_id": user})
    return [_summary(row) for row in rows]


def list_episodic_summaries(tx: Tx, scope: Scope, agent_id: str, *, user_id: str | None = None,
                            after: Sequence[Any] | None = None, limit: int | None = None) -> list[EpisodicSummary]:
    """The agent's episodic summaries (one user scope's with ``user_id``), by scope, session and compaction,
    promoted or not (all, or a page); an agent that is not the tenant's is :class:`NotFoundError`."""
    agent = require_agent(tx, scope, agent_id)
    if user_id is None:
        return SUMMARY_PAGES.fetch(tx, {"tenant_id": scope.tenant_id, "agent_id": agent}, _summary, after=after,
                                   limit=limit)
    user = check_text(user_id, "user_id", max_length=USER_ID_MAX_LENGTH, allow_empty=True)
    return SCOPE_SUMMARY_PAGES.fetch(tx, {"tenant_id": scope.tenant_id, "agent_id": agent, "user_id": user},
                                     _summary, after=after, limit=limit)


def mark_promoted(tx: Tx, scope: Scope, ids: Sequence[str]) -> int:
    """Mark summaries promoted; returns how many were newly marked (already promoted ones keep their time).

    All or nothing: every ID is parsed and must be a summary of the tenant before anything is updated.
    """
    parsed = parse_row_ids(ids, "episodic-summary", "ids")
    if not parsed:
        return 0
    ids_json = json_list(parsed)
    found = {row[0] for row in tx.all(_SUMMARIES_IN_TENANT, {"tenant_id": scope.tenant_id, "ids": ids_json})}
    for i, summary_id in enumerate(parsed):
        if summary_id not in found:
            raise RowNotFoundError(f"ids[{i}]", "episodic summary", summary_id)
    return int(tx.execute(_MARK_PROMOTED, {"tenant_id": scope.tenant_id, "ids": ids_json, "now": now()}).rowcount)


# -- memory documents and chunks ----------------------------------------------------------------------------
_DOC_COLUMNS: Final = (memory_documents.c.id, memory_documents.c.tenant_id, memory_documents.c.agent_id,
                       memory_documents.c.user_id, memory_documents.c.path, memory_documents.c.content,
                       memory_documents.c.metadata, memory_documents.c.created_at, memory_documents.c.updated_at)
_DOC_IN_TENANT: Final = memory_documents.c.tenant_id == sa.bindparam("tenant_id")
_INSERT_DOC: Final = insert(memory_documents, ["id", "tenant_id", "agent_id", "user_id", "path", "content",
                                               "metadata", "created_at", "updated_at"])
# metadata: a NULL parameter keeps the stored document's metadata (the input said nothing about it).
_UPDATE_DOC: Final = (sa.update(memory_documents)
                      .where(memory_documents.c.id == sa.bindparam("id"))
                      .values(content=sa.bindparam("content"),
                              metadata=sa.func.coalesce(sa.bindparam("metadata", type_=sa.Text),
                                                        memory_documents.c.metadata),
                              updated_at=sa.bindparam("updated_at")))
_EXISTING_DOCS: Final = Sql(lambda d: sa.select(memory_documents.c.id, memory_documents.c.user_id,
                                                memory_documents.c.path).where(
    _DOC_IN_TENANT, memory_documents.c.agent_id == sa.bindparam("agent_id"),
    # the SCOPEs as well as the paths: the unique index is (agent_id, user_id, path), and without user_id the
    # engine can only narrow by agent and then reads every document of every person the agent talks to
    memory_documents.c.user_id.in_(json_values("users", d)), memory_documents.c.path.in_(json_values("paths", d))))
_DOC_BY_ID: Final = sa.select(*_DOC_COLUMNS).where(_DOC_IN_TENANT, memory_documents.c.id == sa.bindparam("id"))
_DOC_ORDER: Final = (memory_documents.c.user_id, memory_documents.c.path)
DOC_PAGES: Final[Keyset[MemoryDocument]] = Keyset(
    sa.select(*_DOC_COLUMNS).where(_DOC_IN_TENANT, memory_documents.c.agent_id == sa.bindparam("agent_id")),
    _DOC_ORDER, lambda d: (d.user_id, d.path))
SCOPE_DOC_PAGES: Final[Keyset[MemoryDocument]] = Keyset(
    sa.select(*_DOC_COLUMNS).where(_DOC_IN_TENANT, memory_documents.c.agent_id == sa.bindparam("agent_id"),
                                   memory_documents.c.user_id == sa.bindparam("user_id")),
    _DOC_ORDER, lambda d: (d.user_id, d.path))
_DELETE_DOC: Final = sa.delete(memory_documents).where(_DOC_IN_TENANT, memory_documents.c.id == sa.bindparam("id"))

# A document's vectors are of its old text once it is rewritten: deleted with the rewrite (the writer queues the
# new text's embedding), so a search never compares an outdated vector (agentfy.store.repos.vectors).
_DELETE_VECTORS: Final = sa.delete(memory_embeddings).where(
    memory_embeddings.c.tenant_id == sa.bindparam("tenant_id"), memory_embeddings.c.document_id == sa.bindparam("id"))

_INSERT_CHUNK: Final = insert(memory_chunks, ["id", "tenant_id", "document_id", "agent_id", "seq", "content"])
_DELETE_CHUNKS: Final = sa.delete(memory_chunks).where(memory_chunks.c.tenant_id == sa.bindparam("tenant_id"),
                                                       memory_chunks.c.document_id == sa.bindparam("document_id"))
_CHUNKS: Final = (sa.select(memory_chunks.c.id, memory_chunks.c.document_id, memory_chunks.c.agent_id,
                            memory_chunks.c.seq, memory_chunks.c.content)
                  .where(memory_chunks.c.tenant_id == sa.bindparam("tenant_id"),
                         memory_chunks.c.document_id == sa.bindparam("document_id"))
                  .order_by(memory_chunks.c.seq))


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryDocumentInput:
    """One document of a batch upsert; ``(agent, user_id, path)`` identifies it.

    ``user_id`` is the memory SCOPE (``group:telegram:…``, a sender ID), empty for the agent's own memory.
    ``metadata=None`` keeps an existing document's metadata (``{}`` for a new one).
    """

    user_id: str = ""
    path: str
    content: str
    metadata: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class MemoryDocument:
    id: MemoryDocumentId
    tenant_id: OrgId
    agent_id: AgentId
    user_id: str
    path: str
    content: str
    metadata: dict[str, Any]
    created_at: str
    updated_at: str


@dataclass(frozen=True, slots=True)
class MemoryChunk:
    id: MemoryChunkId
    document_id: MemoryDocumentId
    agent_id: AgentId
    seq: int
    content: str


def _document(row: tuple[Any, ...]) -> MemoryDocument:
    return MemoryDocument(MemoryDocumentId(row[0]), OrgId(row[1]), AgentId(row[2]), row[3], row[4], row[5],
                          load_json(row[6]), row[7], row[8])


def upsert_memory_documents(tx: Tx, scope: Scope, agent_id: str,
                            documents: Sequence[MemoryDocumentInput]) -> list[MemoryDocumentId]:
    """Write a batch of the agent's memory documents; returns their IDs in input order.

    Upsert by (agent, ``user_id``, ``path``): an existing document keeps its ID and gets the new content
    (and metadata, unless ``None``) and ``updated_at``, and loses its vectors (they embedded the old text); a new
    one gets a minted ID.  Fail-fast: the agent ID,
    every field of every row and the agent's tenant are checked before the first write; a bad row raises
    :class:`InvalidIdError`, :class:`InvalidInputError` or :class:`NotFoundError` naming
    ``documents[i].<field>`` and the value, and nothing is written.  The same (user_id, path) twice in one
    batch is refused too: which content would win would be an accident of order.
    """
    agent = parse_id(agent_id, AgentId, field="agent_id")
    stamp = now()
    rows: list[dict[str, Any]] = []
    seen: dict[tuple[str, str], int] = {}
    for i, doc in enumerate(documents):
        user = check_text(doc.user_id, row_field("documents", i, "user_id"), max_length=USER_ID_MAX_LENGTH,
                          allow_empty=True)
        path = check_text(doc.path, row_field("documents", i, "path"), max_length=PATH_MAX_LENGTH)
        content = check_text(doc.content, row_field("documents", i, "content"), max_length=CONTENT_MAX_LENGTH,
                             allow_empty=True)
        metadata = None if doc.metadata is None else check_json(doc.metadata, row_field("documents", i, "metadata"))
        first = seen.setdefault((user, path), i)
        if first != i:
            field = row_field("documents", i, "path")
            raise InvalidInputError(f"invalid {field} {path!r}: the batch already writes it (user_id {user!r}) "
                                    f"at documents[{first}]", field=field, value=path)
        rows.append({"tenant_id": scope.tenant_id, "agent_id": agent, "user_id": user, "path": path,
                     "content": content, "metadata": metadata, "created_at": stamp, "updated_at": stamp})
    if not rows:
        return []
    require_agents(tx, scope, {agent: "agent_id"})

    existing = {(r[1], r[2]): r[0] for r in tx.all(_EXISTING_DOCS, {
        "tenant_id": scope.tenant_id, "agent_id": agent, "users": json_list({row["user_id"] for row in rows}),
        "paths": json_list({row["path"] for row in rows})})}
    updates: list[dict[str, Any]] = []
    inserts: list[dict[str, Any]] = []
    for row in rows:
        document_id = existing.get((row["user_id"], row["path"]))
        if document_id is None:
            if row["metadata"] is None:
                row["metadata"] = "{}"
            inserts.append(row)
        else:
            row["id"] = document_id
            updates.append(row)
    tx.executemany(_UPDATE_DOC, updates)
    tx.executemany(_DELETE_VECTORS, [{"tenant_id": scope.tenant_id, "id": row["id"]} for row in updates])
    try:
        tx.insert_minted_batch("memory-document", _INSERT_DOC, inserts)
    except UniqueViolation as error:
        if error.is_primary_key:
            raise
        raise ConflictError(f"another transaction wrote a memory document of agent {agent} at one of these "
                            "paths at the same time; retry the batch", field="path", value=None) from None
    return [MemoryDocumentId(row["id"]) for row in rows]


def get_memory_document(tx: Tx, scope: Scope, document_id: str) -> MemoryDocument:
    """The document with this ID in the scope's tenant, or :class:`NotFoundError`."""
    document_id = parse_id(document_id, "memory-document", field="document_id")
    row = tx.one(_DOC_BY_ID, {"tenant_id": scope.tenant_id, "id": document_id})
    if row is None:
        raise NotFoundError("memory document", document_id)
    return _document(row)


def list_memory_documents(tx: Tx, scope: Scope, agent_id: str, *, user_id: str | None = None,
                          after: Sequence[Any] | None = None, limit: int | None = None) -> list[MemoryDocument]:
    """The agent's documents (one user scope's with ``user_id``), by scope and path (all, or a page); an agent
    that is not the tenant's is :class:`NotFoundError`, not an empty list (an empty answer would hide the bug)."""
    agent = require_agent(tx, scope, agent_id)
    if user_id is None:
        return DOC_PAGES.fetch(tx, {"tenant_id": scope.tenant_id, "agent_id": agent}, _document, after=after,
                               limit=limit)
    user = check_text(user_id, "user_id", max_length=USER_ID_MAX_LENGTH, allow_empty=True)
    return SCOPE_DOC_PAGES.fetch(tx, {"tenant_id": scope.tenant_id, "agent_id": agent, "user_id": user}, _document,
                                 after=after, limit=limit)


def delete_memory_document(tx: Tx, scope: Scope, document_id: str) -> None:
    """Delete a document and its chunks (the FK cascades)."""
    document_id = parse_id(document_id, "memory-document", field="document_id")
    if tx.execute(_DELETE_DOC, {"tenant_id": scope.tenant_id, "id": document_id}).rowcount == 0:
        raise NotFoundError("memory document", document_id)


def replace_chunks(tx: Tx, scope: Scope, document_id: str, chunks: Sequence[str]) -> list[MemoryChunkId]:
    """Replace the document's chunks with ``chunks`` (numbered 0…n-1); returns their IDs in order.

    Every chunk is checked before the old ones are deleted, so a bad chunk leaves the document as it was.
    """
    document = get_memory_document(tx, scope, document_id)
    rows = [{"tenant_id": scope.tenant_id, "document_id": document.id, "agent_id": document.agent_id, "seq": i,
             "content": check_text(chunk, f"chunks[{i}]", max_length=CONTENT_MAX_LENGTH)}
            for i, chunk in enumerate(chunks)]
    tx.execute(_DELETE_CHUNKS, {"tenant_id": scope.tenant_id, "document_id": document.id})
    return [MemoryChunkId(i) for i in tx.insert_minted_batch("memory-chunk", _INSERT_CHUNK, rows)] if rows else []


def list_chunks(tx: Tx, scope: Scope, document_id: str) -> list[MemoryChunk]:
    """The document's chunks in order; a document that is not the tenant's is :class:`NotFoundError`."""
    document = get_memory_document(tx, scope, document_id)
    rows = tx.all(_CHUNKS, {"tenant_id": scope.tenant_id, "document_id": document.id})
    return [MemoryChunk(MemoryChunkId(r[0]), MemoryDocumentId(r[1]), AgentId(r[2]), int(r[3]), r[4]) for r in rows]

