"""The consolidation workers on the agent's own model: an episodic summariser and a knowledge extractor that
ask the model the agent talks with, when it has one, and the offline heuristics otherwise.

**Which model.** The summary or the graph of an agent's conversation is made by that agent's model
(``config.model``, :class:`~agentfy.runtime.providers.ModelSettings`), through the same providers, credentials
and call policy as its runs — never another agent's or a process-wide one — and every call's tokens are
recorded in ``usage_snapshots`` under the agent, like a run's (``run_id`` ``episodic-…``/``semantic-…``, the
session's key for a summary).  An agent on the ``offline`` model keeps the deterministic heuristics
(:class:`~agentfy.events.consolidation.summariser.ExtractiveSummariser`,
:class:`~agentfy.events.consolidation.extractor.CapitalisedPhraseExtractor`), as does an agent whose model is
misconfigured (a missing credential: logged, and the memory still consolidates).  A model that fails
(unreachable, 5xx after the policy's tries) raises: the event is retried with the bus's backoff, like any
failing handler.  An extraction that is not the JSON asked for falls back to the heuristic for that summary
(logged): the graph grows either way.

**Where the calls run.** Consolidation handlers run in the event workers' threads, which have no event
loop, while the model SDKs' clients belong to the loop they were made on.  :class:`ModelCalls` is one event
loop in a thread of its own, with providers of its own; the workers hand it coroutines and wait for the
result (bounded by the call policy's timeout and tries).
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import threading
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

from agentfy.agents.prompt import CACHE_BOUNDARY_MARKER
from agentfy.events.consolidation.extractor import (
    CapitalisedPhraseExtractor,
    ExtractedEntity,
    ExtractedRelation,
    Extraction,
)
from agentfy.events.consolidation.summariser import ExtractiveSummariser, clip
from agentfy.identity import OrgId, Scope, parse_id
from agentfy.runtime import usage
from agentfy.runtime.model import ChatMessage, ModelRequest
from agentfy.runtime.providers import OFFLINE, ModelConfigError, ModelSettings, Providers
from agentfy.store.db import Database
from agentfy.store.inputs import is_clean_text
from agentfy.store.repos import agents
from agentfy.store.repos.knowledge import NAME_MAX_LENGTH, RELATION_MAX_LENGTH, TYPE_MAX_LENGTH
from agentfy.store.repos.sessions import Session, SessionMessage

logger: Final = logging.getLogger("agentfy.runtime.memory_models")

T = TypeVar("T")

#: What the summariser sends at most (characters of transcript; the oldest messages are kept, cut at the end).
TRANSCRIPT_MAX_CHARS: Final = 24_000
SUMMARY_INSTRUCTIONS: Final = (
    "You write the long-term memory of a conversation. Summarise the transcript below in at most ten short "
    "sentences: the facts learnt about the people, their plans, decisions and preferences, and what was done. "
    "Write plain text, no preamble. If nothing is worth remembering, answer with nothing.")
EXTRACTION_INSTRUCTIONS: Final = (
    "Extract the knowledge graph of the text below. Answer with JSON only, of this shape: "
    '{"entities": [{"name": "Ada Lovelace", "type": "person"}], '
    '"relations": [{"source": 0, "target": 1, "relation": "works_at"}]} '
    "where source and target are indexes into entities. Entities are people, organisations, places, projects "
    "and things named in the text; types are one lower-case word; relations are short snake_case verbs.")


class ModelCalls:
    """An event loop in a daemon thread and the providers that live on it (see the module docstring).
    :meth:`run` is called from other threads; :meth:`close` closes the providers' connections and the loop."""

    def __init__(self, providers: Providers) -> None:
        self.providers = providers
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="agentfy-memory-models", daemon=True)
        self._thread.start()

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        """Run ``work`` on the loop and wait for its result (its exception is raised here)."""
        return asyncio.run_coroutine_threadsafe(work, self._loop).result()

    def close(self) -> None:
        if not self._thread.is_alive():
            return
        try:
            self.run(self.providers.aclose())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
            self._loop.close()


