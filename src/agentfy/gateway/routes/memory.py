"""``/v1/agents/{agent}/memory``: an agent's memory documents — batch upsert (fail-fast) and list — its
episodic summaries, and the search of one memory SCOPE that the agent itself runs.

The search is :func:`agentfy.store.repos.search.search` over :data:`~agentfy.store.repos.search.MEMORY_KINDS`,
every word required, with the query's vector from the runtime's query embedder when the agent has an embeddings
model (the hybrid search, words and meaning) — exactly what the agent's ``search_memory`` tool calls — so what a
person finds here is what the agent finds in that chat.  Without an embeddings model it is the full-text search
alone, in one thread hop as any read.  The SCOPE is never inferred: the caller names it (``scope``) in the format
the tools use (:func:`agentfy.permissions.ownership.memory_scope`: a person's user ID in their DM,
``group:…``/``guild:…`` in a group chat, empty for the agent's own memory), and the access policy decides
whether the caller may read it.

The batch is all or nothing: every row is validated before the first write (a partial success would leave the
caller guessing which rows were stored), and one bad row fails the request with an error naming
``documents[i].<field>`` and the value; nothing is written.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Final, cast

from fastapi import APIRouter, Query

from agentfy.events.embedding import publish_embedding_due
from agentfy.gateway.deps import Authenticated, Call
from agentfy.gateway.pages import Cursor, Limit, Page, empty, paged
from agentfy.gateway.resolve import agent_in, agent_loop
from agentfy.gateway.routes.agents import AgentRef
from agentfy.gateway.routes.schemas_data import (
    EpisodicSummaryOut,
    MemoryBatchIn,
    MemoryBatchOut,
    MemoryDocumentOut,
    MemoryHitKind,
    MemorySearchHitOut,
    MemorySearchOut,
    renamed,
)
from agentfy.gateway.routing import ApiRoute
from agentfy.identity import InvalidAgentKeyError, InvalidIdError
from agentfy.permissions.access import require_scope, scope_filter
from agentfy.runtime.embeddings import EmbeddingsSettings
from agentfy.runtime.providers import ModelConfigError
from agentfy.store.errors import StoreError
from agentfy.store.inputs import TEXT_PATTERN
from agentfy.store.paging import DEFAULT_LIMIT
from agentfy.store.repos import memory, search
from agentfy.store.repos._batch import USER_ID_MAX_LENGTH
from agentfy.store.repos.agents import Agent
from agentfy.store.repos.memory import EpisodicSummary, MemoryDocument, MemoryDocumentInput
from agentfy.store.repos.search import SearchHit
from agentfy.store.repos.vectors import QueryVector

router = APIRouter(tags=["memory"], route_class=ApiRoute)
#: Matches of a search when the caller does not say (the store's bound, :data:`search.LIMIT_MAX`, is the most).
SEARCH_LIMIT: Final = 10


def document_out(document: MemoryDocument) -> MemoryDocumentOut:
    return MemoryDocumentOut(id=document.id, agent_id=document.agent_id, user_id=document.user_id,
                             path=document.path, content=document.content, metadata=document.metadata,
                             created_at=document.created_at, updated_at=document.updated_at)


def _rename(field: str) -> str:
    return "agent" if field == "agent_id" else field


@router.post("/agents/{agent}/memory/documents:batch-upsert", operation_id="memory.documents.upsert",
             response_model=MemoryBatchOut)
def upsert_documents(agent: AgentRef, body: MemoryBatchIn, call: Authenticated) -> MemoryBatchOut:
    """Upsert a batch of the agent's memory documents by (user_id, path), all or nothing (operator or higher).

    Returns the IDs in input order (an existing document keeps its ID). A bad row — an empty path, a
    NUL character, the same (user_id, path) twice — is 422 naming ``documents[i].<field>``; an agent that
    is missing or another organization's is 404; nothing is written either way.
    """
    for document in body.documents:
        require_scope(call.who, "memory.documents.upsert", document.user_id)
    rows = [MemoryDocumentInput(user_id=d.user_id, path=d.path, content=d.content, metadata=d.metadata)
            for d in body.documents]
    try:
        with call.gateway.db.transaction() as tx:
            found = agent_in(tx, call.who, agent)
            ids = memory.upsert_memory_documents(tx, call.who.scope, found.id, rows)
            publish_embedding_due(tx, call.who.scope, found, ids)  # vectors after the commit (event workers)
    except (InvalidIdError, InvalidAgentKeyError, StoreError) as error:
        translated = renamed(error, _rename)
        if translated is error:
            raise
        raise translated from error
    return MemoryBatchOut(ids=list(ids))


@router.get("/agents/{agent}/memory/documents", operation_id="memory.documents.list",
            response_model=Page[MemoryDocumentOut])
def list_documents(agent: AgentRef, call: Authenticated, *,
                   user_id: Annotated[str | None, Query(max_length=USER_ID_MAX_LENGTH, json_schema_extra={
                       "pattern": TEXT_PATTERN}, description=(
                       "Only this memory scope's documents (empty: the agent's own)."))] = None,
                   limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None) -> Page[MemoryDocumentOut]:
    """The agent's memory documents, by scope and path (one scope's with ``user_id``), a page at a time: only those
    of scopes the caller may see (a member: its own person's; naming another scope is 403)."""
    nothing, scope = scope_filter(call.who, "memory.documents.list", user_id)
    agent_id = agent_loop(call.gateway, call.who, agent).agent.id
    if nothing:
        return empty()
    return paged(call.gateway, call.who, "memory.documents.list", memory.DOC_PAGES, fetch=lambda tx, **page:
                 memory.list_memory_documents(tx, call.who.scope, agent_id, user_id=scope, **page), out=document_out,
                 limit=limit, cursor=cursor)


def summary_out(summary: EpisodicSummary) -> EpisodicSummaryOut:
    return EpisodicSummaryOut(id=summary.id, agent_id=summary.agent_id, user_id=summary.user_id,
                              session_key=summary.session_key, compaction_count=summary.compaction_count,
                              summary=summary.summary, created_at=summary.created_at,
                              promoted_at=summary.promoted_at)


@router.get("/agents/{agent}/memory/episodes", operation_id="memory.episodes.list",
            response_model=Page[EpisodicSummaryOut])
def list_episodes(agent: AgentRef, call: Authenticated, *,
                  user_id: Annotated[str | None, Query(max_length=USER_ID_MAX_LENGTH, json_schema_extra={
                      "pattern": TEXT_PATTERN}, description=(
                      "Only this memory scope's summaries (empty: the agent's own)."))] = None,
                  limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None) -> Page[EpisodicSummaryOut]:
    """The agent's episodic summaries — one per compaction of a conversation, promoted into long-term memory or
    still waiting — by scope, session and compaction, a page at a time: only those of scopes the caller may see
    (a member: its own person's; naming another scope is 403)."""
    nothing, scope = scope_filter(call.who, "memory.episodes.list", user_id)
    agent_id = agent_loop(call.gateway, call.who, agent).agent.id
    if nothing:
        return empty()
    return paged(call.gateway, call.who, "memory.episodes.list", memory.SUMMARY_PAGES, fetch=lambda tx, **page:
                 memory.list_episodic_summaries(tx, call.who.scope, agent_id, user_id=scope, **page),
                 out=summary_out, limit=limit, cursor=cursor)


def hit_out(hit: SearchHit) -> MemorySearchHitOut:
    kind = cast(MemoryHitKind, hit.kind)  # the search asked for MEMORY_KINDS only
    return MemorySearchHitOut(kind=kind, id=hit.id, title=hit.title, snippet=hit.snippet, score=hit.score)


@router.get("/agents/{agent}/memory/search", operation_id="memory.search", response_model=MemorySearchOut)
async def search_memory(agent: AgentRef, call: Authenticated, *,
                  query: Annotated[str, Query(min_length=1, max_length=search.QUERY_MAX_LENGTH, json_schema_extra={
                      "pattern": TEXT_PATTERN}, description=(
                      "The words to look for, not only blanks; a match contains every one (case-insensitive; "
                      "punctuation separates words and is never query syntax)."))],
                  scope: Annotated[str, Query(max_length=USER_ID_MAX_LENGTH, json_schema_extra={
                      "pattern": TEXT_PATTERN}, description=(
                      "The memory SCOPE to search, as the agent's tools name it: a person's user ID (their "
                      "direct chat), `group:…` or `guild:…` (a group chat), or empty (`scope=`) for the "
                      "agent's own memory. Required: one scope per search, like the agent's."))],
                  limit: Annotated[int, Query(ge=1, le=search.LIMIT_MAX, description=(
                      f"At most this many matches (default {SEARCH_LIMIT})."))] = SEARCH_LIMIT) -> MemorySearchOut:
    """Search one memory SCOPE of the agent — its memory documents and episodic summaries — with the search the
    agent's ``search_memory`` tool runs in a chat of that scope, best first: by words and, when the agent has an
    embeddings model, by meaning too (the query embedded by that model first, its tokens recorded as the agent's
    usage; a failed embedding leaves the words alone).

    A member may search its own person's scope only (another is 403); a blank query is 422 naming ``query``;
    an agent that is missing or another organization's is 404.
    """
    first = await asyncio.to_thread(_text_search_or_agent, call, agent, scope, query, limit)
    if not isinstance(first, Agent):
        return MemorySearchOut(items=[hit_out(hit) for hit in first])
    runtime = call.gateway.runtime
    assert runtime is not None  # _text_search_or_agent searched by text otherwise
    vector = await runtime.embedder.vector_for(call.gateway.db, first, query)  # no transaction open
    hits = await asyncio.to_thread(_search, call, first.id, scope, query, limit, vector=vector)
    return MemorySearchOut(items=[hit_out(hit) for hit in hits])


def _embeds_queries(call: Call, agent: Agent) -> bool:
    """Whether a search of ``agent``'s memory embeds its query: an embeddings model the runtime can call.  A
    stored configuration a search could not use is the tool's text search too."""
    try:
        return call.gateway.runtime is not None and EmbeddingsSettings.of(agent) is not None
    except ModelConfigError:
        return False


def _text_search_or_agent(call: Call, ref: str, scope: str, query: str, limit: int) -> list[SearchHit] | Agent:
    """The checks and, for an agent without embeddings, the whole search (one thread hop, as before); else the
    agent, whose query is embedded next, outside any transaction and thread."""
    require_scope(call.who, "memory.search", scope)
    agent = agent_loop(call.gateway, call.who, ref).agent
    if _embeds_queries(call, agent):
        return agent
    return _search(call, agent.id, scope, query, limit, vector=None)


def _search(call: Call, agent_id: str, scope: str, query: str, limit: int, *,
            vector: QueryVector | None) -> list[SearchHit]:
    """:func:`agentfy.store.repos.search.search` of memory, as the agent's tool calls it; errors name the
    request's ``scope``."""
    try:
        with call.gateway.db.transaction(write=False) as tx:
            return search.search(tx, call.who.scope, agent_id=agent_id, user_id=scope or None, query=query,
                                 kinds=search.MEMORY_KINDS, limit=limit, vector=vector)
    except StoreError as error:
        translated = renamed(error, lambda field: "scope" if field == "user_id" else field)
        if translated is error:
            raise
        raise translated from error
