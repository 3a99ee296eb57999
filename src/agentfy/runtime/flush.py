"""The memory flush: when a conversation nears the model's context window, write it to memory and compact.

When the prompt of a turn (system prompt and history, estimated at four characters a token) passes
``flush_ratio`` of the agent's context window, in one transaction:

1. the history since the last compaction is summarised (the consolidation pipeline's
   :class:`~agentfy.events.consolidation.summariser.Summariser`; extractive by default, no model call) and
   written as a memory document of the SCOPE — ``sessions/<session key>/compaction-<n>.md`` of the agent,
   ``user_id`` the run's scope, so the group's memory in a group and the person's in a DM;
2. the session's ``compaction_count`` is incremented;
3. a ``system`` message starting with ``[compacted]`` and the summary is appended: later turns show the
   model the history from there;
4. ``session.completed`` is published for this compaction (one event per session and compaction), so the
   consolidation workers turn what was compacted into episodic memory.

It runs inside the run's request context, with both of the agent's identities set (tenant, agent ID and key,
scope and sender), like every other step of the run: a flush is never the odd path that lost the agent ID.
"""

from __future__ import annotations

from agentfy.events.consolidation.episodic import publish_session_completed
from agentfy.events.consolidation.summariser import ExtractiveSummariser, Summariser
from agentfy.events.embedding import publish_embedding_due
from agentfy.identity import Scope
from agentfy.identity.context import current
from agentfy.runtime.conversation import COMPACTION_MARKER
from agentfy.store.db import Database
from agentfy.store.repos import memory, sessions
from agentfy.store.repos.agents import Agent
from agentfy.store.repos.sessions import Session, SessionMessage


def memory_path(session_key: str, compaction: int) -> str:
    return f"sessions/{session_key}/compaction-{compaction}.md"


def flush(db: Database, agent: Agent, session: Session, messages: list[SessionMessage], *,
          summariser: Summariser | None = None) -> int:
    """Write the conversation to memory and compact the session (see the module docstring); returns the new
    compaction count.  Raises ``RuntimeError`` outside a run context of this agent (both identities unset)."""
    context = current()
    if context.tenant_id != agent.tenant_id or context.agent_id != agent.id or context.agent_key != agent.agent_key:
        raise RuntimeError("the memory flush must run in the agent's run context (tenant, agent ID and key)")
    summary = (summariser or ExtractiveSummariser()).summarise(session, messages).strip() or "(nothing to keep)"
    scope = Scope(agent.tenant_id)
    with db.transaction() as tx:
        count = sessions.increment_compaction(tx, scope, session.session_key)
        ids = memory.upsert_memory_documents(tx, scope, agent.id, [memory.MemoryDocumentInput(
            user_id=session.user_id, path=memory_path(session.session_key, count), content=summary,
            metadata={"session_key": session.session_key, "compaction": count,
                      "through_seq": messages[-1].seq if messages else 0})])
        sessions.append_message(tx, scope, session.session_key, "system", f"{COMPACTION_MARKER} {summary}")
        publish_session_completed(tx, scope, session.session_key)
        publish_embedding_due(tx, scope, agent, ids)
    return count
