"""Running a handler's slow stage in a thread of its own, so the worker can give up on it.

Why a thread: Python cannot interrupt a call from outside, so the only way to bound a stage's time — or to
stop promptly when the process is asked to — is to wait for it elsewhere.  A stage that overruns keeps
running in its (daemon) thread until it returns, but its result is discarded: the attempt has already
failed, and nothing it computed is ever written.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable
from typing import Final, TypeVar

T = TypeVar("T")

_POLL_SECONDS: Final = 0.1


class HandlerTimeoutError(TimeoutError):
    """A handler ran longer than ``handler_timeout_seconds``: the attempt fails and is retried with backoff."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"the handler did not finish within {seconds:g} s (handler_timeout_seconds)")
        self.seconds = seconds


class WorkerStoppingError(Exception):
    """The worker was asked to stop while a stage ran: the event is given back unhandled."""


def run_with_deadline(stage: Callable[[], T], timeout: float, stop: threading.Event | None = None) -> T:
    """``stage()`` in a new thread (with the caller's context variables); its result or its exception.

    Raises :class:`HandlerTimeoutError` after ``timeout`` seconds and :class:`WorkerStoppingError` as soon
    as ``stop`` is set, without waiting for the stage.
    """
    outcome: list[T] = []
    failure: list[BaseException] = []
    finished = threading.Event()
    context = contextvars.copy_context()

    def target() -> None:
        try:
            outcome.append(context.run(stage))
        except BaseException as error:  # handed to the waiting worker, which decides
            failure.append(error)
        finally:
            finished.set()

    threading.Thread(target=target, name="agentfy-handler", daemon=True).start()
    deadline = time.monotonic() + timeout
    while not finished.wait(min(_POLL_SECONDS, max(deadline - time.monotonic(), 0))):
        if stop is not None and stop.is_set():
            raise WorkerStoppingError()
        if time.monotonic() >= deadline:
            raise HandlerTimeoutError(timeout)
    if failure:
        raise failure[0]
    return outcome[0]
