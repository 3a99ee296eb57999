"""Randomness for minting: the OS CSPRNG, and a pool that hands each item out exactly once.

Why a pool: one ``os.urandom`` syscall per ID would cost more than the rest of minting put together, and
so would a lock or a ``threading.local`` per call on CPython.  :class:`OncePool` holds a batch of items
made from one large ``os.urandom`` read and hands them out through the batch's ``itertools.count`` (one C
call, atomic under the GIL; where the GIL is disabled a lock is used instead).  The contract:

* every item is made from OS CSPRNG bytes that no other item used, and each slot number of a batch is
  drawn exactly once, so no two threads ever receive the same item;
* the caller that finds the batch used up makes a fresh one under a lock (the only lock, off the hot path);
* after ``os.fork()`` the child discards the batch it inherited and makes its own, so parent and child never
  hand out the same item, and the child never waits on a lock held by a parent's thread.

A *random source* is any callable ``random(n) -> bytes`` returning exactly ``n`` bytes, as in the
TypeScript reference; :func:`csprng` is the OS one, tests pass deterministic ones.
"""

from __future__ import annotations

import itertools
import os
import sys
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Generic, TypeAlias, TypeVar

RandomSource: TypeAlias = Callable[[int], bytes]
T = TypeVar("T")


def csprng(n: int) -> bytes:
    """The OS CSPRNG as a random source: ``n`` fresh bytes."""
    return os.urandom(n)


def _gil_enabled() -> bool:
    check: Callable[[], bool] | None = getattr(sys, "_is_gil_enabled", None)
    return True if check is None else check()


class OncePool(Generic[T]):
    """Items from ``make_batch()`` (which reads fresh CSPRNG bytes), each handed out exactly once.

    ``take`` is a plain function attribute, not a method, so that the hot path is one call.
    """

    def __init__(self, make_batch: Callable[[], Sequence[T]]) -> None:
        self._make_batch = make_batch
        self._swap_lock = threading.Lock()
        self._current: tuple[Sequence[T], Callable[[], int]] = ((), itertools.count().__next__)
        self.take: Callable[[], T] = self._build_take(atomic_counter=_gil_enabled())
        pool = weakref.ref(self)
        os.register_at_fork(after_in_child=lambda: _reset_in_child(pool))

    def _start_afresh(self) -> None:
        self._swap_lock = threading.Lock()
        self._current = ((), itertools.count().__next__)

    def _swap(self, used_up: Sequence[T]) -> None:
        """Install a fresh batch unless another thread already replaced ``used_up``."""
        with self._swap_lock:
            if self._current[0] is used_up:
                self._current = (self._make_batch(), itertools.count().__next__)

    def _build_take(self, *, atomic_counter: bool) -> Callable[[], T]:
        def take() -> T:
            """The next item no caller, in this thread, another or another process, has received."""
            while True:
                batch, next_slot = self._current
                try:
                    return batch[next_slot()]
                except IndexError:
                    self._swap(batch)

        if atomic_counter:
            return take
        take_lock = threading.Lock()  # free-threaded CPython: itertools.count is not a safe ticket there

        def take_locked() -> T:
            with take_lock:
                return take()

        return take_locked


def _reset_in_child(pool: weakref.ref[OncePool[T]]) -> None:
    alive = pool()
    if alive is not None:
        alive._start_afresh()
