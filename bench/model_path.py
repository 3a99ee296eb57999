"""One message to an agent whose model is an instantly answering OpenAI-compatible server, against that server's
own round trip: what the platform adds on top of the model call.

Run: ``make bench`` (or ``.venv/bin/python -m bench.model_path``; ``… sqlite`` or ``… postgresql`` for one
engine).  On 127.0.0.1 only, each server its own process (started by PID, stopped in a ``finally``):

* the **model**: :mod:`bench.fake_openai` under uvicorn — ``POST /v1/chat/completions`` answered at once,
  streamed when asked, with usage;
* **ours**: the gateway (``agentfy.gateway.server:app_from_env``, the app ``agentfy serve`` runs, one uvicorn
  process, event workers off) on an embedded SQLite file, then on a scratch PostgreSQL database
  (:func:`bench.store.databases`).  The agent is created over the API (``POST /v1/agents``) with
  ``config.model = {"provider": "openai", "base_url": <the fake>, "model": "fake"}``, the normal way.

A **candidate** message is ``POST /v1/agents/{id}/messages`` as the key's person: the credential checked, the
agent resolved, the conversation's run lock, the session opened or resumed, history, skills and recalled
memory read, the user message committed, the system prompt and the tools built, the model called (streamed,
as the runtime always asks), its usage row and the reply stored, run events, the JSON answer.  A **baseline**
message is the same client doing the model's own round trip: the streamed ``POST /chat/completions`` the
runtime makes (a system prompt and the user's message), read to its end.  Why over HTTP rather than the
runtime in process: a person's message arrives over HTTP, and the goal is what the person waits for beyond the
model; the gateway's HTTP hop is part of that.

Closed loop: ``N`` chats at once (1, then 8), each sending its next message when its answer arrived; a chat is
a conversation of ``TURNS_PER_CHAT`` messages, then a new one starts (sessions stay short, every round does the
same work).  ``ROUNDS`` rounds of ``ROUND_SECONDS`` per side, candidate and baseline alternating (the order
swapped every round); per round the p50 of each side, the overhead is ours minus the baseline's, and each
printed figure is the median over the rounds.  Goal: p50 overhead under 5 ms, at 1 and at 8 chats.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

from agentfy.identity import Scope
from agentfy.store.db import Database
from agentfy.store.repos import api_keys, orgs
from bench.gateway import SIGNING_KEY, free_port, start
from bench.harness import header
from bench.store import databases
from bench.verdicts import record

ROUNDS = 5
ROUND_SECONDS = 3.0
LOADS = (1, 8)
TURNS_PER_CHAT = 10
GOAL_MS = 5.0
TIMEOUT_SECONDS = 30.0
#: A loaded machine may take long to import and start a server.
START_SECONDS = 300.0
#: What the fake model says (:data:`bench.fake_openai.REPLY_PIECES` joined).
REPLY = "The answer is forty-two."

_chats = itertools.count(1)


@dataclass(frozen=True)
class Target:
    """One side: how to send a chat's ``turn``-th message, and what its answer must contain."""

    name: str
    send: Callable[[httpx.AsyncClient, int, int], Awaitable[None]]


def seed(db: Database) -> tuple[str, str]:
    """An organization, its owner (a person) and an owner key acting as them: (the key, its tenant)."""
    with db.transaction() as tx:
        scope = Scope(orgs.create_organization(tx, slug="bench", name="Bench").id)
        person = orgs.create_user(tx, display_name="Bench", email="bench@bench.example")
        orgs.add_member(tx, scope, person.id, "owner")
        return api_keys.create_api_key(tx, scope, name="bench", role="owner", user_id=person.id).key, scope.tenant_id


def create_agent(gateway: str, key: str, model: str) -> str:
    """The agent, over the API, its model pointed at the fake server: its ID."""
    config = {"model": {"provider": "openai", "base_url": model, "model": "fake"}}
    response = httpx.post(f"{gateway}/v1/agents", json={"agent_key": "bot", "config": config},
                          headers={"Authorization": f"Bearer {key}"}, timeout=TIMEOUT_SECONDS)
    if response.status_code != 201:
        raise RuntimeError(f"creating the agent answered {response.status_code}: {response.text[:300]}")
    return str(response.json()["id"])


def ours(gateway: str, key: str, agent_id: str, nonce: str) -> Target:
    headers = {"Authorization": f"Bearer {key}"}
    url = f"{gateway}/v1/agents/{agent_id}/messages"

    async def send(client: httpx.AsyncClient, chat: int, turn: int) -> None:
        response = await client.post(url, json={"text": f"What is the answer, take {turn}?",
                                                "conversation": f"{nonce}-{chat}"}, headers=headers)
        if response.status_code != 200 or response.json().get("reply") != REPLY:
            raise RuntimeError(f"{url} answered {response.status_code}: {response.text[:300]}")

    return Target("ours", send)


