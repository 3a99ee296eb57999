"""The thread a staged handler's computation runs in: results, errors, timeouts, stopping, reuse."""

from __future__ import annotations

import contextvars
import threading
import time

import pytest

from agentfy.events.deadline import HandlerTimeoutError, StageRunner, WorkerStoppingError

CURRENT: contextvars.ContextVar[str] = contextvars.ContextVar("current", default="none")


def test_a_stage_returns_its_result_in_a_reused_thread_with_the_callers_context() -> None:
    runner = StageRunner()
    CURRENT.set("tenant-a")
    first = runner.run(lambda: (threading.current_thread().ident, CURRENT.get()), timeout=5)
    second = runner.run(lambda: (threading.current_thread().ident, CURRENT.get()), timeout=5)
    assert first == second and first[1] == "tenant-a" and first[0] != threading.current_thread().ident


def test_a_stage_error_is_raised_to_the_caller() -> None:
    def boom() -> None:
        raise ConnectionError("model unavailable")

    with pytest.raises(ConnectionError, match="model unavailable"):
        StageRunner().run(boom, timeout=5)


def test_an_overrunning_stage_times_out_and_the_next_gets_a_fresh_thread() -> None:
    runner = StageRunner()
    started = time.monotonic()
    with pytest.raises(HandlerTimeoutError, match=r"did not finish within 0\.2 s"):
        runner.run(lambda: time.sleep(2), timeout=0.2)
    assert time.monotonic() - started < 1
    assert runner.run(lambda: "next", timeout=1) == "next"  # not queued behind the stuck stage


def test_stopping_abandons_the_stage_at_once() -> None:
    stop = threading.Event()
    threading.Timer(0.2, stop.set).start()
    started = time.monotonic()
    with pytest.raises(WorkerStoppingError):
        StageRunner().run(lambda: time.sleep(3), timeout=60, stop=stop)
    assert time.monotonic() - started < 1
