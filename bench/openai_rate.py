"""The OpenAI-compatible endpoint's rate against calling the runtime directly, both on the offline model, in the
same run.

Run: ``make bench`` or ``make bench-openai-rate`` (or ``.venv/bin/python -m bench.openai_rate``).  On 127.0.0.1
only, embedded SQLite: one agent on the offline model (the default), and one person's key.

* **endpoint**: ``POST /v1/chat/completions`` (not streamed, a one-off conversation) to the gateway
  (``agentfy.gateway.server:app_from_env``, one uvicorn process), one request after the other on a keep-alive
  connection of the standard library's ``http.client``;
* **runtime**: in this process, the same work without HTTP: ``Runtime(inbound)`` with the context the endpoint
  builds (:func:`agentfy.gateway.chat.inbound_of`), then ``end_conversation`` (the one-off's completion).

Rounds alternate (:mod:`bench.harness`); the figures are the median rates and their ratio.  Goal: the endpoint at
least 0.7x the runtime's rate (what HTTP, the key's check, the agent's resolution, validation and serialization
add to a message is at most ~43% of the run itself).

The client is part of every request's time, and it shares the two cores with the gateway: it should cost as
little as it can, as ``wrk`` does for the other HTTP benchmarks.  ``http.client`` spends about 0.1 ms of CPU on
a request here; ``httpx`` (the OpenAI SDK's transport) about 0.45-0.6 ms, a third of the run being compared.  A
second line, without a goal, gives the rate through ``httpx`` for what such a caller sees.
"""

from __future__ import annotations

import asyncio
import http.client
import itertools
import json
import os
import tempfile
from pathlib import Path

import httpx

from agentfy.agents.router import Router
from agentfy.gateway import chat
from agentfy.gateway.auth import Principal
from agentfy.identity import Scope
from agentfy.runtime.runner import Runtime
from agentfy.store.db import Database
from agentfy.store.migrate import upgrade
from agentfy.store.repos import agents, api_keys, orgs
from bench.gateway import SIGNING_KEY, free_port, start
from bench.harness import compare, header
from bench.verdicts import report

N = 100
#: A loaded machine may take long to import and start the gateway.
START_SECONDS = 120.0
ROUNDS = 5
#: The endpoint's rate against the runtime called in-process.
GOAL = 0.7


def main() -> None:
    header("OpenAI-compatible endpoint vs the runtime called directly (offline model, SQLite)")
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'bench.db'}"
        db = Database(url)
        upgrade(db)
        with db.transaction() as tx:
            scope = Scope(orgs.create_organization(tx, slug="bench", name="Bench").id)
            person = orgs.create_user(tx, display_name="Bench", email="bench@bench.example")
            orgs.add_member(tx, scope, person.id, "member")
            agents.create_agent(tx, scope, agent_key="bot")
            key = api_keys.create_api_key(tx, scope, name="bench", role="member", user_id=person.id).key
        who = Principal(scope.tenant_id, "member", person.id)
        runtime = Runtime(db, Router(db), workspace_root=Path(tmp) / "workspaces")
        loop = asyncio.new_event_loop()
        names = itertools.count()

        def direct(n: int) -> None:
            async def calls() -> None:
                for _ in range(n):
                    inbound = chat.inbound_of(who, "bot", f"bench-{next(names)}", "What is the answer?")
                    await runtime(inbound)
                    await runtime.end_conversation(inbound)
            loop.run_until_complete(calls())

        port = free_port()
        env = {"AGENTFY_DATABASE_URL": url, "AGENTFY_SIGNING_KEY": SIGNING_KEY, "AGENTFY_SERVE_EVENT_WORKERS": "false",
               "AGENTFY_WORKSPACE_ROOT": str(Path(tmp) / "workspaces"), "AGENTFY_LOG_LEVEL": "warning"}
        process = start("agentfy.gateway.server:app_from_env", port, env, os.getcwd(), True,
                        ready_seconds=START_SECONDS)
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            body = {"model": "bot", "messages": [{"role": "user", "content": "What is the answer?"}]}
            headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}

            def endpoint(n: int) -> None:
                for _ in range(n):
                    connection.request("POST", "/v1/chat/completions", json.dumps(body), headers)
                    answer = connection.getresponse()
                    text = answer.read()
                    if answer.status != 200:
                        raise RuntimeError(f"POST /v1/chat/completions answered {answer.status}: {text[:200]!r}")

            report("openai-rate", compare("chat.completions (one-off)", endpoint, direct, n=N, rounds=ROUNDS,
                                          baseline_label="Runtime() + end_conversation", goal=GOAL))
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30, headers=headers) as client:
                def through_httpx(n: int) -> None:
                    for _ in range(n):
                        client.post("/v1/chat/completions", json=body).raise_for_status()

                report("openai-rate", compare("chat.completions through httpx", through_httpx, direct, n=N,
                                              rounds=ROUNDS, baseline_label="Runtime() + end_conversation"))
        finally:
            connection.close()
            process.terminate()
            process.wait(timeout=10)
            runtime.close()
            loop.close()
            db.dispose()


if __name__ == "__main__":
    main()
