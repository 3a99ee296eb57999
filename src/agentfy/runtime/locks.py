"""One run per conversation at a time: an asyncio lock per ``(tenant, agent ID, session key)``.

Two messages to one session must not interleave (each run reads the history, calls the model and appends;
interleaved, the second run would answer without the first exchange, and replies would cross).  Messages to
other sessions — of the same agent too — run concurrently.  A lock exists only while somebody holds or waits
for it, so idle conversations cost nothing.  Waiters are served in arrival order (asyncio's lock is fair).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

LockKey = tuple[str, str, str]


class ConversationLocks:
    """The per-conversation locks of one runtime (one event loop)."""

    def __init__(self) -> None:
        self._locks: dict[LockKey, tuple[asyncio.Lock, int]] = {}

    @asynccontextmanager
    async def hold(self, key: LockKey) -> AsyncIterator[None]:
        """Hold the conversation's lock for the block, waiting behind earlier holders."""
        lock, users = self._locks.get(key, (None, 0))
        if lock is None:
            lock = asyncio.Lock()
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)

    def __len__(self) -> int:
        """How many conversations are running or waiting."""
        return len(self._locks)
