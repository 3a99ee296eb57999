"""Load benchmark of the gateway on loopback, and a mixed two-tenant load that must show no error and no
cross-tenant read.

Run: ``make bench`` (or ``.venv/bin/python -m bench.gateway``).  Starts, on 127.0.0.1 only, a bare FastAPI app
whose one ``async def`` endpoint returns a constant, and our app on an embedded SQLite database, then on a
PostgreSQL database of its own (at ``$AGENTFY_TEST_PG_URL``; skipped when there is no server), each one process
under the same uvicorn settings; drives them with ``wrk`` when it is installed (``apt-get install wrk``; a
Python client would be the bottleneck), else an asyncio/httpx client, keep-alive connections, rounds
alternating, medians compared:

* ``GET /v1/agents/{key}`` and ``GET /v1/agents/{id}`` on warm caches vs ``GET /bare`` (goals: at least 0.8x
  the bare rate on SQLite, 0.7x on PostgreSQL).  These are answered by the warm-read path in front of the
  router (``agentfy.gateway.warm_reads``); the same read with a query string goes through the FastAPI route
  and is printed too, without a goal, to show what the route alone costs;
* the console's cost to the API: the same routed read on two servers of the same database, one serving the
  console at ``/console`` and one with ``serve.console = false`` (goal: within noise, at least 0.95x);
* a mixed read/write load: two tenants creating and reading their own agents while also asking for the other
  tenant's agents by ID; every request must succeed, and every cross-tenant read must be a 404.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from agentfy.identity import Scope
from agentfy.store.db import Database
from agentfy.store.repos import agents, api_keys, orgs
from agentfy.store.repos.agents import Agent
from bench.harness import header
from bench.store import databases
from bench.verdicts import record

CONCURRENCY = 16
ROUND_SECONDS = 3.0
ROUNDS = 5
MAX_REQUESTS_PER_ROUND = 100_000

SIGNING_KEY = "c2lnbmluZy1rZXktZm9yLWJlbmNoLW9ubHktMzJieXRlcyE="
#: The goals: our cached read at least this fraction of the bare endpoint's rate.
GOALS = {"sqlite": 0.8, "postgresql": 0.7}

BARE_APP = '''
from fastapi import FastAPI
app = FastAPI()

@app.get("/bare")
async def bare() -> dict[str, str]:
    return {"status": "ok"}
'''


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(target: str, port: int, env: dict[str, str], cwd: str, factory: bool, *,
          ready_seconds: float = 120) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "uvicorn", target, "--host", "127.0.0.1", "--port", str(port),
               "--log-level", "warning", "--no-access-log", *(["--factory"] if factory else [])]
    process = subprocess.Popen(command, env={**os.environ, **env}, cwd=cwd)
    deadline = time.time() + ready_seconds
    while time.time() < deadline:
        try:
            # Any answer means it serves (a bare app answers 404).  Not /openapi.json: the schema is the largest
            # object graph a gateway builds, and built by the probe it would add to every full garbage
            # collection of the measured process (agentfy.gateway.server.settle_heap), which no client of a
            # deployed gateway would cause.
            httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
            return process
        except httpx.HTTPError:
            time.sleep(0.2)
    process.kill()
    raise RuntimeError(f"{target} did not start on port {port}")


async def drive(base: str, make_request: Callable[[int], tuple[str, str, dict[str, str], dict[str, str] | None]],
                seconds: float) -> tuple[int, int, list[str]]:
    """Requests per second over ``seconds``: (completed, errors, problems)."""
    done = errors = 0
    problems: list[str] = []
    stop_at = time.perf_counter() + seconds
    counter = 0
    limits = httpx.Limits(max_connections=CONCURRENCY, max_keepalive_connections=CONCURRENCY)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=10) as client:
        async def one_worker() -> None:
            nonlocal done, errors, counter
            while time.perf_counter() < stop_at and done + errors < MAX_REQUESTS_PER_ROUND:
                counter += 1
                method, path, headers, body = make_request(counter)
                response = await client.request(method, path, headers=headers, json=body)
                expected = 404 if path.startswith("/v1/agents/") and headers.get("x-expect") == "404" else None
                if expected is not None:
                    if response.status_code != 404:
                        errors += 1
                        problems.append(f"cross-tenant read answered {response.status_code}")
                    else:
                        done += 1
                elif response.status_code >= 400:
                    errors += 1
                    problems.append(f"{method} {path} -> {response.status_code}")
                else:
                    done += 1
        await asyncio.gather(*(one_worker() for _ in range(CONCURRENCY)))
    return done, errors, problems


def wrk_rate(url: str, headers: dict[str, str], *, connections: int = CONCURRENCY) -> float:
    """Requests per second from wrk (a C load generator: it does not become the bottleneck)."""
    command = ["wrk", "-t1", f"-c{connections}", f"-d{ROUND_SECONDS:.0f}s", "--latency"]
    for name, value in headers.items():
        command += ["-H", f"{name}: {value}"]
    output = subprocess.run([*command, url], capture_output=True, text=True, check=True).stdout
    if "Non-2xx or 3xx responses" in output:
        raise RuntimeError(f"wrk saw error responses from {url}:\n{output}")
    line = next(line for line in output.splitlines() if line.startswith("Requests/sec:"))
    return float(line.split()[1])


def rate(base: str, make: Callable[[int], tuple[str, str, dict[str, str], dict[str, str] | None]]) -> float:
    if shutil.which("wrk"):
        method, path, headers, _ = make(0)
        assert method == "GET"
        return wrk_rate(base + path, headers)
    start_time = time.perf_counter()
    done, errors, problems = asyncio.run(drive(base, make, ROUND_SECONDS))
    if errors:
        raise RuntimeError(f"{errors} errors, e.g. {problems[:3]}")
    return done / (time.perf_counter() - start_time)


def seed(db: Database) -> list[tuple[Scope, dict[str, str], Agent]]:
    """Two tenants, each with an owner key and an agent ``support-bot``."""
    with db.transaction() as tx:
        tenants = []
        for slug in ("acme", "globex"):
            scope = Scope(orgs.create_organization(tx, slug=slug, name=slug).id)
            key = api_keys.create_api_key(tx, scope, name="bench", role="owner").key
            agent = agents.create_agent(tx, scope, agent_key="support-bot")
            tenants.append((scope, {"Authorization": f"Bearer {key}"}, agent))
    return tenants


def measure(dialect: str, db: Database, bare_base: str) -> None:
    """Our ``GET /v1/agents/{key|id}`` against the bare endpoint, rounds alternating, medians compared; then the
    mixed two-tenant load."""
    tenants = seed(db)
    url = db.url
    db.dispose()
    port = free_port()
    ours = start("agentfy.gateway.server:app_from_env", port,
                 {"AGENTFY_DATABASE_URL": url, "AGENTFY_SIGNING_KEY": SIGNING_KEY,
                  "AGENTFY_SERVE_EVENT_WORKERS": "false"},
                 os.getcwd(), factory=True)
    try:
        (_scope_a, head_a, agent_a), (_scope_b, head_b, agent_b) = tenants
        base = f"http://127.0.0.1:{port}"
        by_key = lambda i: ("GET", "/v1/agents/support-bot", head_a, None)  # noqa: E731
        by_id = lambda i: ("GET", f"/v1/agents/{agent_a.id}", head_a, None)  # noqa: E731
        # A query string is never answered by the warm path: this is the same read through the FastAPI route.
        by_route = lambda i: ("GET", "/v1/agents/support-bot?via=route", head_a, None)  # noqa: E731
        bare_get = lambda i: ("GET", "/bare", {}, None)  # noqa: E731
        reads = {"{key}": by_key, "{id}": by_id, "{key}?… (route)": by_route}
        rates: dict[str, list[float]] = {name: [] for name in (*reads, "bare")}
        for warm in reads.values():  # fill the principal and router caches; not measured
            rate(base, warm)
        for _ in range(ROUNDS):
            for name, make in reads.items():
                rates[name].append(rate(base, make))
                if name == "{key}":
                    rates["bare"].append(rate(bare_base, bare_get))
        goal = GOALS[dialect]
        bare = statistics.median(rates["bare"])
        for name in reads:
            ours_rate = statistics.median(rates[name])
            ratio = ours_rate / bare
            verdict = f"goal >= {goal:.2f}x: {'met' if ratio >= goal else 'NOT met'}" if "route" not in name else ""
            print(f"{dialect:<10} GET /v1/agents/{name:<17} {ours_rate:>9,.0f}/s vs {bare:>9,.0f}/s (bare async "
                  f"endpoint; medians of {ROUNDS})  = {ratio:4.2f}x  {verdict}")
            if "route" not in name:
                record("gateway", f"{dialect} GET /v1/agents/{name}, warm", f"{ratio:.2f}x (goal {goal:.2f}x)",
                       met=ratio >= goal)

        def mixed(i: int) -> tuple[str, str, dict[str, str], dict[str, str] | None]:
            mine, theirs = ((head_a, agent_b), (head_b, agent_a))[i % 2]
            kind = i % 5
            if kind == 0:
                return "POST", "/v1/agents", mine, {"agent_key": f"load-{i}"}
            if kind == 1:
                return "GET", f"/v1/agents/{theirs.id}", {**mine, "x-expect": "404"}, None
            if kind == 2:
                return "GET", "/v1/agents", mine, None
            return "GET", "/v1/agents/support-bot", mine, None

        done, errors, problems = asyncio.run(drive(base, mixed, ROUND_SECONDS * 2))
        print(f"{dialect:<10} mixed two-tenant load: {done:,} requests, {errors} errors / cross-tenant reads"
              + (f" e.g. {problems[:3]}" if problems else ""))
    finally:
        ours.terminate()
        ours.wait(timeout=10)
    measure_console(dialect, url, tenants[0][1])


CONSOLE_GOAL = 0.95


def measure_console(dialect: str, url: str, headers: dict[str, str]) -> None:
    """The routed read with the console mounted vs without it, rounds alternating, medians compared."""
    env = {"AGENTFY_DATABASE_URL": url, "AGENTFY_SIGNING_KEY": SIGNING_KEY, "AGENTFY_SERVE_EVENT_WORKERS": "false"}
    ports = {"with": free_port(), "without": free_port()}
    servers = [start("agentfy.gateway.server:app_from_env", ports["with"], env, os.getcwd(), factory=True),
               start("agentfy.gateway.server:app_from_env", ports["without"],
                     {**env, "AGENTFY_SERVE_CONSOLE": "false"}, os.getcwd(), factory=True)]
    try:
        read = lambda i: ("GET", "/v1/agents/support-bot?via=route", headers, None)  # noqa: E731
        rates: dict[str, list[float]] = {"with": [], "without": []}
        for side in rates:
            rate(f"http://127.0.0.1:{ports[side]}", read)  # warm the caches
        for round_number in range(ROUNDS):
            for side in (("with", "without") if round_number % 2 == 0 else ("without", "with")):
                rates[side].append(rate(f"http://127.0.0.1:{ports[side]}", read))
        with_console, without = statistics.median(rates["with"]), statistics.median(rates["without"])
        ratio = with_console / without
        print(f"{dialect:<10} GET /v1/agents/{{key}}?… console on {with_console:>9,.0f}/s vs {without:>9,.0f}/s "
              f"(console off; medians of {ROUNDS})  = {ratio:4.2f}x  goal >= {CONSOLE_GOAL:.2f}x: "
              f"{'met' if ratio >= CONSOLE_GOAL else 'NOT met'}")
        record("gateway", f"{dialect} routed read, console on vs off", f"{ratio:.2f}x (goal {CONSOLE_GOAL:.2f}x)",
               met=ratio >= CONSOLE_GOAL)
    finally:
        for server in servers:
            server.terminate()
            server.wait(timeout=10)


def main() -> None:
    header("agentfy gateway on loopback vs a bare FastAPI endpoint (uvicorn, 1 process each, same settings)")
    print("# load generator: " + ("wrk" if shutil.which("wrk") else
                                  "httpx (install wrk for figures the client does not limit: apt-get install wrk)"))
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "bare_app.py").write_text(BARE_APP)
        bare_port = free_port()
        bare = start("bare_app:app", bare_port, {"PYTHONPATH": tmp}, tmp, factory=False)
        try:
            rate(f"http://127.0.0.1:{bare_port}", lambda i: ("GET", "/bare", {}, None))  # warm-up
            for dialect, db in databases():
                measure(dialect, db, f"http://127.0.0.1:{bare_port}")
        finally:
            bare.terminate()
            bare.wait(timeout=10)


if __name__ == "__main__":
    main()
