"""``create_cron``, ``publish_skill`` and ``search_memory``: the agent's rows in the store, by identity.

* ``create_cron`` — asks :func:`~agentfy.permissions.policy.check_cron_permission` (a group member needs a
  ``cron`` grant, or ``file_writer``, which it falls back to); the job runs in the SCOPE and is created by the
  ACTOR (:func:`~agentfy.permissions.ownership.owner_for_new_row`: a person, never a group or a wrapper).
* ``publish_skill`` — a skill changes what agents load, like a context file, so it asks
  :func:`~agentfy.permissions.policy.check_context_file_permission`; the skill is owned by the ACTOR.
* ``search_memory`` — searches the memory documents and episodic summaries of the SCOPE only
  (:func:`~agentfy.permissions.ownership.memory_scope`): a group's memory in the group, a person's in their
  DM; no other scope is ever searched, so nothing needs a grant.  The full-text index of the database does the
  matching and ranking (:func:`agentfy.store.repos.search.search`); each match is its kind, title and a
  snippet.  ``limit`` (an integer, 1 to 20) bounds the matches.  When the agent has an embeddings model
  (:mod:`agentfy.runtime.embeddings`), the query's vector makes it a hybrid search: memory that means the
  same without sharing a word is found too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Final

from agentfy.identity import Scope
from agentfy.permissions.ownership import NoActorError, memory_scope, owner_for_new_row
from agentfy.permissions.policy import check_context_file_permission, check_cron_permission
from agentfy.runtime.model import ToolSpec
from agentfy.runtime.tools import Tool, ToolEnv, ToolError, integer, parameters, refusal, string, text, whole
from agentfy.schedule import DEFAULT_TIMEZONE, GRAMMAR
from agentfy.store.errors import ConflictError, InvalidInputError
from agentfy.store.repos import cron, search, skills
from agentfy.store.repos.vectors import QueryVector

SEARCH_RESULTS: Final = 5
SEARCH_RESULTS_MAX: Final = 20
SNIPPET_LENGTH: Final = 200


def _owner(env: ToolEnv, tool: str) -> str:
    try:
        return owner_for_new_row(env.context)
    except NoActorError as error:
        raise ToolError(f"{tool}: {error}") from None


def _create_cron(env: ToolEnv, schedule: str, message: str, timezone: str) -> str:
    decision = check_cron_permission(env.db, env.context, env.agent.id)
    if not decision.allowed:
        return refusal(decision)
    owner = _owner(env, "create_cron")
    try:
        with env.db.transaction() as tx:
            job = cron.create_cron_job(tx, Scope(env.agent.tenant_id), env.agent.id, created_by=owner,
                                       schedule=schedule, user_id_scope=memory_scope(env.context) or "",
                                       payload={"message": message}, timezone=timezone,
                                       origin_channel=env.channel, origin_conversation=env.conversation)
    except InvalidInputError as error:
        raise ToolError(f"create_cron: {error}") from None
    return f"scheduled {job.id} ({job.schedule}, next run {job.next_run_at or 'none'}) for {owner}"


async def create_cron(env: ToolEnv, arguments: Mapping[str, Any]) -> str:
    schedule, message = text(arguments, "schedule"), text(arguments, "message")
    timezone = arguments.get("timezone", DEFAULT_TIMEZONE)
    return await asyncio.to_thread(_create_cron, env, schedule, message, str(timezone))


def _publish_skill(env: ToolEnv, name: str, content: str) -> str:
    decision = check_context_file_permission(env.db, env.context, env.agent.id)
    if not decision.allowed:
        return refusal(decision)
    owner = _owner(env, "publish_skill")
    try:
        with env.db.transaction() as tx:
            skill = skills.create_skill(tx, Scope(env.agent.tenant_id), owner_id=owner, name=name, content=content)
    except (InvalidInputError, ConflictError) as error:
        raise ToolError(f"publish_skill: {error}") from None
    return f"published skill {skill.name} ({skill.id}), owned by {owner}"


async def publish_skill(env: ToolEnv, arguments: Mapping[str, Any]) -> str:
    name, content = text(arguments, "name"), text(arguments, "content")
    return await asyncio.to_thread(_publish_skill, env, name, content)


def search_answer(env: ToolEnv, tool: str, query: str, limit: int, *, kinds: tuple[search.Kind, ...],
                  what: str, vector: QueryVector | None = None) -> str:
    """The answer of a search tool: one line per match (``[kind] title: snippet``), best first, or "no ``what``
    matches"; a query the search refuses (blank) is the tool's error.  ``vector``: the query's embedding, for
    a hybrid search of memory (:mod:`agentfy.store.repos.search`)."""
    try:
        with env.db.transaction(write=False) as tx:
            hits = search.search(tx, Scope(env.agent.tenant_id), agent_id=env.agent.id,
                                 user_id=memory_scope(env.context), query=query, kinds=kinds, limit=limit,
                                 vector=vector)
    except InvalidInputError as error:
        raise ToolError(f"{tool}: {error}") from None
    lines = [f"[{hit.kind}] {hit.title}: {' '.join(hit.snippet.split())[:SNIPPET_LENGTH]}" for hit in hits]
    return "\n".join(lines) if lines else f"no {what} matches {query!r}"


def _search_memory(env: ToolEnv, query: str, limit: int, vector: QueryVector | None) -> str:
    return search_answer(env, "search_memory", query, limit, kinds=search.MEMORY_KINDS, what="memory",
                         vector=vector)


async def search_memory(env: ToolEnv, arguments: Mapping[str, Any]) -> str:
    """Memory by its words and, when the agent has an embeddings model, by meaning: the query is embedded
    first, with no transaction open (a failed embedding leaves the text search)."""
    query, limit = text(arguments, "query"), whole(arguments, "limit", SEARCH_RESULTS)
    vector = None if env.embedder is None else await env.embedder.vector_for(env.db, env.agent, query)
    return await asyncio.to_thread(_search_memory, env, query, limit, vector)


CREATE_CRON: Final = Tool(ToolSpec("create_cron", "Schedule this agent to run a message on a cron schedule, in this "
                                   "chat. In a group chat the sender needs the cron (or file_writer) grant.",
                                   parameters({"schedule": string(f"the schedule: {GRAMMAR}", max_length=200),
                                               "message": string("what the agent is told at each run"),
                                               "timezone": string("the IANA time zone a cron expression is read "
                                                                  "in (default UTC)", max_length=64)},
                                              ("schedule", "message"))), create_cron)
PUBLISH_SKILL: Final = Tool(ToolSpec("publish_skill", "Publish a named skill of the organization, owned by the "
                                     "sender. In a group chat the sender needs the context_file (or file_writer) "
                                     "grant.",
                                     parameters({"name": string("the skill's unique name", max_length=200),
                                                 "content": string("its instructions",
                                                                   max_length=skills.SKILL_CONTENT_MAX_LENGTH)},
                                                ("name", "content"))), publish_skill)
SEARCH_MEMORY: Final = Tool(ToolSpec("search_memory", "Search this chat's long-term memory (notes and "
                                     "summaries of past conversations); a match contains every word.",
                                     parameters({"query": string("words to look for",
                                                                 max_length=search.QUERY_MAX_LENGTH),
                                                 "limit": integer("how many matches at most (default "
                                                                  f"{SEARCH_RESULTS})", minimum=1,
                                                                  maximum=SEARCH_RESULTS_MAX)},
                                                ("query",))), search_memory)
