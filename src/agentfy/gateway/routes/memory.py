"""``/v1/agents/{agent}/memory``: an agent's memory documents — batch upsert (fail-fast) and list.

The batch is all or nothing: every row is validated before the first write (a partial success would leave the
caller guessing which rows were stored), and one bad row fails the request with an error naming
``documents[i].<field>`` and the value; nothing is written.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from agentfy.gateway.deps import Authenticated
from agentfy.gateway.pages import Cursor, Limit, Page, empty, paged
from agentfy.gateway.resolve import agent_in, agent_loop
from agentfy.gateway.routes.agents import AgentRef
from agentfy.gateway.routes.schemas_data import (
    MemoryBatchIn,
    MemoryBatchOut,
    MemoryDocumentOut,
    renamed,
)
from agentfy.gateway.routing import ApiRoute
from agentfy.identity import InvalidAgentKeyError, InvalidIdError
from agentfy.permissions.access import require_scope, scope_filter
from agentfy.store.errors import StoreError
from agentfy.store.inputs import TEXT_PATTERN
from agentfy.store.paging import DEFAULT_LIMIT
from agentfy.store.repos import memory
from agentfy.store.repos._batch import USER_ID_MAX_LENGTH
from agentfy.store.repos.memory import MemoryDocument, MemoryDocumentInput

router = APIRouter(tags=["memory"], route_class=ApiRoute)


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
            agent_id = agent_in(tx, call.who, agent).id
            ids = memory.upsert_memory_documents(tx, call.who.scope, agent_id, rows)
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
