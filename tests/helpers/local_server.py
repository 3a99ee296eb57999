"""An ASGI app served for real on a free port of 127.0.0.1: uvicorn in a daemon thread, started and stopped by
the test; and :class:`ScriptedServer`, the scripted answers and recorded requests of the fake model servers built
on it (:mod:`tests.helpers.fake_openai`, :mod:`tests.helpers.fake_anthropic`)."""

from __future__ import annotations

import socket
import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, Self, TypeVar

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
        # No logging configuration of uvicorn's own: its handlers would write to the stderr of the test that
        # started the server, closed once that test ends (a server shared by a module outlives it).
        config = uvicorn.Config(self.app, lifespan="off", log_level="warning", log_config=None, access_log=False,
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


@dataclass(frozen=True)
class Recorded:
    """One request as a fake server got it: its headers (lower-case names) and its JSON body; ``at``: the
    ``time.monotonic()`` it arrived (to measure a retry's wait)."""

    headers: Mapping[str, str]
    body: Mapping[str, Any]
    at: float


A = TypeVar("A")


class ScriptedServer(Generic[A]):
    """A fake API on a :class:`LocalServer` that answers each request with the next scripted answer (of type
    ``A``; :meth:`script` appends), or ``default`` when the script is empty (``None``: the subclass answers an
    error saying so, so a test that forgot to script fails loudly).  It records every request
    (:attr:`requests`) and counts the streams a client left before their end (:attr:`disconnects`).  A
    subclass gives its app (``app``) and ``name``.  Thread-safe: tests script and read from the test's thread
    while uvicorn serves in its own."""

    def __init__(self, app: Any, *, name: str, default: A | None = None) -> None:
        self.default = default
        self._script: deque[A] = deque()
        self._lock = threading.Lock()
        self.requests: list[Recorded] = []
        #: Streams the client left before their end (a cancelled run closes its connection).
        self.disconnects = 0
        self._server = LocalServer(app, name=name)

    def reset(self) -> None:
        """Forget the script, the requests and the disconnects (a server shared by a module's tests)."""
        with self._lock:
            self._script.clear()
            self.requests.clear()
            self.disconnects = 0

    def script(self, *answers: A) -> None:
        """Queue ``answers``: the next requests get them, in order."""
        with self._lock:
            self._script.extend(answers)

    @property
    def pending(self) -> int:
        """Scripted answers not served yet."""
        with self._lock:
            return len(self._script)

    @property
    def port(self) -> int:
        return self._server.port

    def start(self) -> Self:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def take(self, headers: Mapping[str, str], body: Mapping[str, Any]) -> A | None:
        """Record one request; its answer (the server's side)."""
        with self._lock:
            self.requests.append(Recorded(dict(headers), body, time.monotonic()))
            return self._script.popleft() if self._script else self.default

    def disconnected(self) -> None:
        """A stream ended before its last event (the server's side)."""
        with self._lock:
            self.disconnects += 1
