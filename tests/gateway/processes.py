"""Real ``agentfy serve`` processes for multi-process tests: started together on free ports, always stopped.

Each process writes its output to a file (a pipe nobody reads would fill with access logs and stall it); a
process that does not become ready fails the test with the tail of its output.
"""

from __future__ import annotations

import base64
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
SIGNING_KEY = base64.b64encode(b"multi-process-signing-key-32-bytes!!").decode()
READY_SECONDS = 90.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    """One running ``agentfy serve``: its base URL, process and output file."""

    base: str
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def ws(self) -> str:
        return self.base.replace("http://", "ws://") + "/v1/ws"

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.base, timeout=30)


def _wait_ready(servers: list[Server]) -> None:
    deadline = time.monotonic() + READY_SECONDS
    pending = list(servers)
    while pending and time.monotonic() < deadline:
        for server in list(pending):
            if server.process.poll() is not None:
                raise AssertionError(f"agentfy serve exited with {server.process.returncode}:\n"
                                     f"{server.output()[-3000:]}")
            try:
                if httpx.get(f"{server.base}/readyz", timeout=1).status_code == 200:
                    pending.remove(server)
            except httpx.HTTPError:
                pass
        time.sleep(0.1)
    if pending:
        raise AssertionError("agentfy serve did not become ready:\n" + "\n---\n".join(s.output()[-3000:]
                                                                                      for s in pending))


def _stop(server: Server) -> None:
    if server.process.poll() is None:
        server.process.send_signal(signal.SIGTERM)
        try:
            server.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait(timeout=10)


@contextmanager
def serving(url: str, count: int, tmp: Path, *, env: dict[str, str] | None = None,
            extra_args: tuple[str, ...] = ()) -> Iterator[list[Server]]:
    """``count`` processes of ``agentfy serve`` on ``url``, started at the same moment on their own ports; all
    ready when the block starts, all stopped (by PID) when it ends, whatever happens."""
    servers: list[Server] = []
    try:
        for i in range(count):
            port = free_port()
            log = tmp / f"serve-{i}-{port}.log"
            with open(log, "wb") as out:
                process = subprocess.Popen(
                    [sys.executable, "-m", "agentfy.cli", "serve", "--database-url", url, "--port", str(port),
                     *extra_args],
                    cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                    env={**os.environ, "AGENTFY_SIGNING_KEY": SIGNING_KEY, **(env or {})})
            servers.append(Server(f"http://127.0.0.1:{port}", process, log))
        _wait_ready(servers)
        yield servers
    finally:
        for server in servers:
            _stop(server)
