"""The store's connection pool: bounded, with a checkout timeout, and rid of connections the server killed.

Why not SQLAlchemy's pool: a checkout and return through it costs about 15 µs (events, weak references, a
reset), as much as a primary-key SELECT on SQLite; transactions here end themselves, so a LIFO of idle
driver connections is enough.  What it keeps of a real pool:

* **Bounded.**  At most ``size + overflow`` connections are out at once; ``size`` idle ones are kept, and the
  overflow ones too while the pool keeps needing them: a transaction that finds no idle connection and opens
  one marks a burst, returned connections beyond ``size`` idle ones stay open for reuse, and once
  ``overflow_idle_seconds`` pass without a burst, each surplus one is closed as it is returned.  Closing the
  overflow at once (SQLAlchemy's way) made a gateway whose concurrent transactions hover around ``size`` open
  and close a PostgreSQL connection — a server process forked, an authentication — for about one request in
  ten.  A transaction that finds none free waits up to ``timeout`` seconds and then fails with
  :class:`~agentfy.store.errors.UnavailableError` (the API's 503), never hangs.
* **Dead connections are replaced, not served.**  PostgreSQL connections run in autocommit mode and every
  transaction starts with an explicit ``BEGIN`` — the round trip psycopg would make anyway — so a
  connection the server terminated (``pg_terminate_backend``, a restart, a failover) fails *there*, before
  any of the caller's statements.  The database handle then discards every idle connection (they were most
  likely killed together) and begins again on a new one: no transaction that starts after the kill fails.
  This costs nothing per transaction, unlike SQLAlchemy's ``pre_ping`` (an extra ``SELECT 1`` per checkout).

The fast path is two ``deque`` operations, atomic under the GIL: threads share the pool without a lock, and
only a caller that finds no permit takes the condition and waits.  After ``fork()`` the child forgets the
parent's connections (sharing a socket or a SQLite handle corrupts both).
"""

from __future__ import annotations

import collections
import contextlib
import os
import threading
import time
import weakref
from typing import Any

import sqlalchemy as sa
from pydantic import BaseModel, ConfigDict, Field

from agentfy.store.errors import UnavailableError


