"""An ASGI app served for real on a free port of 127.0.0.1: uvicorn in a daemon thread, started and stopped by
the test (the fake model servers, :mod:`tests.helpers.fake_openai` and :mod:`tests.helpers.fake_anthropic`, are
apps served by it)."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn


class LocalServer:
    """``app`` on a port of its own once :meth:`start` returns (it raises when uvicorn did not start within 10
    seconds); :meth:`stop` ends it (a second call does nothing)."""

    def __init__(self, app: Any, *, name: str) -> None:
        self.app = app
        self.name = name
        self._socket: socket.socket | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        assert self._socket is not None, f"the {self.name} server is not started"
        return int(self._socket.getsockname()[1])

    def start(self) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self._socket = sock
        config = uvicorn.Config(self.app, lifespan="off", log_level="warning", access_log=False,
                                timeout_graceful_shutdown=1)
        server = self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name=self.name, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the {self.name} server did not start")
            time.sleep(0.01)

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._socket is not None:
            self._socket.close()
        self._server = self._thread = None
