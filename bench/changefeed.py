"""The change feed on PostgreSQL: how fast a committed change reaches another process's cache, and how the
gateway scales with processes now that every one of them listens.

Run: ``make bench-changefeed`` (or ``.venv/bin/python -m bench.changefeed``); needs the PostgreSQL server at
``$AGENTFY_BENCH_PG_URL`` (default ``postgresql://postgres@127.0.0.1:5432/postgres``), where it creates and drops
its own database.

* **Latency**: a second process holds a router and a listening connection; this one renames an agent, one
  transaction at a time, a few milliseconds apart.  Each change carries the wall-clock time it was sent (just
  before ``COMMIT``); the other process records, after its router has dropped the entry, how long ago that
  was.  Reported: p50, p99 and max over all changes (goal: p99 under 50 ms).
* **Dead-connection detection**: what noticing a killed connection costs per transaction — the store's
  explicit ``BEGIN`` on an autocommit connection, against psycopg's implicit ``BEGIN`` (no detection) and
  SQLAlchemy-style ``pre_ping`` (a ``SELECT 1`` per checkout), each a primary-key ``SELECT`` in its own
  transaction, rounds alternating, medians compared.
* **Run-event broadcasts**: two handles on the database, each listening as a gateway process does; one
  broadcasts 2,000 delta-sized bodies, 2 ms apart (a model streaming 500 pieces a second).  Reported: what
  ``broadcast`` costs the publishing run (it only queues), how long after it the other handle heard each body,
  and how many statements carried them.
* **Throughput**: ``agentfy serve --workers N`` (N = 1, 2, 4) behind one port, driven by ``wrk`` on
  ``GET /v1/agents/{key}``; rounds alternate between the process counts and the median round is reported, as
  a ratio to one process.  On a 2-core machine more processes cannot be more than about 2x; what the ratio
  shows is that listening costs nothing measurable and that N processes do not get in each other's way.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import psycopg

from agentfy.agents.router import Router
from agentfy.identity import Scope
from agentfy.identity.context import RequestContext
from agentfy.store.changefeed import Change
from agentfy.store.db import Database
from agentfy.store.migrate import upgrade
from agentfy.store.repos import agents, orgs
from bench.gateway import free_port, wrk_rate
from bench.harness import header
from bench.postgres import scratch_database
from bench.verdicts import record

CHANGES = 400
SPACING_SECONDS = 0.005
PROCESS_COUNTS = (1, 2, 4)
ROUNDS = 3
CONNECTIONS = 64
ADMIN_KEY = "agfy_ok_" + "b" * 40
SIGNING_KEY = "c2lnbmluZy1rZXktZm9yLWJlbmNoLW9ubHktMzJieXRlcyE="


# -- latency ------------------------------------------------------------------------------------------------------
def listen(url: str, tenant_id: str, agent_id: str, count: int) -> None:
    """The other process: a router with the agent cached, a listening connection, and a clock."""
    db = Database(url)
    router = Router(db)
    context = RequestContext(tenant_id=tenant_id)  # type: ignore[arg-type]
    lags: list[float] = []
    done = threading.Event()

    def applied(change: Change) -> None:  # runs after the router (a stale-handler) has dropped the entry
        if change.kind == "agent" and change.at is not None:
            lags.append(time.time() - change.at)
            if router.get_cached(context, agent_id) is not None:
                raise AssertionError("the router still had the agent cached")
            if len(lags) >= count:
                done.set()

    db.changes.on_committed(applied)
    db.changes.start_listening(db.conninfo)
    db.changes.wait_listening(10)
    router.get(context, agent_id)
    print("ready", flush=True)
    done.wait(120)
    print(json.dumps(lags), flush=True)
    db.changes.stop_listening()
    db.dispose()


def measure_latency(url: str) -> list[float]:
    db = Database(url)
    with db.transaction() as tx:
        scope = Scope(orgs.create_organization(tx, slug="latency", name="latency").id)
        agent = agents.create_agent(tx, scope, agent_key="bot-0")
    other = subprocess.Popen([sys.executable, "-m", "bench.changefeed", "--listen", url, scope.tenant_id, agent.id,
                              str(CHANGES)], stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout is not None
        assert other.stdout.readline().strip() == "ready"
        for i in range(1, CHANGES + 1):
            with db.transaction() as tx:
                agents.rename_agent(tx, scope, agent.id, f"bot-{i}")
            time.sleep(SPACING_SECONDS)
        lags: list[float] = json.loads(other.stdout.readline())
    finally:
        other.wait(timeout=60)
        db.dispose()
    return lags


# -- run-event broadcasts ------------------------------------------------------------------------------------------
BROADCASTS = 2000
BROADCAST_SPACING_SECONDS = 0.002


def measure_broadcasts(url: str) -> tuple[list[float], list[float], int]:
    """(seconds each ``broadcast`` call took, seconds until the other handle heard it, statements sent)."""
    sender, other = Database(url), Database(url)
    heard: dict[str, float] = {}
    all_heard = threading.Event()

    def on_broadcast(body: str) -> None:
        heard[body] = time.perf_counter()
        if len(heard) > BROADCASTS:
            all_heard.set()

    other.changes.on_broadcast(on_broadcast)
    try:
        for db in (sender, other):
            db.changes.start_listening(db.conninfo)
            db.changes.wait_listening(10)
        sender.changes.broadcast("warm-up")  # opens the publishing connection
        sent: dict[str, float] = {}
        calls: list[float] = []
        for n in range(BROADCASTS):
            body = json.dumps({"e": "agent.run.delta", "r": {"id": "run", "text": f"word{n} "}})
            started = time.perf_counter()
            sender.changes.broadcast(body)
            calls.append(time.perf_counter() - started)
            sent[body] = started
            time.sleep(BROADCAST_SPACING_SECONDS)
        all_heard.wait(30)
        stats = sender.changes.broadcast_stats
        statements = stats.statements if stats is not None else 0
        return calls, [heard[body] - at for body, at in sent.items() if body in heard], statements
    finally:
        for db in (sender, other):
            db.changes.stop_listening()
            db.dispose()


def percentiles_ms(values: list[float]) -> str:
    ordered = sorted(value * 1000 for value in values)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return f"p50 {statistics.median(ordered):.3f} ms, p99 {p99:.3f} ms"


# -- dead-connection detection --------------------------------------------------------------------------------------
TRANSACTIONS = 2000
DETECTION_ROUNDS = 5


def measure_detection(url: str) -> dict[str, float]:
    """Transactions per second of three ways to run ``SELECT … WHERE id = %s`` in its own transaction."""
    conninfo = url.replace("postgresql+psycopg://", "postgresql://")
    query = "SELECT id FROM organizations WHERE id = %s"
    with psycopg.connect(conninfo, autocommit=True) as setup:
        row = setup.execute("SELECT id FROM organizations LIMIT 1").fetchone()
    assert row is not None
    org_id = row[0]
    implicit = psycopg.connect(conninfo)
    explicit = psycopg.connect(conninfo, autocommit=True)
    implicit_cursor, explicit_cursor = implicit.cursor(), explicit.cursor()

    def psycopg_implicit_begin() -> None:  # what the store did before: no detection before the query
        implicit_cursor.execute(query, (org_id,))
        implicit_cursor.fetchone()
        implicit.commit()

    def explicit_begin() -> None:  # the store now: BEGIN detects a dead connection, at no extra round trip
        explicit_cursor.execute("BEGIN")
        explicit_cursor.execute(query, (org_id,))
        explicit_cursor.fetchone()
        explicit_cursor.execute("COMMIT")

    def pre_ping() -> None:  # SQLAlchemy's pool_pre_ping: a SELECT 1 at every checkout
        implicit_cursor.execute("SELECT 1")
        implicit_cursor.fetchone()
        implicit.rollback()
        psycopg_implicit_begin()

    variants = {"psycopg implicit BEGIN (no detection)": psycopg_implicit_begin,
                "explicit BEGIN (the store)": explicit_begin, "pre_ping SELECT 1 + implicit BEGIN": pre_ping}
    rates: dict[str, list[float]] = {name: [] for name in variants}
    try:
        for _ in range(DETECTION_ROUNDS):
            for name, run in variants.items():
                started = time.perf_counter()
                for _ in range(TRANSACTIONS):
                    run()
                rates[name].append(TRANSACTIONS / (time.perf_counter() - started))
    finally:
        implicit.close()
        explicit.close()
    return {name: statistics.median(values) for name, values in rates.items()}


# -- throughput ---------------------------------------------------------------------------------------------------
def serve(url: str, workers: int, env: dict[str, str] | None = None, *, ready_seconds: float = 90,
          log: Path | None = None) -> tuple[subprocess.Popen[bytes], str]:
    """``agentfy serve --workers N --no-event-workers`` on a free port, ready; ``env`` adds to the environment
    (the admin and signing keys are always set).  With ``log``, the server's output goes to that file and it is
    ready only once every one of the N processes has logged its application startup (``/readyz`` answers as
    soon as the first one serves).  Stop it with :func:`stop`."""
    port = free_port()
    output = log.open("ab") if log is not None else subprocess.DEVNULL
    process = subprocess.Popen(
        [sys.executable, "-m", "agentfy.cli", "serve", "--database-url", url, "--port", str(port), "--workers",
         str(workers), "--no-event-workers"],
        env={**os.environ, **(env or {}), "AGENTFY_ADMIN_API_KEY": ADMIN_KEY, "AGENTFY_SIGNING_KEY": SIGNING_KEY},
        stdout=output, stderr=output)
    if log is not None:
        output.close()  # type: ignore[union-attr]
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + ready_seconds
    while time.time() < deadline:
        try:
            if httpx.get(f"{base}/readyz", timeout=1).status_code == 200 and (
                    log is None or log.read_text(errors="replace").count("Application startup complete") >= workers):
                return process, base
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    stop(process)
    raise RuntimeError(f"agentfy serve --workers {workers} did not become ready")


def children(pid: int) -> list[tuple[int, str]]:
    """``pid``'s child processes as (PID, start time) pairs (Linux ``/proc``; none elsewhere or once it exited):
    the start time tells a leftover worker from a later process that happens to get the same PID."""
    found: list[tuple[int, str]] = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            found += [(child, _started(child)) for child in map(int, task.read_text().split())]
        except OSError:
            continue
    return found


def _started(pid: int) -> str:
    """The process's start time in clock ticks since boot (field 22 of ``/proc/PID/stat``)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2:].split()[19]