class PoolSettings(BaseModel):
    """How many connections one process may hold, and how long a transaction waits for one: the ``db``
    section of the settings (``AGENTFY_DB_POOL_SIZE``, ``AGENTFY_DB_MAX_OVERFLOW``, ``AGENTFY_DB_POOL_TIMEOUT``,
    ``AGENTFY_DB_OVERFLOW_IDLE_SECONDS``).

    ``pool_size`` idle connections are kept, ``max_overflow`` more are opened under load (kept for reuse until
    ``overflow_idle_seconds`` pass without a burst that needs them; 0 closes them when returned), and a
    transaction waits ``pool_timeout`` seconds for one before failing as unavailable (the API's 503).  The
    defaults keep one process at 20 connections: four gateway processes plus workers stay well under
    PostgreSQL's default ``max_connections`` of 100.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    pool_size: int = Field(default=8, ge=1)
    max_overflow: int = Field(default=12, ge=0)
    pool_timeout: float = Field(default=10.0, gt=0)
    overflow_idle_seconds: float = Field(default=30.0, ge=0)

    @property
    def limit(self) -> int:
        return self.pool_size + self.max_overflow


class Connections:
    """Driver connections (each with its cursor) for one database, bounded by :class:`PoolSettings`.

    ``Tx`` inlines the common case of :meth:`acquire` (a permit, then an idle connection) and of
    :meth:`release` (an idle slot free): a change to how permits or idle connections are kept changes both.
    """

    def __init__(self, engine: sa.Engine, settings: PoolSettings) -> None:
        self._engine = engine
        self._autocommit = engine.dialect.name == "postgresql"
        self.settings = settings
        self._keep = settings.pool_size  # idle connections kept
        #: When a transaction last found no idle connection and opened one (see :meth:`_overflow_wanted`).
        self._burst_at = float("-inf")
        self._idle: collections.deque[tuple[Any, Any]] = collections.deque()
        self._permits: collections.deque[None] = collections.deque([None] * settings.limit)
        self._freed = threading.Condition()
        self._waiting = 0
        this = weakref.ref(self)
        os.register_at_fork(after_in_child=lambda: _forget_connections(this))

    @property
    def checked_out(self) -> int:
        return self.settings.limit - len(self._permits)

    @property
    def idle(self) -> int:
        return len(self._idle)

    def acquire(self) -> tuple[Any, Any]:
        """An idle connection, or a new one; waits for a free slot up to the timeout."""
        try:
            self._permits.pop()
        except IndexError:
            self._wait_for_permit()
        return self.connect_permitted()

    def connect_permitted(self) -> tuple[Any, Any]:
        """An idle connection, or a new one, for a caller that already holds a permit (the permit is given
        back if no connection can be made)."""
        try:
            return self._idle.pop()
        except IndexError:
            self._burst_at = time.monotonic()  # more are wanted at once than are idle: keep what opens now
        try:
            return self._connect()
        except BaseException:
            self._give_back()
            raise

    def release(self, connection: Any, cursor: Any) -> None:
        """Return a connection whose transaction ended cleanly: kept idle while fewer than ``pool_size`` are,
        or while the overflow is still wanted (:meth:`_overflow_wanted`); closed otherwise."""
        if len(self._idle) < self._keep or self._overflow_wanted():
            self._idle.append((connection, cursor))
        else:
            _close(connection)
        self._give_back()

    def _overflow_wanted(self) -> bool:
        """Whether a connection beyond ``pool_size`` idle ones is kept: within ``overflow_idle_seconds`` of the
        last time a transaction had to open one (while the surplus serves every transaction, none opens, and
        after the window the surplus is closed one return at a time, down to ``pool_size``)."""
        keep_for = self.settings.overflow_idle_seconds
        return keep_for > 0 and time.monotonic() - self._burst_at < keep_for

    def discard(self, connection: Any) -> None:
        """Close a connection that must not be reused (its transaction could not be ended, or it is dead)."""
        _close(connection)
        self._give_back()

    def discard_idle(self) -> int:
        """Close every idle connection (after one turned out dead: its siblings were most likely killed too)."""
        closed = 0
        while True:
            try:
                connection, _ = self._idle.pop()
            except IndexError:
                return closed
            _close(connection)
            closed += 1

    def close_all(self) -> None:
        self.discard_idle()

    # -- internals -------------------------------------------------------------------------------------------
    def _connect(self) -> tuple[Any, Any]:
        proxied = self._engine.raw_connection()
        proxied.detach()
        connection = proxied.dbapi_connection
        assert connection is not None  # a freshly checked-out connection is never invalidated
        if self._autocommit:
            connection.rollback()  # the engine's checkout may have left a transaction open
            connection.autocommit = True  # transactions are explicit: Tx.begin sends BEGIN
        return connection, connection.cursor()

    def _give_back(self) -> None:
        self._permits.append(None)
        if self._waiting:
            self.notify_waiter()

    def notify_waiter(self) -> None:
        """Wake one caller waiting for a permit (after one was given back)."""
        with self._freed:
            self._freed.notify()

    def _wait_for_permit(self) -> None:
        timeout = self.settings.pool_timeout
        deadline = time.monotonic() + timeout
        with self._freed:
            self._waiting += 1
            try:
                while True:
                    try:
                        self._permits.pop()
                        return
                    except IndexError:
                        pass
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        pool = self.settings
                        raise UnavailableError(
                            f"no database connection became free within {timeout:g} s (all {pool.limit} of the "
                            f"pool are in use: size {pool.pool_size} + overflow {pool.max_overflow})")
                    self._freed.wait(remaining)
            finally:
                self._waiting -= 1


def _close(connection: Any) -> None:
    with contextlib.suppress(Exception):
        connection.close()


def _forget_connections(pool: weakref.ref[Connections]) -> None:
    alive = pool()
    if alive is not None:  # the parent still owns them: drop, do not close
        alive._idle = collections.deque()
        alive._permits = collections.deque([None] * alive.settings.limit)
        alive._freed = threading.Condition()
        alive._waiting = 0
