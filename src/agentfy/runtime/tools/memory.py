"""``remember`` and ``search_knowledge``: the agent writes its memory and reads its knowledge graph, by SCOPE.

* ``remember`` writes one memory document in the run's SCOPE (:func:`~agentfy.permissions.ownership.memory_scope`:
  the group's memory in a group, the person's in a DM), at ``remembered/<time>-<random>.md``, attributed to
  the ACTOR in its metadata (``author``; :func:`~agentfy.permissions.ownership.owner_for_new_row`: a person,
  never the group or a wrapper).  A group's memory is shared by every member, like its files, so in a group
  the sender needs the ``file_writer`` grant (:func:`~agentfy.permissions.policy.check_file_writer_permission`);
  refused, nothing is written.  Later turns find it with ``search_memory`` and the run's recall.
* ``search_knowledge`` answers from the knowledge graph the semantic worker builds: the SCOPE's entities whose
  names hold the question's words and their relations (:mod:`agentfy.store.repos.knowledge_search`); no other
  SCOPE and no other tenant is ever read, so nothing needs a grant.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

from agentfy.events.embedding import publish_embedding_due
from agentfy.identity import Scope
from agentfy.permissions.ownership import NoActorError, memory_scope, owner_for_new_row
from agentfy.permissions.policy import check_file_writer_permission
from agentfy.runtime.model import ToolSpec
from agentfy.runtime.tools import Tool, ToolEnv, ToolError, integer, parameters, refusal, string, text, whole
from agentfy.store.repos import knowledge_search, memory
from agentfy.store.repos._batch import CONTENT_MAX_LENGTH

REMEMBERED_DIRECTORY: Final = "remembered"
KNOWLEDGE_RESULTS: Final = 10
KNOWLEDGE_RESULTS_MAX: Final = 50


def remembered_path(at: datetime) -> str:
    """A new document's path: sortable by time, unique by a random suffix (two facts in one second)."""
    return f"{REMEMBERED_DIRECTORY}/{at.astimezone(UTC).strftime('%Y%m%dT%H%M%SZ')}-{secrets.token_hex(4)}.md"


def _remember(env: ToolEnv, fact: str) -> str:
    decision = check_file_writer_permission(env.db, env.context, env.agent.id)
    if not decision.allowed:
        return refusal(decision)
    try:
        author = owner_for_new_row(env.context)
    except NoActorError as error:
        raise ToolError(f"remember: {error}") from None
    path = remembered_path(datetime.now(UTC))
    scope = Scope(env.agent.tenant_id)
    with env.db.transaction() as tx:
        ids = memory.upsert_memory_documents(tx, scope, env.agent.id, [memory.MemoryDocumentInput(
            user_id=memory_scope(env.context) or "", path=path, content=fact,
            metadata={"author": author, "source": "remember"})])
        publish_embedding_due(tx, scope, env.agent, ids)  # embedded after the commit, by the event workers
    return f"remembered ({path}), from {author}"


async def remember(env: ToolEnv, arguments: Mapping[str, Any]) -> str:
    return await asyncio.to_thread(_remember, env, text(arguments, "fact"))


def _search_knowledge(env: ToolEnv, question: str, limit: int) -> str:
    with env.db.transaction(write=False) as tx:
        found = knowledge_search.find(tx, Scope(env.agent.tenant_id), env.agent.id,
                                      user_id=memory_scope(env.context) or "", question=question, limit=limit)
    lines = knowledge_search.describe(found)
    if not lines:
        return f"search_knowledge: nothing known about {question[:200]!r} in this chat"
    return "\n".join(lines)


async def search_knowledge(env: ToolEnv, arguments: Mapping[str, Any]) -> str:
    question = text(arguments, "query")
    return await asyncio.to_thread(_search_knowledge, env, question, whole(arguments, "limit", KNOWLEDGE_RESULTS))


REMEMBER: Final = Tool(ToolSpec("remember", "Keep a fact in this chat's long-term memory, attributed to the sender. In "
                                "a group chat the sender needs the file_writer grant.",
                                parameters({"fact": string("what to remember, in a sentence or a few",
                                                           max_length=CONTENT_MAX_LENGTH)}, ("fact",))), remember)
SEARCH_KNOWLEDGE: Final = Tool(ToolSpec("search_knowledge", "Look up people, things and how they relate in this "
                                        "chat's knowledge graph.",
                                        parameters({"query": string("the names or words to look for", max_length=1_000),
                                                    "limit": integer("how many entities at most (default "
                                                                     f"{KNOWLEDGE_RESULTS})", minimum=1,
                                                                     maximum=KNOWLEDGE_RESULTS_MAX)},
                                                   ("query",))), search_knowledge)