def stop(process: subprocess.Popen[bytes]) -> None:
    """Stop a server and, by PID, any of its worker processes that outlived it (the parent was killed)."""
    workers = children(process.pid)
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)
    for pid, started in workers:
        try:
            if _started(pid) == started:
                os.kill(pid, signal.SIGKILL)
        except (OSError, IndexError):
            continue


def measure_throughput(url: str) -> dict[int, list[float]]:
    process, base = serve(url, 1)
    try:
        created = httpx.post(f"{base}/v1/orgs", json={"slug": "load", "name": "load"},
                             headers={"Authorization": f"Bearer {ADMIN_KEY}"}).json()
        headers = {"Authorization": f"Bearer {created['api_key']['key']}"}
        assert httpx.post(f"{base}/v1/agents", json={"agent_key": "support-bot"}, headers=headers).status_code == 201
    finally:
        stop(process)
    rates: dict[int, list[float]] = {n: [] for n in PROCESS_COUNTS}
    for _ in range(ROUNDS):
        for workers in PROCESS_COUNTS:
            process, base = serve(url, workers)
            try:
                wrk_rate(f"{base}/v1/agents/support-bot", headers)  # warm every process's cache
                rates[workers].append(wrk_rate(f"{base}/v1/agents/support-bot", headers, connections=CONNECTIONS))
            finally:
                stop(process)
    return rates


