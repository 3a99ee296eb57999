"""The message path's curve: messages per second and latency at 1, 8, 32 concurrent chats, for 1, 2, 4 gateway
processes, on PostgreSQL, beside a bare app doing the same SQL at the same concurrency and process count.

What is measured: ``POST /v1/agents/{id}/messages`` to an agent on the offline model, through real
``agentfy serve --workers N`` processes (:func:`bench.changefeed.serve`: PostgreSQL, a signing key, event workers
off) on a scratch database (:func:`bench.postgres.scratch_database`, dropped at the end).  Chosen over the
Telegram webhook of :mod:`bench.runtime` because the reply comes back in the response: a round trip is one
HTTP request, so ``wrk`` (a C client) measures it, and no fake Bot API has to share the benchmark's Python
process with the client (at 8 chats that pair already limits both sides there).  The work behind it is the
same runtime loop: the agent resolved, the session opened or locked, the history read, the user message
stored, the offline model, the reply and its usage stored.

Each chat is one ``wrk`` thread with one connection (``-tC -cC``), so a chat sends its next message when the
reply to its last one arrived (a closed loop), each a conversation of :data:`TURNS` messages, then a new one
(sessions stay short, every round measures the same work).  The baseline is the bare FastAPI app of
:mod:`bench.api_mix` (its ``send`` route: our runtime's statements for a message, captured from it, on the
same driver, in the runtime's two transactions) under
``uvicorn --workers N``.  For each process count both servers run; for each chat count the rounds alternate
between them (the order swapped every round) and each figure is the median round: rate, wrk's p50 and p99.
"""

from __future__ import annotations

import os
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from agentfy.store.db import Database
from agentfy.store.migrate import upgrade
from bench.api_mix import BARE_APP, Seeded, bare_env, seed, send_statements
from bench.changefeed import serve, stop
from bench.gateway import free_port
from bench.harness import alternate_rounds
from bench.postgres import scratch_database
from bench.scaling_plot import figure, log_x, log_y, save
from bench.scaling_table import Table, ms, per_second, ratio

CHATS = (1, 8, 32)
PROCESSES = (1, 2, 4)
TURNS = 10
ROUNDS = 3
ROUND_SECONDS = 3
#: A request slower than this counts as a wrk timeout (an error), not a latency.
TIMEOUT_SECONDS = 20
#: Each gateway process imports the whole app before it serves (about 10 s of CPU here): under load, four of
#: them on two cores take minutes.
READY_SECONDS = 600

LUA = r"""
local made = 0
function setup(thread)
  made = made + 1
  thread:set("chat", made)
end
function init(args)
  nonce, agent = args[1], args[2]
  headers = {["Authorization"] = "Bearer " .. args[3], ["Content-Type"] = "application/json"}
  sent = 0
end
function request()
  local conversation = nonce .. "-" .. chat .. "-" .. math.floor(sent / TURNS)
  sent = sent + 1
  local body = '{"text":"hello there","conversation":"' .. conversation .. '"}'
  return wrk.format("POST", "/v1/agents/" .. agent .. "/messages", headers, body)
end
""".replace("TURNS", str(TURNS))

#: The bare app holds one connection per worker thread (and anyio keeps up to 40 threads per process): with 4
#: processes at 32 chats that passes PostgreSQL's default 100 connections.  Its thread pool is capped so that
#: all its processes together hold at most :data:`BARE_CONNECTIONS`; beyond that a process queues requests.
BARE_CONNECTIONS = 48
BARE_THREADS = """

@app.on_event("startup")
async def _cap_threads() -> None:
    import anyio.to_thread
    anyio.to_thread.current_default_thread_limiter().total_tokens = int(os.environ["BARE_THREADS"])
"""

#: The share of failed requests a round may have (counted and printed) before it is refused.
ERROR_FRACTION = 0.02
_UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0}


@dataclass(frozen=True)
class Round:
    """One wrk round: completed requests per second, wrk's p50 and p99 (ms), and failed requests (non-2xx
    answers and socket errors: a database out of connections answers 503)."""

    rate: float
    p50_ms: float
    p99_ms: float
    errors: int = 0


@dataclass(frozen=True)
class Point:
    """One (processes, chats) point: the median rounds of ours and of the bare app."""

    processes: int
    chats: int
    ours: Round
    bare: Round


