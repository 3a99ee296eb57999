"""Running a handler's slow stage in a thread of its own, so the worker can give up on it.

Why a thread: Python cannot interrupt a call from outside, so the only way to bound a stage's time — or to
stop promptly when the process is asked to — is to wait for it elsewhere.  A stage that overruns keeps
running in its (daemon) thread until it returns, but its result is discarded: the attempt has already
failed, and nothing it computed is ever written.

The thread is reused from one stage to the next (starting a thread per event cost more than a whole
no-op event); a thread whose stage was abandoned is left to finish and end on its own, and an idle thread
ends after a few seconds, so a discarded worker leaves nothing behind.
"""

from __future__ import annotations

import contextvars
import queue
import threading
import time
from collections.abc import Callable
from typing import Any, Final

_POLL_SECONDS: Final = 0.1
_IDLE_SECONDS: Final = 5.0


class HandlerTimeoutError(TimeoutError):
    """A handler ran longer than ``handler_timeout_seconds``: the attempt fails and is retried with backoff."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"the handler did not finish within {seconds:g} s (handler_timeout_seconds)")
        self.seconds = seconds


class WorkerStoppingError(Exception):
    """The worker was asked to stop while a stage ran: the event is given back unhandled."""


class _Job:
    __slots__ = ("error", "finished", "result", "stage")

    def __init__(self, stage: Callable[[], Any]) -> None:
        self.stage = stage
        self.result: Any = None
        self.error: BaseException | None = None
        self.finished = threading.Event()


class _Lane:
    """One thread's queue of jobs; ``open`` until the thread ends (idle) or is abandoned."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.open = True

    def offer(self, job: _Job | None) -> bool:
        with self.lock:
            if not self.open:
                return False
            self.jobs.put(job)
            if job is None:
                self.open = False
            return True


def _serve(lane: _Lane) -> None:
    while True:
        try:
            job = lane.jobs.get(timeout=_IDLE_SECONDS)
        except queue.Empty:
            with lane.lock:  # nothing can be offered between this check and the end
                if lane.jobs.empty():
                    lane.open = False
                    return
            continue
        if job is None:
            return
        try:
            job.result = job.stage()
        except BaseException as error:  # handed to the waiting worker, which decides
            job.error = error
        finally:
            job.finished.set()


class StageRunner:
    """Runs one stage at a time in a daemon thread (reused) and waits for it, up to a deadline."""

    def __init__(self, name: str = "agentfy-handler") -> None:
        self.name = name
        self._lane: _Lane | None = None

    def run(self, stage: Callable[[], Any], timeout: float, stop: threading.Event | None = None) -> Any:
        """``stage()`` in the runner's thread (with the caller's context variables); its result, or its
        exception raised here.

        Raises :class:`HandlerTimeoutError` after ``timeout`` seconds and :class:`WorkerStoppingError` as
        soon as ``stop`` is set, without waiting for the stage (its thread is then abandoned).
        """
        context = contextvars.copy_context()
        job = _Job(lambda: context.run(stage))
        if self._lane is None or not self._lane.offer(job):
            self._lane = _Lane()
            threading.Thread(target=_serve, args=(self._lane,), name=self.name, daemon=True).start()
            self._lane.offer(job)
        deadline = time.monotonic() + timeout
        while not job.finished.wait(min(_POLL_SECONDS, max(deadline - time.monotonic(), 0))):
            if stop is not None and stop.is_set():
                self._abandon()
                raise WorkerStoppingError()
            if time.monotonic() >= deadline:
                self._abandon()
                raise HandlerTimeoutError(timeout)
        if job.error is not None:
            raise job.error
        return job.result

    def _abandon(self) -> None:
        """Leave the busy thread to finish its stage and end; the next stage gets a new thread."""
        if self._lane is not None:
            self._lane.offer(None)
        self._lane = None
