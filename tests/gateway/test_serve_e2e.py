"""`agentfy serve` end to end, over real HTTP and WebSocket connections on loopback, on both engines:
first start (migrate, platform organization, one-time admin key), second start (nothing new), the API and
the WebSocket through the network, and several processes behind one port on PostgreSQL."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import websockets

from tests.helpers.databases import PgDatabases

pytestmark = pytest.mark.slow  # every test starts `agentfy serve` processes: 5 to 40 seconds each

ROOT = Path(__file__).resolve().parents[2]
SIGNING_KEY = base64.b64encode(b"e2e-signing-key-of-at-least-32-bytes!").decode()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Served:
    """What a run of `agentfy serve` printed (filled in when it stops)."""

    output = ""


@contextmanager
def serving(url: str, *, workers: int = 1, env: dict[str, str] | None = None) -> Iterator[tuple[str, Served]]:
    """Run `agentfy serve` until the block ends; yields its base URL and, once stopped, its output."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "agentfy.cli", "serve", "--database-url", url, "--port", str(port),
         "--workers", str(workers)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "AGENTFY_SIGNING_KEY": SIGNING_KEY, **(env or {})})
    base, served = f"http://127.0.0.1:{port}", Served()
    try:
        deadline = time.time() + 60
        while time.time() < deadline and process.poll() is None:
            try:
                if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        else:
            raise AssertionError("agentfy serve did not become ready")
        yield base, served
    finally:
        process.terminate()
        served.output, _ = process.communicate(timeout=30)


def admin_key(output: str) -> str | None:
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if "shown once" in line:
            return lines[i + 1].strip()
    return None


def exercise_api(base: str, key: str) -> None:
    admin = {"Authorization": f"Bearer {key}"}
    acme = httpx.post(f"{base}/v1/orgs", json={"slug": "acme", "name": "Acme"}, headers=admin).json()
    globex = httpx.post(f"{base}/v1/orgs", json={"slug": "globex", "name": "Globex"}, headers=admin).json()
    a = {"Authorization": f"Bearer {acme['api_key']['key']}"}
    g = {"Authorization": f"Bearer {globex['api_key']['key']}"}
    bot = httpx.post(f"{base}/v1/agents", json={"agent_key": "bot"}, headers=a).json()
    theirs = httpx.post(f"{base}/v1/agents", json={"agent_key": "bot"}, headers=g).json()
    assert httpx.get(f"{base}/v1/agents/bot", headers=a).json()["id"] == bot["id"]
    assert httpx.get(f"{base}/v1/agents/{bot['id']}", headers=a).json()["agent_key"] == "bot"
    assert httpx.get(f"{base}/v1/agents/{theirs['id']}", headers=a).status_code == 404
    assert httpx.get(f"{base}/v1/agents", headers={}).status_code == 401

    async def over_websocket() -> dict[str, object]:
        ws_url = base.replace("http", "ws") + "/v1/ws"
        async with websockets.connect(ws_url, additional_headers=a) as ws:
            await ws.send(json.dumps({"id": 1, "method": "agents.get", "params": {"agent": "bot"}}))
            return dict(json.loads(await ws.recv()))

    reply = asyncio.run(over_websocket())
    assert reply["id"] == 1 and reply["result"]["id"] == bot["id"]  # type: ignore[index]


def test_first_start_prints_a_key_once_and_the_api_works_over_the_network(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'agentfy.db'}"
    with serving(url) as (_, first):
        pass
    key = admin_key(first.output)
    assert key and key.startswith("agfy_ok_") and "org-silver-days-zxy8s9bpp6hp" in first.output
    with serving(url) as (base, second):
        exercise_api(base, key)
    assert admin_key(second.output) is None  # the second start reuses everything and prints no key


def test_several_processes_on_postgresql_behind_one_port(pg_databases: PgDatabases) -> None:
    name = pg_databases.create()
    url = pg_databases.url(name)
    key = "agfy_ok_" + "k" * 40
    try:
        with serving(url, workers=2, env={"AGENTFY_ADMIN_API_KEY": key}) as (base, _):
            exercise_api(base, key)
            statuses = {httpx.get(f"{base}/readyz").status_code for _ in range(20)}
            assert statuses == {200}
    finally:
        pg_databases.drop(name)


def test_more_than_one_process_needs_postgresql(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "agentfy.cli", "serve", "--database-url",
                             f"sqlite:///{tmp_path / 'x.db'}", "--workers", "2"], cwd=ROOT, capture_output=True,
                            text=True, timeout=60, check=False)
    assert result.returncode == 2 and "needs PostgreSQL" in result.stderr


def test_the_server_refuses_an_oversized_websocket_frame_before_reading_it(tmp_path: Path) -> None:
    """Frames over the protocol's limit are refused by the server itself (close 1009), not read into memory."""
    url = f"sqlite:///{tmp_path / 'agentfy.db'}"
    key = "agfy_ok_" + "w" * 40
    with serving(url, env={"AGENTFY_ADMIN_API_KEY": key}) as (base, _):
        async def oversized() -> int | None:
            ws_url = base.replace("http", "ws") + "/v1/ws"
            async with websockets.connect(ws_url, additional_headers={"Authorization": f"Bearer {key}"},
                                          max_size=None) as ws:
                await ws.send("x" * (1024 * 1024))
                try:
                    await asyncio.wait_for(ws.recv(), 10)
                except websockets.ConnectionClosed as closed:
                    return closed.rcvd.code if closed.rcvd else None
            return None

        assert asyncio.run(oversized()) == 1009