def parse(output: str) -> Round:
    """Rate, p50, p99 and failures from ``wrk --latency`` output.  A round where more than
    :data:`ERROR_FRACTION` of the requests failed raises: its rate would count failures as fast answers."""
    rate = float(next(line for line in output.splitlines() if line.startswith("Requests/sec:")).split()[1])
    total = int(re.search(r"^\s+(\d+) requests in", output, re.MULTILINE).group(1))  # type: ignore[union-attr]
    failed = sum(int(n) for n in re.findall(r"Non-2xx or 3xx responses: (\d+)", output))
    socket = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output)
    failed += sum(int(n) for n in socket.groups()) if socket else 0
    if failed > ERROR_FRACTION * max(total, 1):
        raise RuntimeError(f"wrk saw {failed} failed requests of {total}:\n{output}")

    def latency(percent: int) -> float:
        match = re.search(rf"^\s+{percent}%\s+([\d.]+)(us|ms|s)\s*$", output, re.MULTILINE)
        if match is None:
            raise RuntimeError(f"no p{percent} in wrk's output:\n{output}")
        return float(match.group(1)) * _UNITS[match.group(2)]

    return Round(rate, latency(50), latency(99), failed)


def wrk_round(base: str, script: Path, seeded: Seeded, chats: int, seconds: int) -> Round:
    command = ["wrk", f"-t{chats}", f"-c{chats}", f"-d{seconds}s", f"--timeout={TIMEOUT_SECONDS}s", "--latency",
               "-s", str(script), base, "--", secrets.token_hex(4), seeded.agent_id, seeded.token]
    return parse(subprocess.run(command, capture_output=True, text=True, check=True).stdout)


def check(base: str, seeded: Seeded) -> None:
    """One message answered with the offline model's reply (before any timing)."""
    response = httpx.post(f"{base}/v1/agents/{seeded.agent_id}/messages", json={"text": "hi", "conversation": "x"},
                          headers={"Authorization": f"Bearer {seeded.token}"}, timeout=30)
    if response.status_code != 200 or "heard: hi" not in response.json()["reply"]:
        raise RuntimeError(f"{base}: the message answered {response.status_code} {response.text[:300]}")


