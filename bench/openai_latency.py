"""Streaming first-token latency through the OpenAI-compatible endpoint vs the upstream model's own first token,
measured in the same run.

Run: ``make bench-openai-latency`` (or ``.venv/bin/python -m bench.openai_latency``).  On 127.0.0.1 only: a fake
OpenAI-compatible upstream in this process (:mod:`bench.fake_openai`), and the gateway
(``agentfy.gateway.server:app_from_env``, one uvicorn process, embedded SQLite) with an agent whose model is
``{"provider": "openai", "base_url": <the fake>, "model": "fake"}``.  Pairs alternate, the order swapped every
pair: the time from sending ``POST /v1/chat/completions`` with ``stream: true`` to the first event with text,

* **upstream**: straight to the fake;
* **gateway**: to the gateway, as the agent, a one-off conversation (its key checked, the agent resolved, the
  session opened and the user message stored, the system prompt built, the upstream called).

The overhead is each pair's gateway time minus its upstream time; printed: p50 and p99 of each side and of the
overhead (goal: overhead p99 under 5 ms).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from agentfy.identity import Scope
from agentfy.store.db import Database
from agentfy.store.migrate import upgrade
from agentfy.store.repos import agents, api_keys, orgs
from bench import fake_openai
from bench.gateway import SIGNING_KEY, free_port, start
from bench.harness import header
from bench.verdicts import record

PAIRS = 300
#: A loaded machine may take long to import and start the gateway.
START_SECONDS = 120.0
WARM_UP = 20
GOAL_P99_MS = 5.0
BODY = {"messages": [{"role": "user", "content": "What is the answer?"}], "stream": True}


def _person_key(db: Database, upstream: str) -> str:
    with db.transaction() as tx:
        scope = Scope(orgs.create_organization(tx, slug="bench", name="Bench").id)
        person = orgs.create_user(tx, display_name="Bench", email="bench@bench.example")
        orgs.add_member(tx, scope, person.id, "member")
        agents.create_agent(tx, scope, agent_key="bot", config={"model": {
            "provider": "openai", "base_url": upstream, "model": "fake"}})
        return api_keys.create_api_key(tx, scope, name="bench", role="member", user_id=person.id).key


async def first_token(client: httpx.AsyncClient, url: str, body: dict[str, object],
                      headers: dict[str, str]) -> float:
    """Seconds from sending the request to the first event that carries text (the rest is read, unmeasured)."""
    started = time.perf_counter()
    seen: float | None = None
    async with client.stream("POST", url, json=body, headers=headers) as response:
        if response.status_code != 200:
            raise RuntimeError(f"{url} answered {response.status_code}: {(await response.aread())[:300]!r}")
        async for line in response.aiter_lines():
            if seen is None and line.startswith("data: {") and '"content":"' in line.replace(" ", "") \
                    and '"content":""' not in line.replace(" ", ""):
                seen = time.perf_counter()
    if seen is None:
        raise RuntimeError(f"{url} streamed no text")
    return seen - started


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def measure(gateway: str, upstream: str, key: str) -> None:
    ours_headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(timeout=30) as client:
        async def upstream_once() -> float:
            return await first_token(client, f"{upstream}/chat/completions", {**BODY, "model": "fake"}, {})

        async def gateway_once() -> float:
            return await first_token(client, f"{gateway}/v1/chat/completions", {**BODY, "model": "bot"},
                                     ours_headers)

        for _ in range(WARM_UP):
            await upstream_once()
            await gateway_once()
        theirs: list[float] = []
        ours: list[float] = []
        for number in range(PAIRS):
            if number % 2 == 0:
                theirs.append(await upstream_once())
                ours.append(await gateway_once())
            else:
                ours.append(await gateway_once())
                theirs.append(await upstream_once())
    overhead = [(o - t) * 1000 for o, t in zip(ours, theirs, strict=True)]
    for name, values in (("upstream first token", [t * 1000 for t in theirs]),
                         ("gateway first token", [o * 1000 for o in ours]), ("overhead", overhead)):
        print(f"{name:<22} p50 {percentile(values, 0.5):7.2f} ms  p99 {percentile(values, 0.99):7.2f} ms  "
              f"mean {statistics.fmean(values):7.2f} ms")
    p99 = percentile(overhead, 0.99)
    print(f"overhead p99 {p99:.2f} ms  goal < {GOAL_P99_MS:.1f} ms: {'met' if p99 < GOAL_P99_MS else 'NOT met'}"
          f"  ({PAIRS} alternating pairs)")
    record("streaming", "first-token overhead, SQLite", f"p99 {p99:.2f} ms (goal < {GOAL_P99_MS:.1f} ms)",
           met=p99 < GOAL_P99_MS)


def main() -> None:
    header("OpenAI-compatible endpoint: streaming first-token latency, gateway vs upstream (SQLite)")
    with tempfile.TemporaryDirectory() as tmp, fake_openai.serving() as upstream:
        url = f"sqlite:///{Path(tmp) / 'bench.db'}"
        db = Database(url)
        upgrade(db)
        key = _person_key(db, upstream)
        db.dispose()
        port = free_port()
        env = {"AGENTFY_DATABASE_URL": url, "AGENTFY_SIGNING_KEY": SIGNING_KEY, "AGENTFY_SERVE_EVENT_WORKERS": "false",
               "AGENTFY_WORKSPACE_ROOT": str(Path(tmp) / "workspaces"), "AGENTFY_LOG_LEVEL": "warning"}
        process = start("agentfy.gateway.server:app_from_env", port, env, os.getcwd(), True,
                        ready_seconds=START_SECONDS)
        try:
            asyncio.run(measure(f"http://127.0.0.1:{port}", upstream, key))
        finally:
            process.terminate()
            process.wait(timeout=10)


if __name__ == "__main__":
    main()
