"""Messages per second and round-trip latency of one chat message through the whole agent path, against a bare
webhook that only replies.

Run: ``make bench`` (or ``.venv/bin/python -m bench.runtime``).  On 127.0.0.1 only:

* a **fake Telegram Bot API** in this process (uvicorn, a raw ASGI app) that records every ``sendMessage``;
* **ours**: the gateway (``agentfy.gateway.server:app_from_env``, one uvicorn process) with a Telegram bot bound
  to an agent on the offline model, its API base pointed at the fake server.  One message is
  ``POST /v1/channels/telegram/{bot}/webhook`` (secret token checked, binding found, update parsed) -> 200, then
  after the response the runtime's loop (router, session, user message stored, offline model, reply stored, run
  events) and ``sendMessage`` to the fake server;
* **bare**: a FastAPI app (one uvicorn process, the same settings) whose webhook route takes the same update
  JSON, answers 200 and then sends ``sendMessage`` to the same fake server — nothing else.

A round trip starts when the client sends the update and ends when the fake server receives the whole reply for
that chat.  The offline model answers at once, so ours sends it as one ``sendMessage`` like the bare webhook
(the Telegram reply holds its first piece for ``telegram.first_piece_delay_ms`` and sends a reply done by then
whole, the moment it is done); were it streamed, the edit that completes it would end the trip.  Each side's
Bot API calls per round trip are counted and printed (``calls/msg``): ours must make one, as the bare does, or
the comparison is not of the same work.  The chats are private chats (a person's DM with the bot), which are
not pre-paced: a group's replies keep the chat's ``telegram.edit_interval_seconds`` and would measure that.
Closed loop: ``N`` chats talk at once, each sending its next message when its reply arrived; every chat
is a conversation of ``TURNS_PER_CHAT`` messages, then a new chat starts (sessions stay short, so every round
measures the same work).  Rounds alternate between ours and bare; each figure is the median over the rounds
(the per-round rate, p50 and p99).  Goal, at each load: ours at least :data:`RATE_GOAL` of the bare webhook's
rate, and its p50 at most :data:`P50_OVERHEAD_GOAL_MS` above the bare p50.  SQLite by default; PostgreSQL
too when the server of ``bench.postgres``
(``$AGENTFY_BENCH_PG_URL``, default the local one) is reachable.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from agentfy.channels.telegram_webhook import SECRET_HEADER, secret_digest
from agentfy.identity import Scope
from agentfy.store.db import Database
from agentfy.store.repos import agents, channels, orgs
from agentfy.store.repos.credentials import CredentialCipher
from bench.gateway import SIGNING_KEY, free_port, start
from bench.harness import header
from bench.store import databases
from bench.verdicts import record

ROUNDS = 5
ROUND_SECONDS = 3.0
#: Chats talking at once: 1 shows the latency of a lone message, 8 the throughput under concurrent chats.
LOADS = (1, 8)
TURNS_PER_CHAT = 10
#: Ours against the bare webhook: at least this share of its rate…
RATE_GOAL = 0.8
#: …and a median round trip at most this much longer (milliseconds).
P50_OVERHEAD_GOAL_MS = 3.0
REPLY_TIMEOUT_SECONDS = 10.0
#: A loaded machine may take long to import and start a server.
START_SECONDS = 120.0
BOT = "BenchSupportBot"
BOT_TOKEN = "123456:bench-token"
SECRET = "bench-secret-token-0123456789"
CREDENTIALS_KEY = base64.b64encode(b"k" * 32).decode()
WEBHOOK = f"/v1/channels/telegram/{BOT}/webhook"

BARE_APP = '''
import os
import httpx
from fastapi import BackgroundTasks, FastAPI, Request

app = FastAPI()
API = os.environ["BARE_TELEGRAM_API_BASE"]
client = httpx.AsyncClient(timeout=30)

@app.post("/v1/channels/telegram/{bot}/webhook")
async def webhook(bot: str, request: Request, background: BackgroundTasks) -> dict[str, bool]:
    message = (await request.json())["message"]

    async def send() -> None:
        await client.post(f"{API}/bot123456:bench-token/sendMessage",
                          json={"chat_id": message["chat"]["id"], "text": "echo: " + message["text"]})

    background.add_task(send)
    return {"ok": True}
'''


@dataclass
class FakeTelegram:
    """The Bot API's ``sendMessage`` and ``editMessageText``, in this process: the whole reply completes the waiter
