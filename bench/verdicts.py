"""The performance goals, and the verdicts the benchmarks record against them.

Every benchmark module prints its own lines as it measures; ``make bench`` (:mod:`bench.all`) runs them all and
ends with one table of every goal: the figure each measured line reached, the goal and ``met`` / ``NOT met``, and
``not measured`` for a goal no line was recorded against (a module that was skipped or failed), so that a goal
cannot pass by silence.

A module records a verdict with :func:`record` (or :func:`record_comparison` for a harness ``Comparison``).  The
verdicts go, one JSON object per line, to the file named by the ``AGENTFY_BENCH_VERDICTS`` environment variable;
without it (a module run on its own) :func:`record` does nothing, and the module's printed lines are the report.
Appending whole lines of under 4 KiB to a file opened with ``O_APPEND`` keeps lines of concurrent writers whole.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from bench.harness import Comparison

#: The environment variable naming the file verdicts are appended to.
VERDICTS_FILE = "AGENTFY_BENCH_VERDICTS"


@dataclass(frozen=True)
class Goal:
    """One row of the goal table: what is measured, against what, and the goal."""

    key: str
    what: str
    against: str
    goal: str
    module: str


#: Every goal ``make bench`` judges, in the order the summary prints them.  The first group is the API and the
#: message path measured against bare equivalents; the second holds the goals of earlier work, which must hold.
GOALS: tuple[Goal, ...] = (
    Goal("api-mix", "mix of the API's main routes", "bare FastAPI app, same SQL and driver",
         ">= 0.8x requests/s, p99 <= 1.5x", "bench.api_mix"),
    Goal("store-reads", "store reads by ID and by key, one per transaction", "raw BEGIN/SELECT/COMMIT",
         "within 1.3x (>= 0.77x)", "bench.store"),
    Goal("store-writes", "create_agent with its change-feed row", "raw INSERT of the same rows, one transaction",
         "within 1.5x (>= 0.67x)", "bench.store"),
    Goal("telegram", "one Telegram message end to end, 1 and 8 chats", "bare webhook + sendMessage",
         ">= 0.8x rate, p50 overhead < 3 ms", "bench.runtime"),
    Goal("model-path", "one message to an agent on an instant OpenAI-compatible model, 1 and 8 chats",
         "the model server's own round trip", "p50 overhead < 5 ms", "bench.model_path"),
    Goal("openai-rate", "the OpenAI-compatible endpoint, offline agent", "the runtime called in-process",
         ">= 0.7x", "bench.openai_rate"),
    Goal("scheduler", "cron Scheduler.tick", "raw FOR UPDATE SKIP LOCKED claim-and-advance loop", ">= 0.5x",
         "bench.scheduler"),
    Goal("mcp", "MCP tool call through the run's tool", "the SDK's Client.call_tool", ">= 0.83x (within 1.2x)",
         "bench.mcp_calls"),
    Goal("search", "full-text memory search, 100,000 documents", "the engine's raw query",
         "within 1.5x (p50, p99); p99 < 20 ms on PostgreSQL", "bench.search"),
    Goal("streaming", "OpenAI endpoint streaming, first token", "the upstream's own first token",
         "overhead p99 < 5 ms", "bench.openai_latency"),
    Goal("changefeed", "the change feed on PostgreSQL", "(a latency)", "commit -> another process's cache p99 < 50 ms",
         "bench.changefeed"),
    Goal("ids", "format_id, is_id, is_canonical_id", "uuid.uuid4(), uuid.UUID(str)", ">= 2x mint, >= 2.5x check",
         "bench.ids"),
    Goal("router", "router get by key and by ID", "a dict look-up d[(tenant, value)]", ">= 0.5x", "bench.router"),
    Goal("events", "event publish with ID validation; consume", "validation off; raw SKIP LOCKED consumers",
         "publish >= 0.95x, validation < 5%; consume >= 0.5x (PostgreSQL)", "bench.events"),
    Goal("gateway", "GET /v1/agents/{ref}, warm caches; console on", "bare FastAPI endpoint; console off",
         ">= 0.8x SQLite, >= 0.7x PostgreSQL; console >= 0.95x", "bench.gateway"),
)

GOALS_BY_KEY = {goal.key: goal for goal in GOALS}


@dataclass(frozen=True)
class Verdict:
    """One measured line judged against a goal: ``figure`` as printed (``0.84x``, ``p50 +2.1 ms``)."""

    goal: str
    subject: str
    figure: str
    met: bool


def record(goal: str, subject: str, figure: str, *, met: bool) -> None:
    """Record one verdict for ``make bench``'s summary (nothing when no verdicts file is named)."""
    if goal not in GOALS_BY_KEY:
        raise ValueError(f"unknown goal {goal!r}: expected one of {', '.join(GOALS_BY_KEY)}")
    path = os.environ.get(VERDICTS_FILE)
    if not path:
        return
    line = json.dumps(asdict(Verdict(goal, subject, figure, met))) + "\n"
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(descriptor, line.encode())
    finally:
        os.close(descriptor)


def record_comparison(goal: str, result: Comparison) -> None:
    """Record a harness comparison that has a goal ratio (one without a goal is reported only)."""
    if result.goal is None:
        return
    record(goal, result.name, f"{result.ratio:.2f}x (goal {result.goal:.2f}x)", met=result.ratio >= result.goal)


def report(goal: str, result: Comparison) -> None:
    """Print a comparison's line and record its verdict (when it has a goal)."""
    print(result.line(), flush=True)
    record_comparison(goal, result)


def read(path: Path) -> list[Verdict]:
    """The verdicts recorded in ``path`` (none when it does not exist)."""
    if not path.exists():
        return []
    return [Verdict(**json.loads(line)) for line in path.read_text().splitlines() if line.strip()]


def summary(verdicts: list[Verdict], modules: frozenset[str] | None = None) -> list[str]:
    """The summary table: every goal with each line recorded against it, or ``not measured``.

    ``modules`` (``bench.store``, ...) limits the table to the goals of the modules that were run.
    """
    lines = ["# every goal: the figure each measured line reached, and the verdict",
             f"{'goal':<13} {'verdict':<12} {'figure':<34} line"]
    goals = [goal for goal in GOALS if modules is None or goal.module in modules]
    for goal in goals:
        mine = [verdict for verdict in verdicts if verdict.goal == goal.key]
        lines.append(f"{goal.key:<13} {'':<12} {'':<34} {goal.what} vs {goal.against}: {goal.goal}")
        if not mine:
            lines.append(f"{'':<13} {'not measured':<12} {'':<34} ({goal.module} recorded no line)")
        for verdict in mine:
            lines.append(f"{'':<13} {'met' if verdict.met else 'NOT met':<12} {verdict.figure:<34} {verdict.subject}")
    met = sum(verdict.met for verdict in verdicts)
    unmeasured = sum(not any(v.goal == goal.key for v in verdicts) for goal in goals)
    lines.append(f"# {met} of {len(verdicts)} measured lines met their goal; {unmeasured} goal(s) not measured")
    return lines