@dataclass
class AgentModels:
    """Asks an agent's own model one question (see the module docstring); ``None`` when the agent is on the
    offline model or its model is misconfigured (the caller uses its heuristic)."""

    db: Database
    calls: ModelCalls

    def ask(self, tenant_id: str, agent_id: str, *, instructions: str, text: str, purpose: str,
            session_key: str | None = None) -> str | None:
        scope = Scope(parse_id(tenant_id, OrgId, field="tenant_id"))
        with self.db.transaction(write=False) as tx:
            agent = agents.get_agent(tx, scope, agent_id)
            try:
                settings = ModelSettings.of(agent)
                if settings.provider == OFFLINE:
                    return None
                provider = self.calls.providers.for_agent(tx, scope, agent, settings)
            except ModelConfigError as error:
                logger.warning("memory_models.misconfigured", extra={"agent_id": agent.id, "tenant_id": tenant_id,
                                                                     "problem": str(error)})
                return None
        request = ModelRequest(f"{instructions}\n{CACHE_BOUNDARY_MARKER}\n", [ChatMessage("user", text)], (),
                               agent.agent_key)
        response = self.calls.run(provider.complete(request))
        if response.usage is not None:
            usage.record(self.db, agent, provider=settings.provider, model=settings.model or settings.provider,
                         usage=response.usage, run_id=f"{purpose}-{secrets.token_hex(8)}", session_key=session_key)
        return response.text or ""


def transcript(messages: Sequence[SessionMessage], max_chars: int = TRANSCRIPT_MAX_CHARS) -> str:
    """``role: text`` lines of the messages that say something (a tool result as ``tool: …``), cut to fit."""
    lines = [f"{message.role}: {' '.join(message.content.split())}" for message in messages
             if message.role in ("user", "assistant", "tool") and message.content.strip()]
    return clip("\n".join(lines).replace(CACHE_BOUNDARY_MARKER, ""), max_chars)


@dataclass
class ModelSummariser:
    """The episodic summariser on the session's agent's model (the heuristic for the offline model)."""

    models: AgentModels
    fallback: ExtractiveSummariser = field(default_factory=ExtractiveSummariser)

    def summarise(self, session: Session, messages: Sequence[SessionMessage]) -> str:
        shown = transcript(messages)
        if not shown:
            return ""
        answer = self.models.ask(session.tenant_id, session.agent_id, instructions=SUMMARY_INSTRUCTIONS, text=shown,
                                 purpose="episodic", session_key=session.session_key)
        if answer is None:
            return self.fallback.summarise(session, messages)
        return answer.replace("\x00", "").strip()


@dataclass
class ModelExtractor:
    """The knowledge extractor on the summary's agent's model (the heuristic for the offline model, or when
    the answer is not the JSON asked for)."""

    models: AgentModels
    fallback: CapitalisedPhraseExtractor = field(default_factory=CapitalisedPhraseExtractor)

    def extract(self, text: str) -> Extraction:
        return self.fallback.extract(text)

    def extract_for(self, tenant_id: str, agent_id: str, text: str) -> Extraction:
        answer = self.models.ask(tenant_id, agent_id, instructions=EXTRACTION_INSTRUCTIONS, text=text,
                                 purpose="semantic")
        if answer is None:
            return self.fallback.extract(text)
        parsed = parse_extraction(answer, max_entities=self.fallback.max_entities,
                                  max_relations=self.fallback.max_relations)
        if parsed is None:
            logger.warning("memory_models.extraction_not_json", extra={"agent_id": agent_id, "tenant_id": tenant_id})
            return self.fallback.extract(text)
        return parsed


def _label(value: object, max_length: int) -> str | None:
    if not isinstance(value, str):
        return None
    flat = " ".join(value.split())
    return flat if flat and len(flat) <= max_length and is_clean_text(flat) else None


def parse_extraction(answer: str, *, max_entities: int, max_relations: int) -> Extraction | None:
    """The model's JSON answer as an :class:`Extraction` (a fenced code block is unwrapped; entities without a
    usable name and relations to indexes that do not exist are dropped), ``None`` when it is not that JSON."""
    body = answer.strip()
    if body.startswith("```"):
        body = body.strip("`").removeprefix("json").strip()
    try:
        data = json.loads(body)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("entities"), list):
        return None
    kept: dict[int, int] = {}  # the answer's index -> ours
    entities: list[ExtractedEntity] = []
    for index, raw in enumerate(data["entities"]):
        name = _label(raw.get("name"), NAME_MAX_LENGTH) if isinstance(raw, dict) else None
        if name is None or len(entities) >= max_entities:
            continue
        kind = _label(raw.get("type"), TYPE_MAX_LENGTH) or "concept"
        kept[index] = len(entities)
        entities.append(ExtractedEntity(name, kind.lower()))
    relations: list[ExtractedRelation] = []
    for raw in data.get("relations") or []:
        if not isinstance(raw, dict) or len(relations) >= max_relations:
            continue
        source, target = raw.get("source"), raw.get("target")
        relation = _label(raw.get("relation"), RELATION_MAX_LENGTH)
        if (type(source) is int and type(target) is int and source in kept and target in kept and relation
                and kept[source] != kept[target]):
            relations.append(ExtractedRelation(kept[source], kept[target], relation))
    return Extraction(tuple(entities), tuple(relations))