def upstream(model: str) -> Target:
    url = f"{model}/chat/completions"

    async def send(client: httpx.AsyncClient, chat: int, turn: int) -> None:
        body = {"model": "fake", "stream": True, "stream_options": {"include_usage": True},
                "messages": [{"role": "system", "content": "You are a helpful agent."},
                             {"role": "user", "content": f"What is the answer, take {turn}?"}]}
        async with client.stream("POST", url, json=body) as response:
            if response.status_code != 200:
                raise RuntimeError(f"{url} answered {response.status_code}")
            text = [line async for line in response.aiter_lines()]
        if "data: [DONE]" not in text:
            raise RuntimeError(f"{url} did not finish its stream")

    return Target("model", send)


async def one_round(target: Target, chats: int) -> list[float]:
    """``chats`` conversations at once for ``ROUND_SECONDS``: every message's latency (seconds)."""
    latencies: list[float] = []
    limits = httpx.Limits(max_connections=chats, max_keepalive_connections=chats)
    async with httpx.AsyncClient(limits=limits, timeout=TIMEOUT_SECONDS) as client:
        stop_at = time.perf_counter() + ROUND_SECONDS

        async def talk() -> None:
            while time.perf_counter() < stop_at:
                chat = next(_chats)
                for turn in range(TURNS_PER_CHAT):
                    if time.perf_counter() >= stop_at:
                        return
                    sent = time.perf_counter()
                    await target.send(client, chat, turn)
                    latencies.append(time.perf_counter() - sent)

        await asyncio.gather(*(talk() for _ in range(chats)))
    return latencies


def p50(values: list[float]) -> float:
    return statistics.median(values) * 1000


async def compare(dialect: str, candidate: Target, baseline: Target) -> list[str]:
    for target in (candidate, baseline):  # warm-up: imports, caches, pools, the first session
        await one_round(target, max(LOADS))
    lines = []
    for chats in LOADS:
        mine: list[float] = []
        theirs: list[float] = []
        rates: list[tuple[float, float]] = []
        for number in range(ROUNDS):
            order = (candidate, baseline) if number % 2 == 0 else (baseline, candidate)
            measured = {target.name: await one_round(target, chats) for target in order}
            mine.append(p50(measured[candidate.name]))
            theirs.append(p50(measured[baseline.name]))
            rates.append((len(measured[candidate.name]) / ROUND_SECONDS,
                          len(measured[baseline.name]) / ROUND_SECONDS))
        overhead = statistics.median(m - t for m, t in zip(mine, theirs, strict=True))
        verdict = "met" if overhead < GOAL_MS else "NOT met"
        lines.append(f"{dialect:<10} {chats} chat(s)  message p50 {statistics.median(mine):6.2f} ms "
                     f"({statistics.median(r[0] for r in rates):5.0f} msg/s) | model alone p50 "
                     f"{statistics.median(theirs):5.2f} ms ({statistics.median(r[1] for r in rates):5.0f}/s) | "
                     f"p50 overhead {overhead:6.2f} ms (medians of {ROUNDS})  goal < {GOAL_MS:.0f} ms: {verdict}")
        record("model-path", f"{dialect}, {chats} chat(s)", f"p50 +{overhead:.2f} ms (goal < {GOAL_MS:.0f} ms)",
               met=overhead < GOAL_MS)
    return lines


def measure(dialect: str, db: Database, model: str, workspace: Path) -> None:
    key, _tenant = seed(db)
    port = free_port()
    env = {"AGENTFY_DATABASE_URL": db.url, "AGENTFY_SIGNING_KEY": SIGNING_KEY, "AGENTFY_SERVE_EVENT_WORKERS": "false",
           "AGENTFY_WORKSPACE_ROOT": str(workspace), "AGENTFY_LOG_LEVEL": "warning"}
    gateway = start("agentfy.gateway.server:app_from_env", port, env, os.getcwd(), True, ready_seconds=START_SECONDS)
    try:
        base = f"http://127.0.0.1:{port}"
        agent_id = create_agent(base, key, model)
        lines = asyncio.run(compare(dialect, ours(base, key, agent_id, os.urandom(4).hex()), upstream(model)))
        for line in lines:
            print(line, flush=True)
    finally:
        gateway.terminate()
        gateway.wait(timeout=10)


def main() -> None:
    engines = [a for a in sys.argv[1:] if a in ("sqlite", "postgresql")]
    header("one message to an agent on an instantly answering OpenAI-compatible server vs that server's own "
           "round trip (uvicorn, 1 process each, one httpx client in this process)")
    print(f"# {ROUNDS} alternating rounds of {ROUND_SECONDS:g} s per load; load average {os.getloadavg()[0]:.1f}",
          flush=True)
    model_port = free_port()
    fake = start("bench.fake_openai:app", model_port, {}, os.getcwd(), False, ready_seconds=START_SECONDS)
    try:
        model = f"http://127.0.0.1:{model_port}/v1"
        with tempfile.TemporaryDirectory() as tmp:
            for dialect, db in databases():  # each database is removed when the loop moves on: run inside it
                if engines and dialect not in engines:
                    continue
                measure(dialect, db, model, Path(tmp, f"workspaces-{dialect}"))
    finally:
        fake.terminate()
        fake.wait(timeout=10)
    print(f"# load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
