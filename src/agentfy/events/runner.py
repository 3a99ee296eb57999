"""Running workers in a process: ``concurrency`` threads sharing one stop signal, and the signal handling
of ``agentfy worker``.

SIGTERM and SIGINT (Ctrl-C) stop the same way: the stop signal is set, every worker abandons the stage it
waits for, writes what it finished and gives the rest of its batch back, so no claim is left for the lease
to expire.  A second Ctrl-C interrupts at once (the leases of whatever was held then run out as after a
crash).  The gateway runs the same threads (:func:`start_workers`) and sets the signal on shutdown.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Mapping
from types import FrameType

from agentfy.events.handlers import AnyHandler
from agentfy.events.settings import DEFAULT_BUS_SETTINGS, BusSettings
from agentfy.events.worker import Worker
from agentfy.store.db import Database


def start_workers(db: Database, handlers: Mapping[str, AnyHandler], *, stop: threading.Event,
                  settings: BusSettings = DEFAULT_BUS_SETTINGS) -> list[threading.Thread]:
    """``settings.concurrency`` workers, each in a daemon thread of its own, running until ``stop`` is set."""
    bus = settings
    threads = []
    for n in range(bus.concurrency):
        worker = Worker(db, handlers, settings=bus)
        thread = threading.Thread(target=worker.run_forever, args=(stop,), name=f"agentfy-worker-{n + 1}",
                                  daemon=True)
        thread.start()
        threads.append(thread)
    return threads


def drain(db: Database, handlers: Mapping[str, AnyHandler], *, stop: threading.Event,
          settings: BusSettings = DEFAULT_BUS_SETTINGS) -> int:
    """Handle what is due until nothing is (or ``stop`` is set), in this thread; the events claimed."""
    worker = Worker(db, handlers, settings=settings)
    worker.stop = stop
    claimed = 0
    while not stop.is_set():
        batch = worker.run_once()
        if not batch:
            break
        claimed += batch
    return claimed


def run_until_signalled(db: Database, handlers: Mapping[str, AnyHandler], *,
                        settings: BusSettings = DEFAULT_BUS_SETTINGS, once: bool = False) -> None:
    """Run workers (``drain`` once with ``once``) until SIGTERM or SIGINT; call from the main thread."""
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()
        signal.signal(signal.SIGINT, signal.default_int_handler)  # a second Ctrl-C: out at once

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        if once:
            drain(db, handlers, stop=stop, settings=settings)
            return
        threads = start_workers(db, handlers, stop=stop, settings=settings)
        while any(thread.is_alive() for thread in threads):
            for thread in threads:
                thread.join(timeout=0.2)  # short waits: the main thread must get to run the signal handler
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
