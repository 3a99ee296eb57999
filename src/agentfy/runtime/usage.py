"""What each model call costs: one ``usage_snapshots`` row per call, and this process's token counters.

A run calls the model once per round of tool calls; each call with reported usage gives one row (tenant, the
agent's real ID, the model, the provider, the run and its session, prompt/completion/cached tokens,
:func:`row`).  The runtime writes it with the run's next write — the round's tool messages, or the reply — in
that transaction (:func:`commit_with`), not in one of its own: the model call runs with no transaction open,
and one commit after it is cheaper than two.  Recording is bookkeeping, never part of the answer: when a row
fails, that transaction is rolled back and the run's write is made again alone, and the failure is logged.
Not a savepoint around the rows, which would roll them back alone: on PostgreSQL a savepoint and its release
are two more round trips on every reply, paid for a failure that should never happen; this way only a failure
pays (one more transaction).

:class:`TokenCounters` are the totals ``/metrics`` exports (``agentfy_model_tokens``), labelled by provider
and kind only.  Not by tenant or agent: those are unbounded (every organization and agent would be new
series), and the per-agent figures are in the table, read through ``GET /v1/usage`` and ``agentfy usage``.
Not by model either: the model name is free text an operator configures, so it is unbounded too.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Final, Literal

from agentfy.runtime.model import Usage
from agentfy.store.db import Database, Tx
from agentfy.store.repos import telemetry
from agentfy.store.repos.agents import Agent

logger: Final = logging.getLogger("agentfy.runtime.usage")

TokenKind = Literal["prompt", "completion", "cached"]
KINDS: Final[tuple[TokenKind, ...]] = ("prompt", "completion", "cached")


class TokenCounters:
    """Tokens of every model call of this process, by ``(provider, kind)``; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._totals: dict[tuple[str, TokenKind], int] = {}

    def add(self, provider: str, usage: Usage) -> None:
        with self._lock:
            counts: tuple[tuple[TokenKind, int | None], ...] = (
                ("prompt", usage.prompt_tokens), ("completion", usage.completion_tokens),
                ("cached", usage.cached_tokens))
            for kind, n in counts:
                if n is not None:
                    key = (provider, kind)
                    self._totals[key] = self._totals.get(key, 0) + n

    def snapshot(self) -> dict[tuple[str, TokenKind], int]:
        """The totals so far (a copy)."""
        with self._lock:
            return dict(self._totals)


def row(agent: Agent, *, provider: str, model: str, usage: Usage, run_id: str,
        session_key: str | None) -> telemetry.UsageRecord:
    """One call's usage row for ``agent`` (its tenant and ID)."""
    return telemetry.UsageRecord(model=model, input_tokens=usage.prompt_tokens,
                                 output_tokens=usage.completion_tokens, cached_tokens=usage.cached_tokens,
                                 tenant_id=agent.tenant_id, agent_id=agent.id, provider=provider, run_id=run_id,
                                 session_key=session_key)


class _NotRecorded(Exception):
    """A usage row failed inside :func:`commit_with`'s transaction (its cause is the failure)."""


def commit_with(db: Database, write: Callable[[Tx], object], rows: Sequence[telemetry.UsageRecord]) -> bool:
    """``write``, then ``rows``, in one transaction, committed; ``False`` (and a log line) when the rows failed,
    and then ``write`` was made again alone in a transaction of its own, without them.

    ``write`` must keep its effects inside the transaction it is given (it may run twice).  A failure of
    ``write`` itself, or of the commit, is the caller's, as with any transaction."""
    if rows:
        try:
            with db.transaction() as tx:
                write(tx)
                try:
                    for each in rows:
                        telemetry.record_usage(tx, each)
                except Exception as error:
                    raise _NotRecorded() from error
            return True
        except _NotRecorded as failed:
            logger.error("runtime.usage_not_recorded", exc_info=failed.__cause__,
                         extra={"agent_id": rows[0].agent_id, "run_id": rows[0].run_id})
    with db.transaction() as tx:
        write(tx)
    return not rows


def record(db: Database, agent: Agent, *, provider: str, model: str, usage: Usage, run_id: str,
           session_key: str | None) -> bool:
    """Store one call's usage for ``agent`` in a transaction of its own (a call with no write after it: an
    embedding); ``False`` (and a log line) when the write failed — the caller goes on."""
    return record_rows(db, [row(agent, provider=provider, model=model, usage=usage, run_id=run_id,
                                session_key=session_key)])


def record_rows(db: Database, rows: Sequence[telemetry.UsageRecord]) -> bool:
    """``rows`` in a transaction of their own (rows no later write took); ``False`` (and a log line) when the
    write failed: none of them is written then, and the caller goes on."""
    if not rows:
        return True
    try:
        with db.transaction() as tx:
            for each in rows:
                telemetry.record_usage(tx, each)
        return True
    except Exception:
        logger.exception("runtime.usage_not_recorded", extra={"agent_id": rows[0].agent_id if rows else None})
        return False


def add(total: Usage | None, more: Usage) -> Usage:
    """``total`` plus one more call's tokens (the run's usage).  Cached tokens stay unknown (``None``) only
    while no call reported them: a known count is never turned into "unknown" by a call that did not say."""
    if total is None:
        return more
    cached = None if total.cached_tokens is None and more.cached_tokens is None else (
        (total.cached_tokens or 0) + (more.cached_tokens or 0))
    return Usage(total.prompt_tokens + more.prompt_tokens, total.completion_tokens + more.completion_tokens, cached)
