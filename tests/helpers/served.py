"""An ASGI application served for real by uvicorn in a thread, on a free port of 127.0.0.1, for tests that
need a real HTTP server (the SDK, a browser, the fake model): started, waited for until it listens, and always
stopped.  Usage::

    with ServedApp(app) as served:                   # or served = ServedApp(app).start() ... served.stop()
        httpx.get(f"{served.url}/healthz")

The socket is bound before uvicorn starts (no race for the port with another test).  Uvicorn is given no
logging configuration (``log_config=None``) and no access log: its records go to the loggers pytest already
captures, instead of to handlers of its own holding the stream pytest closes at the end of the session (which
printed "--- Logging error --- ValueError: I/O operation on closed file" after the tests).
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn

#: Seconds a server may take to start listening before the test fails.
START_TIMEOUT_SECONDS = 20.0


class ServedApp:
    """``app`` under uvicorn in a daemon thread (see the module docstring); ``lifespan`` as uvicorn takes it
    (``"off"`` for a bare Starlette app, ``"auto"`` to run the app's start-up and shutdown); ``port``: a
    free one when 0, else that one (a server that comes back where it was)."""

    def __init__(self, app: Any, *, name: str = "served-app", lifespan: str = "auto", port: int = 0) -> None:
        self._app, self._name, self._lifespan, self._port = app, name, lifespan, port
        self._socket: socket.socket | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        assert self._socket is not None, f"{self._name} is not started"
        return int(self._socket.getsockname()[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``, without a trailing slash."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ServedApp:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self._port))
        self._socket = sock
        config = uvicorn.Config(self._app, lifespan=self._lifespan, log_config=None, log_level="warning",
                                access_log=False, timeout_graceful_shutdown=1)
        server = self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name=self._name,
                                        daemon=True)
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{self._name} did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Ask uvicorn to exit, wait for its thread, close the socket (idempotent)."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._socket is not None:
            self._socket.close()
        self._server = self._thread = None

    def __enter__(self) -> ServedApp:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