def main() -> None:
    header("the change feed on PostgreSQL: commit -> another process's cache, and gateway processes")
    with scratch_database() as url:
        db = Database(url)
        upgrade(db)
        db.dispose()
        lags = sorted(lag * 1000 for lag in measure_latency(url))
        p50, p99 = statistics.median(lags), lags[min(len(lags) - 1, round(0.99 * (len(lags) - 1)))]
        print(f"commit -> applied in another process ({len(lags)} changes, {SPACING_SECONDS * 1000:.0f} ms apart): "
              f"p50 {p50:.1f} ms, p99 {p99:.1f} ms, max {lags[-1]:.1f} ms  goal p99 < 50 ms: "
              f"{'met' if p99 < 50 else 'NOT met'}")
        record("changefeed", "commit -> applied in another process, p99", f"{p99:.1f} ms (goal < 50 ms)",
               met=p99 < 50)
        calls, lags, statements = measure_broadcasts(url)
        print(f"broadcast() in the publishing run ({len(calls)} deltas): {percentiles_ms(calls)}")
        print(f"broadcast -> heard by another listener ({len(lags)} of {len(calls)}): {percentiles_ms(lags)}, "
              f"in {statements} statements")
        detection = measure_detection(url)
        baseline = detection["psycopg implicit BEGIN (no detection)"]
        for variant, tps in detection.items():
            print(f"{variant:<40} {tps:>9,.0f} transactions/s = {tps / baseline:4.2f}x no detection")
        if not shutil.which("wrk"):
            print("gateway processes: skipped (install wrk: apt-get install wrk)")
            return
        rates = measure_throughput(url)
        one = statistics.median(rates[1])
        for workers in PROCESS_COUNTS:
            median = statistics.median(rates[workers])
            print(f"GET /v1/agents/{{key}} with {workers} process(es): {median:>9,.0f}/s (median of {ROUNDS}) "
                  f"= {median / one:4.2f}x one process")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--listen", nargs=4, metavar=("URL", "TENANT", "AGENT", "COUNT"))
    arguments = parser.parse_args()
    if arguments.listen:
        listen_url, tenant, agent_ref, total = arguments.listen
        listen(listen_url, tenant, agent_ref, int(total))
    else:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        main()
