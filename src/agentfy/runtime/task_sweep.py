"""The team task sweep: claimed or in-progress tasks whose deadline has passed become ``timed_out``.

Every ``poll_seconds`` one write transaction calls :func:`agentfy.store.repos.tasks.expire_overdue` with the
injected clock's *now*.  Each task moves by a conditional update (only while its status still allows it and
its deadline is still past), so several server processes sweeping at once time each task out once, and a
task finished a moment before keeps its result.  A timed-out task waits for an admin: retry opens it again,
cancel gives it up.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import Final

from agentfy.runtime.scheduler import Clock, wall_clock
from agentfy.store.db import Database
from agentfy.store.repos import tasks
from agentfy.store.repos.tasks import TeamTask

logger: Final = logging.getLogger("agentfy.tasks")


@dataclass(frozen=True, slots=True)
class SweepSettings:
    """``poll_seconds``: how often a pass looks (a task times out at most this late); ``batch_size``: tasks
    timed out in one transaction (more are taken at once by the next pass)."""

    poll_seconds: float = 5.0
    batch_size: int = 100


class TaskSweep:
    """The loop (see the module docstring); ``clock`` is injectable so tests drive time."""

    def __init__(self, db: Database, *, clock: Clock = wall_clock, settings: SweepSettings | None = None) -> None:
        self.db = db
        self.clock = clock
        self.settings = settings or SweepSettings()

    def sweep(self) -> list[TeamTask]:
        """One pass (worker thread): the tasks it timed out, committed."""
        with self.db.transaction() as tx:
            expired = tasks.expire_overdue(tx, self.clock(), limit=self.settings.batch_size)
        for task in expired:
            logger.info("tasks.timed_out", extra={"task_id": task.id, "tenant_id": task.tenant_id})
        return expired

    async def run(self, stop: asyncio.Event) -> None:
        """Pass after pass until ``stop`` is set; a failed pass (the database away) is logged and retried."""
        while not stop.is_set():
            try:
                expired = await asyncio.to_thread(self.sweep)
            except Exception:
                logger.exception("tasks.sweep_failed")
                expired = []
            if len(expired) >= self.settings.batch_size:
                continue  # more may be overdue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=self.settings.poll_seconds)
