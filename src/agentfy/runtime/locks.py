"""One run per conversation at a time: a lock per ``(tenant, agent ID, session key)``, held for the whole run.

Two messages to one session must not interleave (each run reads the history, calls the model and appends;
interleaved, the second run would answer without the first exchange, and replies would cross).  Messages to
other sessions — of the same agent too — run concurrently.

Two layers:

* **In the process**: an asyncio lock per key.  It exists only while somebody holds or waits for it, so idle
  conversations cost nothing, and waiters are served in arrival order (asyncio's lock is fair).  On SQLite this
  is all there is: an embedded database has one gateway process.
* **Across processes (PostgreSQL)**: several gateway processes share one database, and two messages of one
  chat may reach two of them.  The holder of the asyncio lock then takes a session-level advisory lock on the
  key's 64-bit hash (:func:`agentfy.events.consolidation.locks.lock_key`; two keys sharing a hash only wait
  for each other) and gives it back when the run ends (without making the reply wait for that round trip).
  If the process dies, the server drops its connection and with it every lock it held, so a crashed gateway
  never blocks a conversation.

Why one connection of its own per process, and try-and-retry rather than a blocking wait: a run lasts as
long as the model takes (seconds, minutes with tools).  Holding a pooled connection — or a transaction, which
would also hold back vacuum and meet ``idle_in_transaction_session_timeout`` — for each running conversation
would take requests' connections away and exhaust the pool under load.  One autocommit connection outside the
pool holds all of a process's run locks at once, whatever the number of runs, with no transaction open; the
statements on it (``pg_try_advisory_lock`` / ``pg_advisory_unlock``) never block, so it is never stuck behind
one waiter.  A run that finds its conversation held by another process retries after 5 ms, doubling up to
100 ms: cross-process contention on one conversation is rare (it needs two messages of one chat at once on
two processes), so the polling costs nothing in the common case and at most 100 ms of latency in that one.

If that connection is lost (server restart, ``idle_session_timeout``), the locks it held are released by the
server while their runs go on: those runs are logged (``runtime.run_lock_lost``) and the next acquisition
opens a new connection.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Final

import psycopg

from agentfy.events.consolidation.locks import lock_key
from agentfy.store.db import Database
from agentfy.store.errors import UnavailableError

LockKey = tuple[str, str, str]

logger: Final = logging.getLogger("agentfy.runtime")

#: The namespace of run locks in the advisory key space (other users hash other namespaces).
LOCK_NAMESPACE: Final = "agentfy.runtime.run"
RETRY_FIRST_SECONDS: Final = 0.005
RETRY_MAX_SECONDS: Final = 0.1
CONNECT_TIMEOUT_SECONDS: Final = 10


class ConversationLocks:
    """The per-conversation locks of one runtime: in-process always, across processes on PostgreSQL."""

    def __init__(self, db: Database | None = None) -> None:
        self._locks: dict[LockKey, tuple[asyncio.Lock, int]] = {}
        self._shared = AdvisoryLocks(db.conninfo) if db is not None and db.dialect == "postgresql" else None

    @asynccontextmanager
    async def hold(self, key: LockKey) -> AsyncIterator[None]:
        """Hold the conversation's lock for the block, waiting behind earlier holders (of this process, then of
        the others).  ``UnavailableError`` when the database cannot be reached to take it."""
        lock, users = self._locks.get(key, (None, 0))
        if lock is None:
            lock = asyncio.Lock()
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                if self._shared is None:
                    yield
                else:
                    async with self._shared.hold(lock_key(LOCK_NAMESPACE, *key)):
                        yield
        finally:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)

    def close(self) -> None:
        """Close the cross-process lock connection (the server releases what it held); safe from any thread
        and loop, and again.  A later run opens a new one."""
        if self._shared is not None:
            self._shared.close()

    def __len__(self) -> int:
        """How many conversations are running or waiting in this process."""
        return len(self._locks)


class AdvisoryLocks:
    """Session-level advisory locks of one process, all on one autocommit connection outside the pool (see the
    module docstring).  The connection is opened on first use, on the running event loop (a new loop — a test's
    ``asyncio.run`` — gets a new connection), and closed when this object is collected or :meth:`close` is
    called.  Callers serialise per key themselves: a key is held by at most one task of the process."""

    def __init__(self, conninfo: str) -> None:
        self._conninfo = conninfo
        self._connection: psycopg.AsyncConnection[tuple[object, ...]] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._statements: asyncio.Lock | None = None
        #: Bumped whenever the connection is replaced: a lock taken on an older one is already gone.
        self._generation = 0
        self._finish: weakref.finalize[..., AdvisoryLocks] | None = None
        self._releasing: set[asyncio.Future[None]] = set()

    @asynccontextmanager
    async def hold(self, key: int) -> AsyncIterator[None]:
        generation = await self._acquire(key)
        try:
            yield
        finally:
            self._release_later(key, generation)

    async def _acquire(self, key: int) -> int:
        delay = RETRY_FIRST_SECONDS
        while True:
            attempt = asyncio.ensure_future(self._try(key))
            try:
                taken, generation = await asyncio.shield(attempt)
            except asyncio.CancelledError:
                attempt.add_done_callback(lambda done: self._give_back_if_taken(done, key))
                raise
            if taken:
                return generation
            await asyncio.sleep(delay)
            delay = min(delay * 2, RETRY_MAX_SECONDS)

    def _give_back_if_taken(self, attempt: asyncio.Future[tuple[bool, int]], key: int) -> None:
        """A cancelled acquisition whose statement still took the lock: release it."""
        if not attempt.cancelled() and attempt.exception() is None and attempt.result()[0]:
            self._release_later(key, attempt.result()[1])

    def _release_later(self, key: int, generation: int) -> None:
        """Give the lock back in a task of its own, not awaited by the run.

        Why: the ``pg_advisory_unlock`` is a round trip, and awaiting it put that round trip between the
        stored reply and the channel sending it, on every message.  Safe to leave running: the run's writes
        are committed; another process waits that much longer; this process's next run of the conversation
        may take the lock before the unlock is sent, which PostgreSQL counts on the one connection (two takes,
        two gives), so it holds it either way.  A cancelled run gives its lock back the same way (a task is
        not cancelled with its starter); a loop that ends first leaves it to the connection's close."""
        task = asyncio.ensure_future(self._release(key, generation))
        self._releasing.add(task)
        task.add_done_callback(self._releasing.discard)

    async def _try(self, key: int) -> tuple[bool, int]:
        """One ``pg_try_advisory_lock``; a connection found dead (closed by the server while idle) is replaced
        once, a new one that fails is ``UnavailableError``."""
        async with self._guard():
            for fresh in (self._connection is None, True):
                connection = await self._connect()
                try:
                    cursor = await connection.execute("SELECT pg_try_advisory_lock(%s)", (key,))
                    row = await cursor.fetchone()
                except psycopg.Error:
                    self.close()
                    if fresh:
                        raise UnavailableError("the database did not answer the run lock; retry later") from None
                    continue
                return bool(row is not None and row[0]), self._generation
        raise AssertionError("unreachable")

    async def _release(self, key: int, generation: int) -> None:
        async with self._guard():
            if self._connection is None or generation != self._generation or self._connection.closed:
                logger.warning("runtime.run_lock_lost", extra={"lock_key": key})
                return
            try:
                await self._connection.execute("SELECT pg_advisory_unlock(%s)", (key,))
            except psycopg.Error:
                self.close()  # closing the connection releases the lock too

    def _guard(self) -> asyncio.Lock:
        """One statement at a time on the connection; state of another event loop is dropped."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self.close()
            self._loop, self._statements = loop, asyncio.Lock()
        assert self._statements is not None
        return self._statements

    async def _connect(self) -> psycopg.AsyncConnection[tuple[object, ...]]:
        if self._connection is None or self._connection.closed:
            self.close()
            try:
                self._connection = await psycopg.AsyncConnection.connect(
                    self._conninfo, autocommit=True, connect_timeout=CONNECT_TIMEOUT_SECONDS,
                    application_name="agentfy run locks")
            except psycopg.Error:
                raise UnavailableError("the database cannot be reached to take the run lock; retry later") from None
            self._finish = weakref.finalize(self, self._connection.pgconn.finish)
        return self._connection

    def close(self) -> None:
        """Drop the connection now (synchronously: the socket is closed, the server releases its locks)."""
        if self._connection is not None:
            self._generation += 1
            self._connection = None
        if self._finish is not None:
            self._finish()
            self._finish = None