of its chat."""

    waiting: dict[int, asyncio.Future[tuple[float, str]]] = field(default_factory=dict)
    expected: dict[int, str] = field(default_factory=dict)
    received: int = 0
    edits: int = 0

    async def __call__(self, scope: dict[str, Any], receive: Callable[[], Awaitable[dict[str, Any]]],
                       send: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            event = await receive()
            body += event.get("body", b"")
            if not event.get("more_body"):
                break
        arrived = time.perf_counter()
        if scope["path"].endswith(("/sendMessage", "/editMessageText")):
            self.received += 1
            self.edits += scope["path"].endswith("/editMessageText")
            message = json.loads(body)
            chat, text = int(message["chat_id"]), str(message["text"])
            # A streamed reply is sent with its first piece and edited as the rest arrives: the round trip
            # ends when the chat shows the whole reply (the expected text), or any text that is not a prefix
            # of it (a wrong reply, reported as such).
            expected = self.expected.get(chat)
            if expected is not None and text != expected and expected.startswith(text):
                text = ""
            waiter = self.waiting.pop(chat, None) if text else None
            if waiter is not None and not waiter.done():
                self.expected.pop(chat, None)
                waiter.set_result((arrived, text))
        answer = b'{"ok":true,"result":{"message_id":1}}'
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(answer)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": answer})


@dataclass
class Round:
    """One round's figures: completed round trips per second, and each round trip's latency (seconds)."""

    rate: float
    latencies: list[float]
    errors: int
    problems: list[str]
    calls: int = 0  # Bot API calls the fake server received during the round
    edits: int = 0  # of which editMessageText

    def percentile(self, p: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(p * len(ordered)))] if ordered else float("nan")


_chat_ids = itertools.count(10_000)
_update_ids = itertools.count(1)


async def one_round(fake: FakeTelegram, base: str, chats: int, expect: Callable[[str], str]) -> Round:
    """``chats`` conversations at once against ``base`` for ``ROUND_SECONDS``."""
    latencies: list[float] = []
    problems: list[str] = []
    errors = 0
    limits = httpx.Limits(max_connections=chats, max_keepalive_connections=chats)
    headers = {SECRET_HEADER: SECRET}
    calls_before, edits_before = fake.received, fake.edits
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=REPLY_TIMEOUT_SECONDS) as client:
        stop_at = time.perf_counter() + ROUND_SECONDS
        started = time.perf_counter()

        async def talk() -> None:
            nonlocal errors
            loop = asyncio.get_running_loop()
            while time.perf_counter() < stop_at:
                chat = next(_chat_ids)
                for turn in range(TURNS_PER_CHAT):
                    if time.perf_counter() >= stop_at:
                        return
                    update_id = next(_update_ids)
                    text = f"hello {turn}"
                    update = {"update_id": update_id, "message": {
                        "message_id": update_id, "chat": {"id": chat, "type": "private"},
                        "from": {"id": chat, "is_bot": False}, "text": text}}
                    waiter: asyncio.Future[tuple[float, str]] = loop.create_future()
                    fake.waiting[chat] = waiter
                    fake.expected[chat] = expect(text)
                    sent = time.perf_counter()
                    try:
                        response = await client.post(WEBHOOK, json=update, headers=headers)
                        if response.status_code != 200 or "ignored" in response.json():
                            raise RuntimeError(f"webhook answered {response.status_code} {response.text[:120]}")
                        arrived, reply = await asyncio.wait_for(waiter, REPLY_TIMEOUT_SECONDS)
                        if reply != expect(text):
                            raise RuntimeError(f"reply {reply!r}, expected {expect(text)!r}")
                    except (RuntimeError, httpx.HTTPError, TimeoutError) as error:
                        fake.waiting.pop(chat, None)
                        errors += 1
                        problems.append(f"{type(error).__name__}: {error}")
                        break  # a new chat: this one's reply may still arrive
                    latencies.append(arrived - sent)

        await asyncio.gather(*(talk() for _ in range(chats)))
        elapsed = time.perf_counter() - started
    return Round(len(latencies) / elapsed, latencies, errors, problems, fake.received - calls_before,
                 fake.edits - edits_before)


def seed(db: Database) -> None:
    """An organization, an agent on the offline model, and the Telegram bot bound to it."""
    cipher = CredentialCipher(base64.b64decode(CREDENTIALS_KEY))
    with db.transaction() as tx:
        scope = Scope(orgs.create_organization(tx, slug="bench", name="Bench").id)
        agent = agents.create_agent(tx, scope, agent_key="support-bot")
        channels.bind(tx, scope, cipher, agent.id, "telegram", address=BOT.lower(), name=BOT,
                      verifier=secret_digest(SECRET), token=BOT_TOKEN.encode())


async def compare(dialect: str, fake: FakeTelegram, ours: str, bare: str) -> list[str]:
    """Every load's rounds, ours and bare alternating; the printed lines."""
    lines: list[str] = []
    ours_expect = lambda text: f"@support-bot heard: {text}"  # noqa: E731 - the offline model's echo
    bare_expect = lambda text: f"echo: {text}"  # noqa: E731
    for target, expect in ((ours, ours_expect), (bare, bare_expect)):  # warm-up: caches, pools, imports
        await one_round(fake, target, max(LOADS), expect)
    for chats in LOADS:
        results: dict[str, list[Round]] = {"ours": [], "bare": []}
        for _ in range(ROUNDS):
            results["ours"].append(await one_round(fake, ours, chats, ours_expect))
            results["bare"].append(await one_round(fake, bare, chats, bare_expect))
        figures = {}
        calls = {name: (sum(r.calls for r in rounds) / max(1, sum(len(r.latencies) for r in rounds)),
                        sum(r.edits for r in rounds)) for name, rounds in results.items()}
        for name, rounds in results.items():
            errors = sum(r.errors for r in rounds)
            if errors:
                problems = [p for r in rounds for p in r.problems][:3]
                lines.append(f"{dialect:<10} {chats} chat(s) {name}: {errors} errors, e.g. {problems}")
            figures[name] = (statistics.median(r.rate for r in rounds),
                             statistics.median(r.percentile(0.50) for r in rounds) * 1000,
                             statistics.median(r.percentile(0.99) for r in rounds) * 1000)
        (o_rate, o_p50, o_p99), (b_rate, b_p50, b_p99) = figures["ours"], figures["bare"]
        lines.append(f"{dialect:<10} {chats} chat(s) at once  ours {o_rate:>7,.0f} msg/s  p50 {o_p50:6.1f} ms  "
                     f"p99 {o_p99:6.1f} ms | bare {b_rate:>7,.0f} msg/s  p50 {b_p50:5.1f} ms  p99 {b_p99:5.1f} ms"
                     f" | rate {o_rate / b_rate:4.2f}x, p50 {o_p50 / b_p50:4.1f}x the bare (medians of {ROUNDS})"
                     f" | calls/msg ours {calls['ours'][0]:.2f} ({calls['ours'][1]} edits), "
                     f"bare {calls['bare'][0]:.2f}")
        lines.append(verdict(dialect, chats, o_rate / b_rate, o_p50 - b_p50))
    return lines


