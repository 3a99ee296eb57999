"""Models of the data routes (sessions, vault, memory documents, knowledge graph) and the helpers they share.

The helpers keep the error contract exact where a value reaches the store under another name than the
request gave it:

* :mod:`agentfy.gateway.resolve` resolves an agent named by ID **or** key (the one resolver every entry
  point uses) and names the request's own field in its errors (``entities[3].agent``, ``agent_id`` of a
  form), so a bad row of a batch is reported by its index.
* :func:`renamed` rewrites a store error's field (``entities[3].agent_id`` → ``entities[3].agent``) and turns
  a batch row that names a missing row into a 404 that keeps the field (the plain not-found body has none).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, Field, StrictInt, StrictStr

from agentfy.gateway.resolve import not_found
from agentfy.gateway.routes.schemas import (  # re-exported for the data routes
    JsonObject,
    Label,
    Strict,
    agent_ref_field,
    id_field,
    label_field,
    text_field,
)
from agentfy.identity import InvalidAgentKeyError, InvalidIdError
from agentfy.ids import id_pattern
from agentfy.store.errors import ConflictError, InvalidInputError
from agentfy.store.repos._batch import (
    CONTENT_MAX_LENGTH,
    PATH_MAX_LENGTH,
    SESSION_KEY_MAX_LENGTH,
    USER_ID_MAX_LENGTH,
    RowNotFoundError,
)
from agentfy.store.repos.knowledge import NAME_MAX_LENGTH as ENTITY_NAME_MAX_LENGTH
from agentfy.store.repos.knowledge import RELATION_MAX_LENGTH
from agentfy.store.repos.knowledge import TYPE_MAX_LENGTH as ENTITY_TYPE_MAX_LENGTH
from agentfy.store.repos.sessions import MESSAGE_MAX_LENGTH

#: Most rows one JSON batch request may carry (larger loads: several requests, or the store API directly).
MAX_MEMORY_DOCUMENTS: Final = 1000
MAX_GRAPH_ROWS: Final = 10_000


# -- sessions ----------------------------------------------------------------------------------------------
class SessionIn(Strict):
    session_key: Label = label_field(SESSION_KEY_MAX_LENGTH, description=(
        "The session's only identifier, unique in the organization: non-empty, no control characters."))
    agent: str = agent_ref_field()
    user_id: Label | None = label_field(USER_ID_MAX_LENGTH, allow_empty=True, default=None, description=(
        "The memory SCOPE of the session (`group:telegram:<chat>` in a group). Default: the key's own user. "
        "Another scope than the key's own user needs the operator role."))


class SessionOut(BaseModel):
    session_key: str
    agent_id: str = id_field("agent", "The agent's ID (never its key).")
    user_id: str = Field(description="The memory scope (empty: none).")
    status: str = Field(description="`open` or `completed`.")
    compaction_count: int
    created_at: str
    completed_at: str | None
    channel: str | None = Field(default=None, description="Where the conversation happens (telegram, discord, web, "
                                                          "api…); null for a session opened through this API.")
    conversation: str | None = Field(default=None, description="The chat's name on its channel, e.g. "
                                                               "telegram:-100123.")


class SessionListedOut(SessionOut):
    """A session in its agent's list: with its message count and last activity."""

    message_count: int = Field(description="How many messages the session has.")
    last_activity_at: str = Field(description="Its last message's time, or when it was opened if it has none; the "
                                              "list is ordered by it, newest first.")


class SessionCompletedOut(SessionOut):
    event_id: str | None = Field(json_schema_extra={"pattern": id_pattern("domain-event")}, description=(
        "The `session.completed` event this call published; null when it was already published for this "
        "compaction (completing twice publishes once)."))


class MessageIn(Strict):
    role: Literal["user", "assistant", "system", "tool"] = Field(description=(
        "`user` for any member; `assistant`, `system` and `tool` need the operator role."))
    content: str = text_field(MESSAGE_MAX_LENGTH, allow_empty=True, description="The message text.")


class ToolCallOut(BaseModel):
    id: str = Field(description="Pairs the call with the tool message whose tool_call_id it is.")
    name: str = Field(description="The tool's name.")
    arguments: dict[str, Any] = Field(description="The call's arguments, a JSON object.")


class MessageOut(BaseModel):
    session_key: str
    seq: int = Field(description="Position in the session, from 1.")
    role: str
    sender_id: str | None = Field(description="The ACTOR who sent it: the key's user (null for team keys).")
    content: str
    created_at: str
    tool_calls: list[ToolCallOut] = Field(default_factory=list, description=(
        "An assistant message's tool calls (empty on other messages); each is answered by a tool message."))
    tool_call_id: str | None = Field(default=None, description=(
        "On a tool message: the id of the call whose result it holds (null on other messages, and on tool "
        "messages stored as text before tool use was stored as structures)."))


# -- vault -------------------------------------------------------------------------------------------------
class VaultDocumentOut(BaseModel):
    id: str = id_field("vault-document")
    agent_id: str = id_field("agent")
    path: str
    content_type: str
    size: int = Field(description="Bytes.")
    created_at: str


class VaultUploadOut(BaseModel):
    documents: list[VaultDocumentOut] = Field(description="The stored documents, in upload order.")


# -- memory documents --------------------------------------------------------------------------------------
class MemoryDocumentIn(Strict):
    path: str = text_field(PATH_MAX_LENGTH, description="Non-empty; with user_id, identifies the document.")
    content: str = text_field(CONTENT_MAX_LENGTH, allow_empty=True)
    user_id: str = text_field(USER_ID_MAX_LENGTH, allow_empty=True, default="",
                              description="The memory SCOPE (a sender, `group:…`); empty: the agent's own memory.")
    metadata: JsonObject | None = Field(default=None, description="Null keeps an existing document's metadata.")


