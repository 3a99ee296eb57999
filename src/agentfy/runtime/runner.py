"""The runtime: one message in, through the agent's loop, the model and its tools, one reply out.

:class:`Runtime` is the :class:`~agentfy.runtime.inbound.MessageHandler` every channel calls.  For one
:class:`~agentfy.runtime.inbound.Inbound`:

1. the agent is found by the router in the message's tenant (``router.get``; a missing agent, or another
   tenant's, is :class:`~agentfy.store.errors.NotFoundError`);
2. the run's request context is the channel's (SCOPE ``user_id``, ACTOR ``sender_id``, role) plus the agent's
   ID and key; it is current for the whole run, so every step and tool sees the same identities;
3. one run per conversation at a time (:mod:`agentfy.runtime.locks`: in this process, and across gateway
   processes on PostgreSQL), and the agent's loop is marked running meanwhile (``AgentLoop.run()``: the
   heartbeat's ``running``);
4. the session is picked or opened from (tenant, agent, SCOPE, conversation) (:mod:`agentfy.runtime.conversation`)
   and the user message is stored with ``sender_id`` = the ACTOR;
5. near the context window the memory flush compacts first (:mod:`agentfy.runtime.flush`);
6. the model (:mod:`agentfy.runtime.providers`) answers; requested tools run behind the permission policy
   (:mod:`agentfy.runtime.tools`), at most ``max_tool_rounds`` rounds; each call's tokens are recorded
   (:mod:`agentfy.runtime.usage`: one ``usage_snapshots`` row per call, written with the run's next write;
   a failed usage write never fails the run nor loses what it was written with, which is written again alone);
   a round that called tools is stored as structures once all its tools ran — the assistant message with its
   ``tool_calls`` and one ``tool`` message per result (``tool_call_id``) — in one transaction, so the session
   never holds a call without its results, and a later failure keeps the whole rounds already stored (they
   are valid history, replayed by :mod:`agentfy.runtime.prompting`);
7. the reply is stored as the assistant message, with the last call's usage row, and returned; run events go
   to the tenant's WebSocket subscribers (:mod:`agentfy.runtime.events`).

Database work runs in worker threads (the context travels with it), one hop per transaction: a run without
tools makes two — the turn's opening transaction (step 4, the agent's MCP server records included) and the
reply's; the model call, and the MCP servers' listing, run on the event loop with no transaction open.
Subagents and delegated tasks run in the background; their results are announced back into the conversation
through :mod:`agentfy.permissions.propagation` and handed to ``outbound`` (a channel sends them to the chat).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from agentfy.agents.loop import AgentLoop
from agentfy.agents.router import Router
from agentfy.agents.telemetry import agent_span
from agentfy.identity import Scope, parse_id
from agentfy.identity.context import RequestContext, bind, use
from agentfy.permissions.channels import system_context
from agentfy.permissions.ownership import audit_actor
from agentfy.permissions.propagation import (
    InboundMessage,
    context_for_run,
    delegate_announce,
    origin_sender_of,
    run_request_from_inbound,
    session_send,
    subagent_announce,
    teammate_dispatch,
)
from agentfy.runtime import activity, conversation, prompting, recall, team_tasks, usage
from agentfy.runtime.activity import Happened
from agentfy.runtime.embeddings import QueryEmbedder
from agentfy.runtime.events import (
    HANDOFF_REFUSED,
    HANDOFF_STARTED,
    REPLIED,
    RUN_DELTA,
    RUN_FINISHED,
    RUN_STARTED,
    TOOL_CALLED,
    NoEvents,
    RunEvents,
    emit,
)
from agentfy.runtime.flush import flush
from agentfy.runtime.inbound import EMPTY_TEXT_PROBLEM, Inbound, Reply, has_visible_text
from agentfy.runtime.locks import ConversationLocks
from agentfy.runtime.mcp.offer import McpServers, McpTools
from agentfy.runtime.model import (
    ChatMessage,
    ModelProvider,
    ModelRequest,
    TextSink,
    ToolCall,
    Usage,
    estimate_tokens,
)
from agentfy.runtime.providers import ModelSettings, Providers
from agentfy.runtime.settings import DEFAULT_RUNTIME_SETTINGS, RuntimeSettings
from agentfy.runtime.toolbox import TOOLS, run_tool
from agentfy.runtime.tools import ToolEnv, ToolError
from agentfy.store.db import Database, Tx
from agentfy.store.repos import agents, orgs, sessions, skills
from agentfy.store.repos.agents import Agent
from agentfy.store.repos.sessions import MESSAGE_MAX_LENGTH, Session
from agentfy.store.repos.skills import Skill
from agentfy.store.repos.tasks import TeamTask
from agentfy.store.repos.telemetry import UsageRecord
from agentfy.store.repos.vectors import QueryVector

logger: Final = logging.getLogger("agentfy.runtime")

Outbound = Callable[[Inbound, Reply], Awaitable[None]]
#: Between the texts of two model calls of one run (a model may say something before it calls a tool).
ROUND_SEPARATOR: Final = "\n\n"


@dataclass(slots=True)
class _Turn:
    """What the database part of a turn hands to the model part."""

    session: Session
    provider: ModelProvider
    settings: ModelSettings
    tenant_slug: str
    messages: list[ChatMessage] = field(default_factory=list)
    #: The organization's skills the prompt lists (read once per turn: the prefix stays the same all turn).
    skills: tuple[Skill, ...] = ()
    #: What was recalled for the message (below the cache boundary; :mod:`agentfy.runtime.recall`).
    recalled: str = ""
    #: The agent's MCP servers, read with the turn (listed on the event loop, :mod:`agentfy.runtime.mcp`).
    servers: McpServers = ()
    #: Usage rows of model calls not yet written: they go with the run's next write (:mod:`agentfy.runtime.usage`).
    unrecorded: list[UsageRecord] = field(default_factory=list)


class Runtime:
    """The agent runtime (see the module docstring).  Construct one per process and event loop::

        runtime = Runtime(db, router, workspace_root=Path("var/workspaces"))
        reply = await runtime(Inbound(tenant_id, agent_key, context, channel, conversation, text))

    ``providers`` picks each agent's model (default: the offline model for agents without a ``model``
    configuration); ``events`` receives run events (the gateway passes its broadcaster); ``outbound``
    receives replies the runtime produces on its own — announced subagent and delegate results — to send
    them to the chat (``None``: they are only stored in the session); ``mcp`` adds the agent's MCP servers'
    tools to every run (default: no stdio command allowed, the default timeouts, the providers' cipher).
    """

    def __init__(self, db: Database, router: Router, *, workspace_root: Path, providers: Providers | None = None,
                 events: RunEvents | None = None, outbound: Outbound | None = None,
                 settings: RuntimeSettings | None = None, mcp: McpTools | None = None) -> None:
        self.db = db
        self.router = router
        self.workspace_root = Path(workspace_root)
        self.providers = providers if providers is not None else Providers()
        self.events: RunEvents = events if events is not None else NoEvents()
        self.outbound = outbound
        self.settings = settings if settings is not None else DEFAULT_RUNTIME_SETTINGS
        #: The agents' MCP servers' tools, added to the built-in ones in every run (:mod:`agentfy.runtime.mcp`).
        self.mcp = mcp if mcp is not None else McpTools(cipher=self.providers.cipher)
        #: Embeds memory searches' queries with each agent's embeddings model (:mod:`agentfy.runtime.embeddings`).
        self.embedder = QueryEmbedder(self.providers)
        self._locks = ConversationLocks(db)
        self._slugs: dict[str, str] = {}
        #: This process's token totals (``/metrics``): by provider and kind, see :mod:`agentfy.runtime.usage`.
        self.tokens = usage.TokenCounters()
        self._background: set[asyncio.Task[None]] = set()
        #: Hand-offs running in this process: task ID -> (the agent and conversation that started it, its run).
        self._handoffs: dict[str, _Handoff] = {}

    def close(self) -> None:
        """Let go of the connection that holds this process's run locks on PostgreSQL (shutdown, tests); the
        server releases every lock it held.  A later run opens a new one."""
        self._locks.close()

    # -- the entry point ------------------------------------------------------------------------------------
    async def __call__(self, inbound: Inbound, *, on_text: TextSink | None = None) -> Reply:
        """Run one message and return the reply (see the module docstring); ``on_text`` receives the reply's
        text as the model streams it (each piece is also an ``agent.run.delta`` event).

        Raises ``ValueError`` for a message whose context is not of its tenant or whose text is empty or too
        long (nothing is stored), ``NotFoundError`` for an agent that is not the tenant's,
        :class:`~agentfy.runtime.model.ModelError` / :class:`~agentfy.runtime.providers.ModelConfigError`
        when the model cannot answer (the user message stays stored).
        """
        self._check(inbound)
        loop = await self._loop(inbound)
        agent = loop.agent
        with use(inbound.context), bind(agent_id=agent.id, agent_key=agent.agent_key,
                                        tool_agent_key=agent.agent_key) as context:
            base_key = conversation.conversation_key(agent, context.user_id, inbound.conversation)
            async with self._locks.hold((agent.tenant_id, agent.id, base_key)):
                with loop.run():
                    return await self._run(inbound, agent, context, base_key, on_text)

    def _check(self, inbound: Inbound) -> None:
        tenant = parse_id(inbound.tenant_id, "org", field="tenant_id")
        if inbound.context.tenant_id != tenant:
            raise ValueError(f"the message's context has tenant {inbound.context.tenant_id!r}, not the message's "
                             f"tenant {tenant!r}; build it with the channel's constructor and tenant_id")
        if not isinstance(inbound.text, str) or not has_visible_text(inbound.text):
            raise ValueError(EMPTY_TEXT_PROBLEM)
        limit = min(self.settings.text_max_length, MESSAGE_MAX_LENGTH)
        if len(inbound.text) > limit:
            raise ValueError(f"the message text is {len(inbound.text)} characters long; at most {limit} are allowed")

    async def _loop(self, inbound: Inbound) -> AgentLoop:
        found = self.router.get_cached(inbound.context, inbound.agent_key)
        if found is not None:
            return found
        return await asyncio.to_thread(self.router.get, inbound.context, inbound.agent_key)

    # -- one run ----------------------------------------------------------------------------------------------
    async def _run(self, inbound: Inbound, agent: Agent, context: RequestContext, base_key: str,
                   on_text: TextSink | None) -> Reply:
        run_id = secrets.token_hex(8)
        vector = None
        if self.settings.recall_tokens > 0 and recall.words_of(inbound.text):  # before the turn's transaction
            vector = await self.embedder.vector_for(self.db, agent, inbound.text)
        turn = await asyncio.to_thread(self._begin, agent, context, base_key, inbound, vector)
        emit(self.events, RUN_STARTED, agent, turn.tenant_slug, {"id": run_id})
        tracer = self.db.tracer  # set when tracing is on: the run is a span with the agent's ID on it
        traced = nullcontext() if tracer is None else agent_span(
            tracer, "agent.run", agent, turn.tenant_slug, attributes={"agentfy.run_id": run_id,
                                                                      "agentfy.channel": inbound.channel})
        try:
            with traced:
                text, used = await self._converse(inbound, agent, context, turn, run_id, on_text=on_text)
                if text is not None:
                    await asyncio.to_thread(self._reply, agent, turn, text, list(turn.unrecorded))
                    turn.unrecorded.clear()
                    emit(self.events, REPLIED, agent, turn.tenant_slug, {"id": run_id})
        finally:
            if turn.unrecorded:  # no write took them (no reply, or the run failed after a call): on their own
                await asyncio.to_thread(usage.record_rows, self.db, list(turn.unrecorded))
            emit(self.events, RUN_FINISHED, agent, turn.tenant_slug, {"id": run_id})
        return Reply(text=text, session_key=turn.session.session_key, usage=used)

    def _begin(self, agent: Agent, context: RequestContext, base_key: str, inbound: Inbound,
               vector: QueryVector | None = None) -> _Turn:
        """Worker thread: the session (picked or opened), the history (flushed to memory first when it nears
        the context window), the model, the agent's MCP server records, and the user message stored as the
        ACTOR's.

        Without a flush this is one transaction (one commit before the model is called: the first token
        waits for it; the message is kept whatever the model does); a flush writes memory in its own
        transactions, so the message is stored after it."""
        scope = Scope(agent.tenant_id)
        settings = ModelSettings.of(agent)
        text = inbound.text
        with self.db.transaction() as tx:
            # The agent is resolved again in this writing transaction, never trusted from the router's cache:
            # another process may have archived or deleted it a moment ago, its change notice still on the way,
            # and a message must not be stored for it (NotFoundError, nothing written).  Once it is confirmed
            # live here, the session's opening and the MCP listing below take the run's record without a read
            # of their own.
            agents.get_agent(tx, scope, agent.id)
            slug = self._slug(tx, scope)
            session = conversation.open_or_resume(tx, scope, agent, context.user_id, base_key,
                                                  channel=inbound.channel, conversation=inbound.conversation,
                                                  lock=True)
            provider = self.providers.for_agent(tx, scope, agent, settings)
            history = conversation.history(tx, scope, session)
            listed = tuple(skills.list_skills(tx, scope, limit=prompting.SKILLS_IN_PROMPT))
            recalled = recall.recall(tx, scope, agent, context.user_id, text, budget_tokens=self.settings.recall_tokens,
                                     vector=vector)
            servers = self.mcp.servers_in(tx, agent)
            prompt = prompting.system_prompt(agent, slug, self.workspace_root, session.session_key, skills=listed,
                                             recalled=recalled)
            shown = [*prompting.model_history(history), ChatMessage("user", text)]
            flushing = len(history) > 1 and (estimate_tokens(prompt, shown)
                                             > settings.context_window * self.settings.flush_ratio)
            if not flushing:  # the row was locked as it was read: the message is one statement
                sessions.append_to_locked(tx, scope, session, "user", text, sender_id=context.actor_id)
        if flushing:
            flush(self.db, agent, session, history)
            with self.db.transaction(write=False) as tx:
                history = conversation.history(tx, scope, session.session_key)
            shown = [*prompting.model_history(history), ChatMessage("user", text)]
            self._store(agent, session.session_key, "user", text, context.actor_id)
        return _Turn(session, provider, settings, slug, shown, listed, recalled, servers)

    def _slug(self, tx: Tx, scope: Scope) -> str:
        """The tenant's slug (for the prompt, paths and events), cached: a slug never changes."""
        slug = self._slugs.get(scope.tenant_id)
        if slug is None:
            slug = self._slugs[scope.tenant_id] = orgs.get_organization(tx, scope).slug
        return slug

    async def _converse(self, inbound: Inbound, agent: Agent, context: RequestContext, turn: _Turn,
                        run_id: str, *, on_text: TextSink | None) -> tuple[str | None, Usage | None]:
        """The model, and the tools it asks for, until it answers without tools (or the rounds run out).

        Returns the reply's text — every round's text, a blank line between (see
        :class:`~agentfy.runtime.inbound.Reply`) — and the run's summed usage."""
        env = ToolEnv(self.db, agent, turn.tenant_slug, self.workspace_root, context, inbound.channel,
                      inbound.conversation, self, inbound.depth, self.embedder)
        offered = await self.mcp.offer(agent, turn.servers, TOOLS)
        specs = [tool.spec for tool in offered.tools.values()]
        messages = turn.messages
        shown = _Shown(self.events, agent, turn.tenant_slug, run_id, scope_user_id=context.user_id,
                       on_text=on_text)
        used: Usage | None = None
        for _ in range(self.settings.max_tool_rounds + 1):
            prompt = prompting.system_prompt(agent, turn.tenant_slug, self.workspace_root, turn.session.session_key,
                                             skills=turn.skills, recalled=turn.recalled) + offered.note
            response = await turn.provider.complete(ModelRequest(prompt, list(messages), specs, agent.agent_key),
                                                    on_text=shown.piece)
            if response.usage is not None:
                used = usage.add(used, response.usage)
                self._count(agent, turn, response.usage, run_id)
            await shown.end_round(response.text)
            if not response.tool_calls:
                return shown.text(), used
            called = ChatMessage("assistant", response.text or "", response.tool_calls)
            results: list[ChatMessage] = []
            for call in response.tool_calls:
                emit(self.events, TOOL_CALLED, agent, turn.tenant_slug, {"id": run_id, "tool": call.name})
                result = await run_tool(env, call, offered.tools)
                results.append(ChatMessage("tool", result[:MESSAGE_MAX_LENGTH], tool_call_id=call.id))
            await asyncio.to_thread(self._store_round, agent, turn.session.session_key, called, results,
                                    list(turn.unrecorded))
            turn.unrecorded.clear()
            messages.extend((called, *results))
        await shown.end_round(f"(stopped after {self.settings.max_tool_rounds} rounds of tool calls)")
        return shown.text(), used

    def _count(self, agent: Agent, turn: _Turn, used: Usage, run_id: str) -> None:
        """Count the call's tokens, and keep its usage row for the run's next write (see :mod:`usage`)."""
        self.tokens.add(turn.settings.provider, used)
        model = turn.settings.model or turn.settings.provider
        turn.unrecorded.append(usage.row(agent, provider=turn.settings.provider, model=model, usage=used,
                                         run_id=run_id, session_key=turn.session.session_key))

    def _store(self, agent: Agent, session_key: str, role: str, text: str, sender_id: str | None) -> None:
        with self.db.transaction() as tx:
            sessions.append_message(tx, Scope(agent.tenant_id), session_key, role, text, sender_id=sender_id)

    def _reply(self, agent: Agent, turn: _Turn, text: str, used: Sequence[UsageRecord] = ()) -> None:
        """Worker thread: the reply and the usage rows not yet written, in one transaction
        (:func:`usage.commit_with`: a failed usage write is logged and the reply still committed)."""
        scope, session_key = Scope(agent.tenant_id), turn.session.session_key
        usage.commit_with(self.db, lambda tx: sessions.append_message(tx, scope, session_key, "assistant", text),
                          used)

    def _store_round(self, agent: Agent, session_key: str, called: ChatMessage, results: list[ChatMessage],
                     used: Sequence[UsageRecord] = ()) -> None:
        """Worker thread: one round of tool use — the assistant message with its calls and every result — in
        one transaction (all of it is stored, or none), with the usage rows not yet written (as :meth:`_reply`)."""
        scope = Scope(agent.tenant_id)

        def write(tx: Tx) -> None:
            sessions.append_message(tx, scope, session_key, "assistant", called.content,
                                    tool_calls=[_stored_call(call) for call in called.tool_calls])
            for result in results:
                sessions.append_message(tx, scope, session_key, "tool", result.content,
                                        tool_call_id=result.tool_call_id)

        usage.commit_with(self.db, write, used)

    # -- ending a conversation --------------------------------------------------------------------------------
    async def end_conversation(self, inbound: Inbound) -> Session | None:
        """Complete the conversation's open session (``inbound.text`` is not used) and publish
        ``session.completed`` in the same transaction, so the consolidation workers make it episodic memory.
        ``None`` when the conversation has no open session.  Waits for a run in progress."""
        loop = await self._loop(inbound)
        agent = loop.agent
        with use(inbound.context), bind(agent_id=agent.id, agent_key=agent.agent_key) as context:
            base_key = conversation.conversation_key(agent, context.user_id, inbound.conversation)
            async with self._locks.hold((agent.tenant_id, agent.id, base_key)):
                return await asyncio.to_thread(self._complete, agent, context, base_key)

    def _complete(self, agent: Agent, context: RequestContext, base_key: str) -> Session | None:
        scope = Scope(agent.tenant_id)
        with self.db.transaction() as tx:
            session = conversation.open_or_resume(tx, scope, agent, context.user_id, base_key)
            if not sessions.list_messages(tx, scope, session.session_key, limit=1):
                tx.rollback()
                return None
            completed, _ = conversation.complete(tx, scope, session.session_key)
        return completed

    # -- subagents and delegates (the Delegation protocol of the tools) --------------------------------------
    def spawn_subagent(self, env: ToolEnv, task: str) -> str:
        """Run ``task`` in a subagent of the same agent (its own session, the same SCOPE, the person as
        sender) in the background, then announce the result into ``env``'s conversation."""
        self._may_hand_off(env, "spawn_subagent")
        task_id = secrets.token_hex(6)
        origin = env.context
        person = origin_sender_of(origin)
        sub_context = system_context(user_id=origin.user_id, sender_id=person, tenant_id=env.agent.tenant_id,
                                     agent_id=env.agent.id, agent_key=env.agent.agent_key,
                                     role=origin.role if person is not None else None)
        work = Inbound(env.agent.tenant_id, env.agent.agent_key, sub_context, "subagent", f"subagent:{task_id}", task,
                       depth=env.depth + 1)
        self._started(env, "spawn_subagent", task_id, env.agent)
        self._spawn(self._task_then_announce(env, work, self._start_handoff(env, task_id, work),
                                             lambda content: subagent_announce(
                                                 origin, task_id=task_id, content=content, channel=env.channel),
                                             task_id))
        return task_id

    def delegate(self, env: ToolEnv, target: Agent, task: str) -> str:
        """Hand ``task`` to ``target`` (a teammate of the same tenant) as a ``teammate:<task>`` dispatch that
        carries the person, in the background, then announce the result into ``env``'s conversation."""
        self._may_hand_off(env, "delegate")
        task_id = secrets.token_hex(6)
        origin = env.context
        target_context = _acting_context(origin, teammate_dispatch(origin, team_task_id=task_id, content=task,
                                                                   channel="delegate"), target)
        work = Inbound(target.tenant_id, target.agent_key, target_context, "delegate", f"delegate:{task_id}", task,
                       depth=env.depth + 1)
        self._started(env, "delegate", task_id, target)
        self._spawn(self._task_then_announce(env, work, self._start_handoff(env, task_id, work),
                                             lambda content: delegate_announce(
                                                 origin, task_id=task_id, content=content, channel=env.channel),
                                             task_id))
        return task_id

    async def dispatch_teammate(self, origin: RequestContext, task_id: str, teammate: str | None, *,
                                env: ToolEnv | None = None) -> TeamTask:
        """Run the team task ``task_id`` as its teammate (``teammate``, else its assignee; on its team) like
        :meth:`delegate`: a ``teammate:<task>`` dispatch carrying ``origin``'s person, in the background; the
        task is ``in_progress`` now and records the run's end (:mod:`agentfy.runtime.team_tasks`).  From a
        tool (``env``) it is a hand-off — the depth and per-agent limits apply, ``cancel_task`` stops it, and
        the result is announced into ``env``'s conversation; from the HTTP API (no ``env``) it is recorded on
        the task only.  Returns the task as started."""
        if env is not None:
            self._may_hand_off(env, "task_dispatch")
        dispatch = await asyncio.to_thread(team_tasks.start_dispatch, self.db, Scope.of(origin.tenant_id), task_id,
                                           teammate, by_agent=None if env is None else env.agent)
        task, target = dispatch.task, dispatch.teammate
        target_context = _acting_context(origin, teammate_dispatch(origin, team_task_id=task.id, content=task.prompt(),
                                                                   channel=team_tasks.TEAMMATE_CHANNEL), target)
        work = Inbound(target.tenant_id, target.agent_key, target_context, team_tasks.TEAMMATE_CHANNEL,
                       team_tasks.conversation_of(task.id), task.prompt(), depth=0 if env is None else env.depth + 1)
        self._note(_handoff(env.agent if env is not None else target, origin, "task_dispatch", task.id, target,
                            depth=work.depth))
        if env is None:
            running = asyncio.get_running_loop().create_task(self(work))
            self._spawn(team_tasks.settle_alone(self.db, task, running, lambda: self.end_conversation(work)))
            return task
        settled = team_tasks.settle(self.db, task, self._start_handoff(env, task.id, work))
        self._spawn(self._task_then_announce(env, work, asyncio.get_running_loop().create_task(settled),
                                             lambda content: delegate_announce(
                                                 origin, task_id=task.id, content=content, channel=env.channel),
                                             task.id))
        return task

    def send_to_session(self, env: ToolEnv, session: Session, text: str) -> None:
        """Post ``text`` into ``session`` (another open conversation of ``env``'s agent, checked by the tool) as
        a ``session_send_tool`` message carrying the person, in the background: the agent's run there acts
        for that person in that conversation's SCOPE, and its reply goes to that chat.  A hand-off: the depth
        and per-agent limits apply."""
        self._may_hand_off(env, "session_send")
        assert session.channel is not None and session.conversation is not None, "the tool checks both"
        message = session_send(env.context, content=text, channel=session.channel,
                               target_user_id=session.user_id or None)
        context = _acting_context(env.context, message, env.agent)
        posted = Inbound(env.agent.tenant_id, env.agent.agent_key, context, session.channel, session.conversation,
                         text, depth=env.depth + 1)
        task_id = secrets.token_hex(6)
        self._started(env, "session_send", task_id, env.agent, target_id=session.session_key)
        self._spawn(self._post_then_deliver(posted, self._start_handoff(env, task_id, posted), task_id))

    def refused(self, env: ToolEnv, tool: str, reason: str) -> None:
        """Record that a hand-off tool refused (the model is told ``reason`` by the toolbox): an
        ``agent.handoff.refused`` event and an audit entry with the ACTOR and the reason."""
        self._note(Happened(HANDOFF_REFUSED, env.agent, audit_actor(env.context), None, shown={"tool": tool},
                            kept={"reason": reason}))

    def _started(self, env: ToolEnv, tool: str, task_id: str, target: Agent, *, target_id: str | None = None) -> None:
        """Record a hand-off ``env``'s agent starts (see :func:`_handoff`)."""
        self._note(_handoff(env.agent, env.context, tool, task_id, target, depth=env.depth + 1, target_id=target_id))

    def _note(self, happened: Happened) -> None:
        """Record ``happened`` in the background (a worker thread; :meth:`wait_idle` waits for it)."""
        self._spawn(asyncio.to_thread(activity.record, self.db, self.events, happened))

    async def _post_then_deliver(self, posted: Inbound, working: asyncio.Task[Reply], task_id: str) -> None:
        reply = await self._handoff_result(working, task_id)
        if reply is not None and self.outbound is not None:
            await self.outbound(posted, reply)

    async def _handoff_result(self, working: asyncio.Task[Reply], task_id: str) -> Reply | None:
        """The hand-off's reply, ``None`` when it was cancelled (``cancel_task``); its failure raises.  Either
        way it no longer counts as running.  Cancelling the waiter (shutdown) cancels the run too."""
        try:
            return await asyncio.shield(working)
        except asyncio.CancelledError:
            if not working.cancelled():  # the waiter itself is cancelled, not the hand-off
                working.cancel()
                raise
            return None
        finally:
            self._handoffs.pop(task_id, None)

    def _start_handoff(self, env: ToolEnv, task_id: str, work: Inbound) -> asyncio.Task[Reply]:
        """The hand-off's run, started now and registered at once: from this moment it counts against the
        agent's limit and ``cancel_task`` finds it."""
        working = asyncio.get_running_loop().create_task(self(work))
        self._handoffs[task_id] = _Handoff(env.agent.id, env.conversation, working)
        return working

    async def _task_then_announce(self, env: ToolEnv, work: Inbound, working: asyncio.Task[Reply],
                                  announce: Callable[[str], InboundMessage], task_id: str) -> None:
        """Wait for the task's run (in its own conversation), complete that session, then announce its reply
        as the synthetic message ``announce`` makes (sender ``subagent:``/``delegate:``, the person in its
        metadata); a cancelled task is announced as cancelled."""
        try:
            result = await self._handoff_result(working, task_id)
            content = f"task {task_id} was cancelled" if result is None else result.text or "(no answer)"
        except Exception as error:
            logger.exception("runtime.task_failed", extra={"task_id": task_id})
            content = f"task {task_id} failed: {error}"
        try:
            await self.end_conversation(work)
        except Exception:  # the result is still announced; the session stays open for the next flush
            logger.exception("runtime.task_end_failed", extra={"task_id": task_id})
        message = announce(content)
        context = _acting_context(env.context, message, env.agent)
        announced = Inbound(env.agent.tenant_id, env.agent.agent_key, context, env.channel, env.conversation,
                            message.content)
        reply = await self(announced)
        if self.outbound is not None:
            await self.outbound(announced, reply)

    def _may_hand_off(self, env: ToolEnv, tool: str) -> None:
        """Refuse a hand-off beyond the depth or the agent's concurrency limit (the model is told why)."""
        depth_limit = self.settings.max_delegation_depth
        if env.depth >= depth_limit:
            raise ToolError(f"{tool}: this run is {env.depth} hand-offs from the person's message and at most "
                            f"{depth_limit} are allowed (runtime.max_delegation_depth); do the task here")
        running = sum(1 for handoff in self._handoffs.values() if handoff.agent_id == env.agent.id)
        limit = self.settings.max_delegations_per_agent
        if running >= limit:
            raise ToolError(f"{tool}: @{env.agent.agent_key} already has {running} hand-offs running, at most {limit} "
                            "at once (runtime.max_delegations_per_agent); wait for a result or cancel_task one")

    def cancel(self, env: ToolEnv, task_id: str) -> bool:
        """Cancel the running hand-off ``task_id`` if this agent started it from this conversation; its
        cancellation is announced like a result.  ``False`` when there is none (finished, unknown, another
        conversation's or agent's, or running in another process)."""
        handoff = self._handoffs.get(task_id)
        if handoff is None or handoff.agent_id != env.agent.id or handoff.conversation != env.conversation:
            return False
        return handoff.run.cancel()

    def _spawn(self, work: Awaitable[None]) -> None:
        async def guarded() -> None:
            try:
                await work
            except Exception:
                logger.exception("runtime.background_failed")

        task = asyncio.get_running_loop().create_task(guarded())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def wait_idle(self) -> None:
        """Until every background task (subagents, delegates, their announcements) has finished."""
        while self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)


