"""What the indexed route dispatch saves per request: FastAPI's linear dispatch vs the index, one app.

Run: ``.venv/bin/python -m bench.dispatch`` (embedded SQLite, in process, no server).  The app is driven by
raw ASGI calls with a credential that is not one, so each request is routed and then refused (401) by the
authentication dependency: routing is most of what such a request costs, and nothing accumulates between
rounds.  The same app instance serves both sides (its router's dispatch switched between FastAPI's own
``APIRouter.app`` and :class:`agentfy.gateway.dispatch.IndexedDispatch`), rounds alternating, and the figure is
CPU time per request (``time.process_time``: other work on the machine does not count), medians of 5.
No goal: it shows what the dispatch changes, the figures of the goals are ``bench.openai_rate``,
``bench.api_mix`` and ``bench.gateway``.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from agentfy.gateway import dispatch
from agentfy.gateway.app import create_app
from agentfy.store.db import Database
from agentfy.store.migrate import upgrade
from bench.harness import header

N = 1000
ROUNDS = 5
#: The API mix's routes and the OpenAI endpoint, as (label, method, path, JSON body).
REQUESTS: tuple[tuple[str, str, str, dict[str, Any] | None], ...] = (
    ("POST /v1/chat/completions", "POST", "/v1/chat/completions",
     {"model": "bot", "messages": [{"role": "user", "content": "hi"}]}),
    ("POST /v1/agents/{agent}/messages", "POST", "/v1/agents/bot/messages", {"text": "hi"}),
    ("GET /v1/agents/{agent}", "GET", "/v1/agents/bot", None),
    ("GET /v1/agents", "GET", "/v1/agents", None),
    ("GET /v1/sessions/{key}/messages", "GET", "/v1/sessions/listed/messages", None),
    ("GET /v1/agents/{agent}/memory/search", "GET", "/v1/agents/bot/memory/search?query=note&scope=", None),
    ("POST /v1/sessions", "POST", "/v1/sessions", {"agent": "bot", "session_key": "s"}),
    ("DELETE /v1/sessions/{key}", "DELETE", "/v1/sessions/s", None),
)


async def refused(app: Any, method: str, target: str, body: dict[str, Any] | None) -> None:
    """One request as a server would hand it to the app; it must be answered 401."""
    path, _, query = target.partition("?")
    data = json.dumps(body).encode() if body is not None else b""
    headers = [(b"host", b"bench"), (b"authorization", b"Bearer not-a-key")]
    if body is not None:
        headers += [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": query.encode(), "root_path": "",
             "headers": headers, "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80), "state": {}}
    delivered = False
    statuses: list[int] = []

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if delivered:
            return {"type": "http.disconnect"}
        delivered = True
        return {"type": "http.request", "body": data, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    await app(scope, receive, send)
    if statuses != [401]:
        raise RuntimeError(f"{method} {target} answered {statuses}, not 401")


async def measure(app: Any) -> None:
    indexed = app.router.middleware_stack
    assert isinstance(indexed, dispatch.IndexedDispatch)
    sides = {"linear": app.router.app, "indexed": indexed}
    for label, method, path, body in REQUESTS:
        cpu: dict[str, list[float]] = {side: [] for side in sides}
        for round_number in range(ROUNDS):
            for side in (("linear", "indexed") if round_number % 2 == 0 else ("indexed", "linear")):
                app.router.middleware_stack = sides[side]
                started = time.process_time()
                for _ in range(N):
                    await refused(app, method, path, body)
                cpu[side].append((time.process_time() - started) / N * 1e6)
        app.router.middleware_stack = indexed
        linear, index = statistics.median(cpu["linear"]), statistics.median(cpu["indexed"])
        print(f"{label:<40} linear {linear:6.0f} us CPU  indexed {index:6.0f} us  "
              f"saved {linear - index:6.0f} us ({(linear - index) / linear:4.0%})")


def main() -> None:
    header(f"route dispatch: CPU per refused (401) request, FastAPI's linear scan vs the index "
           f"(in process, medians of {ROUNDS} alternating rounds of {N})")
    with tempfile.TemporaryDirectory() as tmp:
        db = Database(f"sqlite:///{Path(tmp) / 'bench.db'}")
        upgrade(db)
        try:
            app = create_app(db, signing_secret=b"bench-signing-secret-32-bytes!!!", workspace_root=Path(tmp))
            asyncio.run(measure(app))
        finally:
            db.dispose()


if __name__ == "__main__":
    main()