class MemoryBatchIn(Strict):
    documents: list[MemoryDocumentIn] = Field(max_length=MAX_MEMORY_DOCUMENTS, description=(
        "Upserted by (user_id, path), all or nothing: one bad row fails the request naming documents[i]."))


class MemoryBatchOut(BaseModel):
    ids: list[str] = Field(description="The documents' IDs, in input order (an existing document keeps its ID).",
                           json_schema_extra={"items": {"type": "string", "pattern": id_pattern("memory-document")}})


class MemoryDocumentOut(BaseModel):
    id: str = id_field("memory-document")
    agent_id: str = id_field("agent")
    user_id: str
    path: str
    content: str
    metadata: dict[str, Any]
    created_at: str
    updated_at: str


#: What a memory search finds (:data:`agentfy.store.repos.search.MEMORY_KINDS`).
MemoryHitKind = Literal["memory", "episodic"]


class MemorySearchHitOut(BaseModel):
    """One match of a memory search, as the agent's ``search_memory`` tool sees it."""

    kind: MemoryHitKind = Field(description="memory: a memory document; episodic: the summary "
                                                            "of a past conversation.")
    id: str = Field(description="The memory document's or episodic summary's ID.")
    title: str = Field(description="A document's path; a summary's session key and compaction number.")
    snippet: str = Field(description="The text around the match.")
    score: float = Field(description="Higher is better; comparable within one search only.")


class MemorySearchOut(BaseModel):
    """The best matches, best first (ranked, so not paged: ``limit`` says how many)."""

    items: list[MemorySearchHitOut]


class EpisodicSummaryOut(BaseModel):
    id: str = id_field("episodic-summary")
    agent_id: str = id_field("agent")
    user_id: str = Field(description="The memory SCOPE the conversation was in (empty: the agent's own).")
    session_key: str
    compaction_count: int = Field(description="Which compaction of the session this summary is (from 0).")
    summary: str
    created_at: str
    promoted_at: str | None = Field(description="When the dreaming worker folded it into long-term memory; "
                                                "null while it waits.")


# -- knowledge graph ---------------------------------------------------------------------------------------
class EntityIn(Strict):
    agent: str = agent_ref_field()
    user_id: str = text_field(USER_ID_MAX_LENGTH, allow_empty=True, default="",
                              description="The memory SCOPE it was learnt in; empty: the agent's own.")
    name: str = text_field(ENTITY_NAME_MAX_LENGTH)
    entity_type: str = text_field(ENTITY_TYPE_MAX_LENGTH)
    properties: JsonObject | None = None


EntityEndpoint = Annotated[
    Annotated[StrictInt, Field(json_schema_extra={"minimum": 0, "maximum": MAX_GRAPH_ROWS - 1})]
    | Annotated[StrictStr, Field(json_schema_extra={"pattern": id_pattern("kg-entity")})],
    Field(description="The index of an entity in this request's `entities` (an integer, less than their "
                      "number, of the relation's own agent), or an existing entity's ID (a string)."),
]


class RelationIn(Strict):
    agent: str = agent_ref_field()
    source: EntityEndpoint
    target: EntityEndpoint
    relation: str = text_field(RELATION_MAX_LENGTH)
    properties: JsonObject | None = None


class GraphIngestIn(Strict):
    entities: list[EntityIn] = Field(default_factory=list, max_length=MAX_GRAPH_ROWS)
    relations: list[RelationIn] = Field(default_factory=list, max_length=MAX_GRAPH_ROWS)


class GraphIngestOut(BaseModel):
    entity_ids: list[str] = Field(description="entity_ids[i] is entities[i]'s new ID.")
    relation_ids: list[str] = Field(description="relation_ids[j] is relations[j]'s new ID.")


class KgEntityOut(BaseModel):
    id: str = id_field("kg-entity")
    agent_id: str = id_field("agent")
    user_id: str
    name: str
    entity_type: str
    properties: dict[str, Any]
    created_at: str


class KgRelationOut(BaseModel):
    id: str = id_field("kg-relation")
    agent_id: str = id_field("agent")
    source_entity_id: str = id_field("kg-entity")
    target_entity_id: str = id_field("kg-entity")
    relation: str
    properties: dict[str, Any]
    created_at: str


# -- shared helpers ----------------------------------------------------------------------------------------




def renamed(error: Exception, rename: Callable[[str], str]) -> Exception:
    """``error`` with its field renamed to the request's name for it (``error`` itself if nothing changes).

    A :class:`RowNotFoundError` always becomes a 404 :class:`ApiError` that keeps the (renamed) field.
    """
    field = getattr(error, "field", None)
    if not isinstance(field, str):
        return error
    new = rename(field)
    if isinstance(error, RowNotFoundError):
        return not_found(error.entity, error.ref, new)
    if new == field:
        return error
    if isinstance(error, InvalidIdError):
        return InvalidIdError(error.value, error.prefix, field=new)
    if isinstance(error, InvalidAgentKeyError):
        return InvalidAgentKeyError(error.value, error.reason, field=new)
    if isinstance(error, InvalidInputError):
        return InvalidInputError(str(error).replace(field, new), field=new, value=error.value)
    if isinstance(error, ConflictError):
        return ConflictError(str(error).replace(field, new), field=new, value=error.value)
    return error


def rename_suffixes(renames: dict[str, str]) -> Callable[[str], str]:
    """A :func:`renamed` mapping that renames the last segment of ``rows[i].<field>``."""

    def rename(field: str) -> str:
        head, dot, last = field.rpartition(".")
        return f"{head}{dot}{renames[last]}" if last in renames else field

    return rename
