"""Summarisers: turn a completed session's messages into the text of its episodic summary.

The pipeline depends on the :class:`Summariser` protocol only, so an LLM-backed summariser plugs in without
touching the workers (see ``docs/consolidation.md``).  The default, :class:`ExtractiveSummariser`, needs no
network and is deterministic — the same messages always give the same summary — which keeps the pipeline
testable and lets it run where no model is configured.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Protocol, runtime_checkable

from agentfy.store.repos.sessions import Session, SessionMessage

_SENTENCE_END: Final = re.compile(r"[.!?…](?=\s|$)")


@runtime_checkable
class Summariser(Protocol):
    """Summarise one session.  Contract: return plain text (no NUL), or ``""`` when there is nothing worth
    remembering — the episodic worker then writes no summary and publishes nothing.  Raise to fail the
    event: an exception is retried with backoff, a
    :class:`~agentfy.events.worker.DeterministicEventError` dead-letters it at once.  A summariser must not
    write to the store; it gets the data, the worker owns the transaction."""

    def summarise(self, session: Session, messages: Sequence[SessionMessage]) -> str: ...


def first_sentence(text: str, max_chars: int) -> str:
    """The first sentence of ``text`` with its whitespace collapsed, cut to ``max_chars`` (ending in "…")."""
    flat = " ".join(text.split())
    match = _SENTENCE_END.search(flat)
    sentence = flat[:match.end()] if match else flat
    return clip(sentence, max_chars)


def clip(text: str, max_chars: int) -> str:
    """``text`` if it fits in ``max_chars``, else its start (cut at a word boundary when one is near) + "…"."""
    if len(text) <= max_chars:
        return text
    if max_chars <= 1:
        return "…"[:max_chars]
    head = text[:max_chars - 1]
    space = head.rfind(" ")
    if space >= max_chars // 2:
        head = head[:space]
    return head.rstrip() + "…"


def tool_names(messages: Sequence[SessionMessage]) -> dict[str, str]:
    """The tool name of each call id of the assistant messages (to name a tool result by its tool)."""
    return {call.id: call.name for message in messages for call in message.tool_calls}


@dataclass(frozen=True, slots=True)
class ExtractiveSummariser:
    """The default summariser: the first sentence of each of the first ``max_messages`` messages whose
    role is in ``roles``, one line each (``"user: …"``), each at most ``max_sentence_chars`` and the whole at
    most ``max_chars``.  Empty messages are skipped; no such message at all gives ``""``.

    A tool exchange reads as what happened: an assistant message that called tools as its text (when it has
    some), each result as ``tool <name>: <its first sentence>`` of at most ``max_result_chars``.  Only
    results stored with the call they answer are shown (older text-only tool rows are skipped)."""

    max_messages: int = 8
    max_sentence_chars: int = 240
    max_chars: int = 2000
    max_result_chars: int = 120
    roles: tuple[str, ...] = ("user", "assistant", "tool")

    def summarise(self, session: Session, messages: Sequence[SessionMessage]) -> str:
        names = tool_names(messages)
        lines: list[str] = []
        for message in messages:
            if message.role not in self.roles:
                continue
            if message.role == "tool":
                line = self._result(message, names)
            else:
                sentence = first_sentence(message.content, self.max_sentence_chars)
                line = f"{message.role}: {sentence}" if sentence else ""
            if not line:
                continue
            lines.append(line)
            if len(lines) >= self.max_messages:
                break
        return clip("\n".join(lines), self.max_chars)

    def _result(self, message: SessionMessage, names: dict[str, str]) -> str:
        if message.tool_call_id is None:
            return ""
        result = first_sentence(message.content, self.max_result_chars) or "(no output)"
        return f"tool {names.get(message.tool_call_id, 'call')}: {result}"