def serve_bare(work: Path, conninfo: str, seeded: Seeded, statements: dict[str, tuple[str, dict[str, Any]]],
               processes: int) -> tuple[subprocess.Popen[bytes], str]:
    """The bare app under ``uvicorn --workers N`` on a free port, ready (stop it with :func:`stop`), running
    ``statements`` (:func:`bench.api_mix.send_statements`) for a message."""
    port = free_port()
    command = [sys.executable, "-m", "uvicorn", "bare_mix:app", "--host", "127.0.0.1", "--port", str(port),
               "--workers", str(processes), "--log-level", "warning", "--no-access-log"]
    env = {**os.environ, "PYTHONPATH": str(work), "BARE_DB": conninfo, **bare_env("postgresql", seeded, statements),
           "BARE_THREADS": str(min(40, BARE_CONNECTIONS // processes))}
    log = work / f"bare-{port}.log"
    with log.open("wb") as output:
        process = subprocess.Popen(command, env=env, cwd=work, stdout=output, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + READY_SECONDS
    while time.time() < deadline and process.poll() is None:  # a crashed app fails now, with its output
        try:
            httpx.get(f"{base}/openapi.json", timeout=1)
            return process, base
        except httpx.HTTPError:
            time.sleep(0.2)
    stop(process)
    raise RuntimeError(f"the bare app with {processes} process(es) did not start: "
                       f"{log.read_text(errors='replace')[-2000:]}")


def alternate(ours: Callable[[], Round], bare: Callable[[], Round], rounds: int) -> tuple[Round, Round]:
    """The median of ``rounds`` alternating rounds of each side (the order swapped every round)."""
    mine, theirs = alternate_rounds(ours, bare, rounds)

    def median(runs: list[Round]) -> Round:
        return Round(*(statistics.median(getattr(r, name) for r in runs) for name in ("rate", "p50_ms", "p99_ms")),
                     errors=sum(r.errors for r in runs))

    return median(mine), median(theirs)


def measure(*, processes: tuple[int, ...] = PROCESSES, chats: tuple[int, ...] = CHATS, rounds: int = ROUNDS,
            seconds: int = ROUND_SECONDS, log: Callable[[str], None] = print) -> list[Point]:
    """Every (processes, chats) point, on a scratch database of its own."""
    points: list[Point] = []
    with tempfile.TemporaryDirectory() as tmp, scratch_database("agentfy_bench_scaling") as url:
        work = Path(tmp)
        (work / "bare_mix.py").write_text(BARE_APP + BARE_THREADS)
        script = work / "messages.lua"
        script.write_text(LUA)
        db = Database(url)
        upgrade(db)
        seeded = seed(db)
        statements = send_statements(db, seeded)  # our app in this process, before any server starts
        conninfo = db.conninfo
        db.dispose()
        for count in processes:
            ours_process, ours_base = serve(url, count, {"AGENTFY_WORKSPACE_ROOT": str(work / "workspaces")},
                                            ready_seconds=READY_SECONDS, log=work / f"serve-{count}.log")
            try:
                bare_process, bare_base = serve_bare(work, conninfo, seeded, statements, count)
                try:
                    for base in (ours_base, bare_base):
                        check(base, seeded)
                        wrk_round(base, script, seeded, max(chats), 1)  # warm-up: every process, pools, caches
                    for chat_count in chats:
                        mine, theirs = alternate(
                            lambda c=chat_count, b=ours_base: wrk_round(b, script, seeded, c, seconds),
                            lambda c=chat_count, b=bare_base: wrk_round(b, script, seeded, c, seconds), rounds)
                        points.append(Point(count, chat_count, mine, theirs))
                        log(f"# messages: {count} process(es), {chat_count} chat(s): {mine.rate:,.0f} msg/s "
                            f"(bare {theirs.rate:,.0f})")
                finally:
                    stop(bare_process)
            finally:
                stop(ours_process)
    return points


def table(points: list[Point], rounds: int) -> Table:
    result = Table(f"message path: POST /v1/agents/{{id}}/messages, offline model, PostgreSQL (medians of {rounds})",
                   ["processes", "chats", "msg/s", "p50 ms", "p99 ms", "bare msg/s", "bare p50", "bare p99",
                    "rate vs bare", "vs 1 process", "failed"])
    one = {p.chats: p.ours.rate for p in points if p.processes == 1}
    result.notes.append("failed: requests that failed in all rounds of the point, agentfy/bare (non-2xx answers and "
                        f"socket errors; a round with over {ERROR_FRACTION:.0%} failed is refused)")
    for p in points:
        scale = ratio(p.ours.rate / one[p.chats]) if p.chats in one else "-"
        result.add(str(p.processes), str(p.chats), per_second(p.ours.rate), ms(p.ours.p50_ms), ms(p.ours.p99_ms),
                   per_second(p.bare.rate), ms(p.bare.p50_ms), ms(p.bare.p99_ms), ratio(p.ours.rate / p.bare.rate),
                   scale, f"{p.ours.errors}/{p.bare.errors}")
    return result


def plot(points: list[Point], path: Path) -> Path:
    fig, (rates, latencies) = figure("Message path: POST /v1/agents/{id}/messages (offline model), "
                                     "agentfy serve --workers N vs a bare app", "PostgreSQL 15", 2)
    chats = sorted({p.chats for p in points})
    colours = {1: "tab:blue", 2: "tab:orange", 4: "tab:green"}
    for count in sorted({p.processes for p in points}):
        mine = sorted((p for p in points if p.processes == count), key=lambda p: p.chats)
        colour = colours.get(count, "tab:gray")
        xs = [p.chats for p in mine]
        rates.plot(xs, [p.ours.rate for p in mine], "o-", color=colour, label=f"agentfy, {count} process(es)")
        rates.plot(xs, [p.bare.rate for p in mine], "s--", color=colour, alpha=0.6, label=f"bare, {count}")
        latencies.plot(xs, [p.ours.p50_ms for p in mine], "o-", color=colour, label=f"agentfy p50, {count}")
        latencies.plot(xs, [p.ours.p99_ms for p in mine], "^:", color=colour, label=f"agentfy p99, {count}")
    log_y(rates, "messages per second (log)")
    rates.set_title("rate (solid: agentfy, dashed: bare)", fontsize=10)
    log_y(latencies, "round-trip latency, ms (log)")
    latencies.set_title("agentfy latency (p50 solid, p99 dotted)", fontsize=10)
    for axis in (rates, latencies):
        log_x(axis, "concurrent chats (log)", chats)
        axis.legend(fontsize=7)
    return save(fig, path)
