"""What the run remembers before it answers: the memory of the SCOPE that bears on the message, put in the
system prompt's runtime section — below the cache boundary, never above it.

For each turn, in the transaction that opens it (:meth:`agentfy.runtime.runner.Runtime._begin`), the
message's words are looked up in the SCOPE's memory documents and episodic summaries (the engines' full-text
search, :mod:`agentfy.store.repos.search`, any word, best first) and in its knowledge graph (entities named by
the message and their relations, :mod:`agentfy.store.repos.knowledge_search`).  Only the run's tenant, agent
and SCOPE are read — a group's memory in the group, a person's in their DM — so nothing needs a grant.  The
run's agent is passed as its record, resolved in the tenant already, so neither search reads it again.

Why below the boundary: what is recalled changes with every message, and the prefix above the boundary must
stay byte-identical from turn to turn for the provider's prompt cache to hold.  The block is bounded by
``runtime.recall_tokens`` (four characters a token, whole lines only; 0 turns recall off), so a large memory
never crowds out the conversation.  The model can still search further with ``search_memory`` and
``search_knowledge``.

When the agent has an embeddings model, the runtime embeds the message before the turn's transaction opens
(:class:`~agentfy.runtime.embeddings.QueryEmbedder`: a network call never holds a transaction) and the memory
lookup is the hybrid search — words and meaning, merged by rank; a failed embedding leaves the words alone.
"""

from __future__ import annotations

from typing import Final

from agentfy.agents.prompt import CACHE_BOUNDARY_MARKER
from agentfy.identity import Scope
from agentfy.store.db import Tx
from agentfy.store.repos import knowledge_search, search
from agentfy.store.repos.agents import Agent
from agentfy.store.repos.vectors import QueryVector

#: How many memory hits and entities a recall reads at most (the budget usually cuts before).
HITS_MAX: Final = 8
#: Words too common to find anything by; a message of only these recalls nothing.
_COMMON_TEXT: Final = """
a an the and or but if of to in on at by for from with as is are was were be been am do does did have has had
it its this that these those i me my we our you your he she they them his her their what who when where why how
which can could will would should may might must not no yes so just also about please thanks hi hello hey
"""
_COMMON: Final = frozenset(_COMMON_TEXT.split())
HEADING: Final = "# Recalled memory (from earlier conversations here; it may be relevant)"


def words_of(text: str) -> list[str]:
    """The message's words worth looking up: not the common ones, at least three characters."""
    return [word for word in search.any_word_words(text[:search.QUERY_MAX_LENGTH])
            if len(word) >= 3 and word not in _COMMON][:knowledge_search.TERMS_MAX]


def recall(tx: Tx, scope: Scope, agent: Agent, user_id: str | None, text: str, *, budget_tokens: int,
           vector: QueryVector | None = None) -> str:
    """The recalled block for a message (``""`` when nothing bears on it or recall is off); ``vector``: the
    message's embedding (the agent's own model), for a hybrid lookup of memory."""
    words = words_of(text)
    if budget_tokens <= 0 or not words:
        return ""
    question = " ".join(words)
    hits = search.search(tx, scope, agent_id=agent, user_id=user_id or None, query=question,
                         kinds=search.MEMORY_KINDS, limit=HITS_MAX, any_word=True, vector=vector)
    known = knowledge_search.find(tx, scope, agent, user_id=user_id or "", question=question, limit=HITS_MAX)
    lines = [f"- [{hit.kind}] {hit.title}: {' '.join(hit.snippet.split())}" for hit in hits]
    lines += [f"- [knowledge] {line}" for line in knowledge_search.describe(known)]
    kept: list[str] = []
    room = budget_tokens * 4 - len(HEADING) - 1
    for written in lines:
        line = written.replace(CACHE_BOUNDARY_MARKER, "")
        if len(line) + 1 > room:
            break
        kept.append(line)
        room -= len(line) + 1
    return "\n".join([HEADING, *kept]) if kept else ""