def _handoff(by: Agent, origin: RequestContext, tool: str, task_id: str, target: Agent, *, depth: int,
             target_id: str | None = None) -> Happened:
    """A hand-off ``by`` starts for ``origin``: an ``agent.handoff.started`` event of ``by`` and an audit entry
    whose actor is the person it acts for and whose target is the target agent (or ``target_id``, a session)."""
    return Happened(HANDOFF_STARTED, by, audit_actor(origin), target_id or target.id,
                    shown={"tool": tool, "task_id": task_id, "target": target.agent_key}, kept={"depth": str(depth)})


def _acting_context(origin: RequestContext, message: InboundMessage, agent: Agent) -> RequestContext:
    """The context of ``agent``'s run of the synthetic ``message`` made from ``origin``: the person it carries
    acts; the role is the origin's only when that person is the origin's actor (never taken from metadata)."""
    request = run_request_from_inbound(message)
    role = origin.role if request.sender_id == origin_sender_of(origin) else None
    return context_for_run(request, agent.tenant_id, agent.id, agent.agent_key, role=role)


@dataclass(frozen=True, slots=True)
class _Handoff:
    """A running hand-off: the agent and conversation that started it (who may cancel it), and its run."""

    agent_id: str
    conversation: str
    run: asyncio.Task[Reply]


