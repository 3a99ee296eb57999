""":class:`ScriptedServer`: the scripted answers and recorded requests of the fake model servers
(:mod:`tests.helpers.fake_openai`, :mod:`tests.helpers.fake_anthropic`), each a real HTTP server on a free port
of 127.0.0.1 (:class:`~tests.helpers.served.ServedApp`)."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, Self, TypeVar

from tests.helpers.served import ServedApp


@dataclass(frozen=True)
class Recorded:
    """One request as a fake server got it: its headers (lower-case names) and its JSON body; ``at``: the
    ``time.monotonic()`` it arrived (to measure a retry's wait)."""

    headers: Mapping[str, str]
    body: Mapping[str, Any]
    at: float


A = TypeVar("A")


class ScriptedServer(Generic[A]):
    """A fake API served by a :class:`~tests.helpers.served.ServedApp` that answers each request with the next
    scripted answer (of type ``A``; :meth:`script` appends), or ``default`` when the script is empty (``None``:
    the subclass answers an error saying so, so a test that forgot to script fails loudly).  It records every request
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
        self._server = ServedApp(app, name=name, lifespan="off")

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