def verdict(dialect: str, chats: int, ratio: float, overhead_ms: float) -> str:
    """The goal's line for one load: the rate ratio and the p50 overhead, each met or not."""
    rate_met = "met" if ratio >= RATE_GOAL else "NOT met"
    p50_met = "met" if overhead_ms < P50_OVERHEAD_GOAL_MS else "NOT met"
    record("telegram", f"{dialect}, {chats} chat(s)", f"{ratio:.2f}x rate, p50 {overhead_ms:+.1f} ms",
           met=ratio >= RATE_GOAL and overhead_ms < P50_OVERHEAD_GOAL_MS)
    return (f"{dialect:<10} {chats} chat(s) goal: rate >= {RATE_GOAL:.2f}x: {ratio:4.2f}x {rate_met}; p50 overhead "
            f"< {P50_OVERHEAD_GOAL_MS:.0f} ms: {overhead_ms:+.1f} ms {p50_met}")


async def serve_fake(fake: FakeTelegram, port: int) -> uvicorn.Server:
    config = uvicorn.Config(fake, host="127.0.0.1", port=port, log_level="warning", access_log=False,
                            lifespan="off")
    server = uvicorn.Server(config)
    asyncio.get_running_loop().create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.02)
    return server


async def bench_dialect(dialect: str, url: str, bare: str, fake: FakeTelegram, fake_base: str,
                        workspace: str) -> list[str]:
    port = free_port()
    env = {"AGENTFY_DATABASE_URL": url, "AGENTFY_SIGNING_KEY": SIGNING_KEY, "AGENTFY_SERVE_EVENT_WORKERS": "false",
           "AGENTFY_CREDENTIALS_KEY": CREDENTIALS_KEY, "AGENTFY_TELEGRAM_API_BASE": fake_base,
           "AGENTFY_WORKSPACE_ROOT": workspace, "AGENTFY_LOG_LEVEL": "warning"}
    ours = await asyncio.to_thread(start, "agentfy.gateway.server:app_from_env", port, env, os.getcwd(), True,
                                  ready_seconds=START_SECONDS)
    try:
        return await compare(dialect, fake, f"http://127.0.0.1:{port}", bare)
    finally:
        ours.terminate()
        ours.wait(timeout=10)


async def run_all(targets: list[tuple[str, str]], tmp: str) -> None:
    fake = FakeTelegram()
    fake_port = free_port()
    server = await serve_fake(fake, fake_port)
    fake_base = f"http://127.0.0.1:{fake_port}"
    Path(tmp, "bare_app.py").write_text(BARE_APP)
    bare_port = free_port()
    bare = await asyncio.to_thread(start, "bare_app:app", bare_port,
                                   {"PYTHONPATH": tmp, "BARE_TELEGRAM_API_BASE": fake_base}, tmp, False,
                                   ready_seconds=START_SECONDS)
    try:
        for dialect, url in targets:
            for line in await bench_dialect(dialect, url, f"http://127.0.0.1:{bare_port}", fake, fake_base,
                                            str(Path(tmp, f"workspaces-{dialect}"))):
                print(line, flush=True)
    finally:
        bare.terminate()
        bare.wait(timeout=10)
        server.should_exit = True
        await asyncio.sleep(0.2)


def main() -> None:
    header("a Telegram message through the webhook, the agent's loop (offline model) and sendMessage, vs a bare "
           "webhook that only replies (uvicorn, 1 process each, same settings; client and fake Bot API in this "
           "process)")
    with tempfile.TemporaryDirectory() as tmp:
        for dialect, db in databases():  # each database is removed when the loop moves on: run inside it
            seed(db)
            db.dispose()
            asyncio.run(run_all([(dialect, db.url)], tmp))

if __name__ == "__main__":
    main()
