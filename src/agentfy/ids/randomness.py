"""Randomness for minting: the OS CSPRNG, and a pool that hands each item out exactly once.

Why a pool: one ``os.urandom`` syscall per ID would cost more than the rest of minting put together, and
so would a lock or a ``threading.local`` per call on CPython.  :class:`OncePool` holds a batch of items
made from one large ``os.urandom`` read and hands them out through an iterator over the batch: taking an
item is ``next(pool.handout[0])``, one C call that is atomic under the GIL (where the GIL is disabled the
iterator takes a lock instead).  The contract:

* every item is made from OS CSPRNG bytes that no other item used, and a batch's iterator yields each of
  its items once, so no two threads ever receive the same item;
* an exhausted iterator stays exhausted; the caller that finds it so installs a fresh batch under a lock
  (the only lock, off the hot path) and takes from that;
* after ``os.fork()`` the child discards the batch it inherited and makes its own, so parent and child never
  hand out the same item, and the child never waits on a lock held by a parent's thread.

A *random source* is any callable ``random(n) -> bytes`` returning exactly ``n`` bytes, as in the
TypeScript reference; :func:`csprng` is the OS one, tests pass deterministic ones.
"""

from __future__ import annotations

import os
import sys
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import Final, Generic, TypeAlias, TypeVar

RandomSource: TypeAlias = Callable[[int], bytes]
T = TypeVar("T")


def csprng(n: int) -> bytes:
    """The OS CSPRNG as a random source: ``n`` fresh bytes."""
    return os.urandom(n)


def _gil_enabled() -> bool:
    check: Callable[[], bool] | None = getattr(sys, "_is_gil_enabled", None)
    return True if check is None else check()


class _LockedIterator(Iterator[T]):
    """An iterator over a list that takes a lock per item: the hand-out where the GIL is disabled, since a
    plain list iterator is not a safe ticket there."""

    def __init__(self, items: list[T]) -> None:
        self._items = iter(items)
        self._lock = threading.Lock()

    def __next__(self) -> T:
        with self._lock:
            return next(self._items)


_EXHAUSTED: Final[Iterator[object]] = iter(())


class OncePool(Generic[T]):
    """Items from ``make_batch()`` (which reads fresh CSPRNG bytes), each handed out exactly once.

    ``handout`` is a one-slot list holding the current batch's iterator; it is the same list object for the
    pool's lifetime, so a hot path may bind it once and take with ``next(handout[0])``, calling
    :meth:`take` when that raises ``StopIteration`` (the batch is used up).
    """

    def __init__(self, make_batch: Callable[[], list[T]]) -> None:
        self._make_batch = make_batch
        self._swap_lock = threading.Lock()
        self._lock_per_item = not _gil_enabled()
        self.handout: list[Iterator[T]] = [self._exhausted()]
        pool = weakref.ref(self)
        os.register_at_fork(after_in_child=lambda: _reset_in_child(pool))

    @staticmethod
    def _exhausted() -> Iterator[T]:
        return _EXHAUSTED  # type: ignore[return-value]  # yields nothing, so it is an iterator of any type

    def take(self) -> T:
        """The next item no caller, in this thread, another or another process, has received."""
        while True:
            current = self.handout[0]
            try:
                return next(current)
            except StopIteration:
                self._swap(current)

    def _swap(self, used_up: Iterator[T]) -> None:
        """Install a fresh batch unless another thread already replaced ``used_up``."""
        with self._swap_lock:
            if self.handout[0] is used_up:
                batch = self._make_batch()
                self.handout[0] = _LockedIterator(batch) if self._lock_per_item else iter(batch)

    def _start_afresh(self) -> None:
        self._swap_lock = threading.Lock()
        self.handout[0] = self._exhausted()


def _reset_in_child(pool: weakref.ref[OncePool[T]]) -> None:
    alive = pool()
    if alive is not None:
        alive._start_afresh()