class _Shown:
    """What the person has been shown of one run's reply: the streamed pieces, with a blank line between
    rounds that both said something, so the pieces join to exactly :meth:`text`.  Each piece goes to the
    surface's ``on_text`` and, as an ``agent.run.delta`` event, to the subscribers who may read the
    conversation (the event carries the run's scope for that check)."""

    def __init__(self, events: RunEvents, agent: Agent, tenant_slug: str, run_id: str, *,
                 scope_user_id: str | None, on_text: TextSink | None) -> None:
        self._events, self._agent, self._slug, self._run_id = events, agent, tenant_slug, run_id
        self._scope = scope_user_id
        self._on_text = on_text
        self._parts: list[str] = []
        self._round: list[str] = []

    async def piece(self, text: str) -> None:
        """One piece of the current round's text (the provider's ``on_text``)."""
        if not text:
            return
        if not self._round and self._parts:
            await self._send(ROUND_SEPARATOR)
        self._round.append(text)
        await self._send(text)

    async def end_round(self, text: str | None) -> None:
        """The round's whole text as the provider returned it: a provider that did not stream it is shown
        now, so every surface sees every round."""
        if text and not self._round:
            await self.piece(text)
        if self._round:
            self._parts.append("".join(self._round))
        self._round = []

    def text(self) -> str | None:
        return ROUND_SEPARATOR.join(self._parts) if self._parts else None

    async def _send(self, text: str) -> None:
        emit(self._events, RUN_DELTA, self._agent, self._slug, {"id": self._run_id, "text": text},
             scope_user_id=self._scope)
        if self._on_text is not None:
            await self._on_text(text)


def _stored_call(call: ToolCall) -> sessions.MessageToolCall:
    """A call as the session stores it: its arguments are JSON values (strings from the offline model, any
    JSON value from others); the store serialises them with ``json.dumps`` and refuses what is not JSON."""
    return sessions.MessageToolCall(call.id, call.name, dict(call.arguments))

