"""``with_id_retry``: repeat a whole write when its freshly minted primary key collides.

Uniqueness of an ID is the primary key's job, not the words' (60 random bits make a collision rare, not
impossible).  The write is repeated as a whole, so it mints its IDs anew each time; at most ``attempts``
tries in all (5, as the reference's ``withIdRetry``).  Only a primary-key collision is retried: a unique
violation on anything else (a duplicate ``agent_key``, a slug) is the caller's conflict and propagates at
once, as does every other error.  The storage layer supplies ``is_collision`` for its driver's errors.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final, TypeVar

T = TypeVar("T")

#: The reference's limit: the first try and four repeats.
DEFAULT_ATTEMPTS: Final = 5


class IdCollisionError(Exception):
    """A write failed because a freshly minted primary key already exists (raise it to ask for a retry)."""


class IdRetryExhaustedError(RuntimeError):
    """Every attempt collided on the primary key; the last collision is the ``__cause__``."""

    def __init__(self, attempts: int) -> None:
        super().__init__(f"gave up after {attempts} attempts: every freshly minted ID collided with an "
                         "existing primary key (the random source may be broken or not random)")
        self.attempts = attempts


def is_id_collision(error: BaseException) -> bool:
    """The default test: only :class:`IdCollisionError` counts as a primary-key collision."""
    return isinstance(error, IdCollisionError)


def _check_attempts(attempts: int) -> None:
    if attempts < 1:
        raise ValueError(f"attempts must be at least 1, got {attempts}")


def with_id_retry(write: Callable[[], T], *, attempts: int = DEFAULT_ATTEMPTS,
                  is_collision: Callable[[BaseException], bool] = is_id_collision) -> T:
    """Run ``write()``; repeat it while it fails on a primary-key collision, at most ``attempts`` times."""
    _check_attempts(attempts)
    for attempt in range(1, attempts + 1):
        try:
            return write()
        except Exception as error:
            if not is_collision(error):
                raise
            if attempt == attempts:
                raise IdRetryExhaustedError(attempts) from error
    raise AssertionError("unreachable")  # pragma: no cover


async def with_id_retry_async(write: Callable[[], Awaitable[T]], *, attempts: int = DEFAULT_ATTEMPTS,
                              is_collision: Callable[[BaseException], bool] = is_id_collision) -> T:
    """:func:`with_id_retry` for a coroutine function."""
    _check_attempts(attempts)
    for attempt in range(1, attempts + 1):
        try:
            return await write()
        except Exception as error:
            if not is_collision(error):
                raise
            if attempt == attempts:
                raise IdRetryExhaustedError(attempts) from error
    raise AssertionError("unreachable")  # pragma: no cover
