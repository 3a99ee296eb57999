"""How a model call is tried, whatever the provider: the tries, their bound, the waits between them.

Every SDK provider (:mod:`agentfy.runtime.openai_compat`, :mod:`agentfy.runtime.anthropic_messages`) turns the
SDK's own retries off and calls :func:`call_with_policy`, so one loop decides for all of them:

* up to :attr:`CallPolicy.attempts` tries, another one only when the provider's :class:`SdkErrors` says the
  failure may pass (a timeout, a connection error, a rate limit, an overloaded or failing server) and no text of
  the answer has been shown yet (:class:`Progress`: the person would see it twice);
* between tries the wait the server asked for (``retry-after-ms``, ``Retry-After`` as seconds or an HTTP date,
  :func:`retry_after`), at most :attr:`CallPolicy.retry_after_max_seconds`, else an exponential backoff with
  jitter (:meth:`CallPolicy.backoff`); each retry is logged (``runtime.model_retry``);
* each try bounded by :attr:`CallPolicy.timeout_seconds`, a stream included (an SDK's HTTP timeout bounds each
  read only): running out is a :class:`~agentfy.runtime.model.ModelError` with ``timed_out``;
* a cancelled run cancels the try: the SDK closes the HTTP connection, so the server sees the disconnect.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import math
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Final, TypeVar

from agentfy.runtime.model import ModelError, TextSink
from agentfy.runtime.settings import (
    DEFAULT_MODEL_ATTEMPTS,
    DEFAULT_MODEL_BACKOFF_MAX_SECONDS,
    DEFAULT_MODEL_BACKOFF_SECONDS,
    DEFAULT_MODEL_RETRY_AFTER_MAX_SECONDS,
    DEFAULT_MODEL_TIMEOUT_SECONDS,
)

logger: Final = logging.getLogger("agentfy.runtime.call_policy")

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class CallPolicy:
    """How one model call is tried (:class:`~agentfy.runtime.providers.Providers` passes one to every provider it
    builds; a process makes it from its ``runtime`` settings, :mod:`agentfy.runtime.settings`, which hold the
    defaults).

    ``attempts``: tries in all (1: no retry); ``timeout_seconds``: the bound of each try, a stream included;
    ``backoff_seconds``: the first wait without ``Retry-After``, doubled each try up to
    ``backoff_max_seconds`` (less up to a quarter of jitter); ``retry_after_max_seconds``: the longest wait a
    ``Retry-After`` gets."""

    attempts: int = DEFAULT_MODEL_ATTEMPTS
    timeout_seconds: float = DEFAULT_MODEL_TIMEOUT_SECONDS
    backoff_seconds: float = DEFAULT_MODEL_BACKOFF_SECONDS
    backoff_max_seconds: float = DEFAULT_MODEL_BACKOFF_MAX_SECONDS
    retry_after_max_seconds: float = DEFAULT_MODEL_RETRY_AFTER_MAX_SECONDS

    def __post_init__(self) -> None:
        if type(self.attempts) is not int or not 1 <= self.attempts <= 20:
            raise ValueError(f"attempts {self.attempts!r} must be an integer from 1 to 20")
        for name in ("timeout_seconds", "backoff_seconds", "backoff_max_seconds", "retry_after_max_seconds"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or value < 0 or (name == "timeout_seconds" and value == 0):
                raise ValueError(f"{name} {value!r} must be a number of seconds (positive for timeout_seconds)")

    def backoff(self, retry: int) -> float:
        """The wait before try ``retry + 1`` when the server said nothing (``retry`` counts from 1)."""
        jitter = 1 - 0.25 * random.random()  # noqa: S311 - spreading retries, not a secret
        return float(min(self.backoff_seconds * 2 ** (retry - 1), self.backoff_max_seconds) * jitter)

    def wait(self, retry: int, asked: float | None) -> float:
        """The wait before try ``retry + 1``: what the server ``asked`` (capped), else the backoff."""
        return min(asked, self.retry_after_max_seconds) if asked is not None else self.backoff(retry)


def retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """The wait a response asks for, in seconds: ``retry-after-ms``, else ``retry-after`` as seconds or as an
    HTTP date (relative to ``now``, default the clock); ``None`` when absent or unreadable, never negative."""
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / scale
        except ValueError:
            continue
        return max(seconds, 0.0) if math.isfinite(seconds) else None
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(moment.timestamp() - (time.time() if now is None else now), 0.0)


@dataclass(frozen=True, slots=True)
class SdkErrors:
    """How one SDK's failures read (each provider module has one): ``caught``, the exceptions a try may raise
    (the SDK's own and ``TimeoutError``, the try's bound); ``describe(base_url, error, timeout)``, the person's
    :class:`~agentfy.runtime.model.ModelError` (never the key, never a response body); ``retryable(error)``,
    whether another try may succeed; ``asked_wait(error)``, the seconds the server asked to wait, if any."""

    caught: tuple[type[BaseException], ...]
    describe: Callable[[str, BaseException, float], ModelError]
    retryable: Callable[[BaseException], bool]
    asked_wait: Callable[[BaseException], float | None]


@dataclass(slots=True)
class Progress:
    """The text already streamed to the person: once there is some, the call is not tried again."""

    sink: TextSink | None
    shown: bool = False

    async def show(self, piece: str) -> None:
        if self.sink is not None and piece:
            self.shown = True
            await self.sink(piece)


async def call_with_policy(policy: CallPolicy, errors: SdkErrors, base_url: str, attempt: Callable[[], Awaitable[T]],
                           *, progress: Progress, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> T:
    """``attempt()`` tried as the module docstring says; its result, or the last failure as a
    :class:`~agentfy.runtime.model.ModelError` (``errors.describe``).  ``sleep`` waits between tries."""
    for tried in range(1, policy.attempts + 1):
        try:
            async with asyncio.timeout(policy.timeout_seconds):
                return await attempt()
        except errors.caught as error:
            failure = errors.describe(base_url, error, policy.timeout_seconds)
            if tried == policy.attempts or progress.shown or not errors.retryable(error):
                raise failure from None
            wait = policy.wait(tried, errors.asked_wait(error))
            logger.warning("runtime.model_retry", extra={
                "base_url": base_url, "attempt": tried, "wait_seconds": round(wait, 3), "reason": str(failure)})
            await sleep(wait)
    raise AssertionError("unreachable: the last attempt returns or raises")
