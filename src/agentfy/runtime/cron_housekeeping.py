"""The scheduler's housekeeping of ``cron_runs``: ending runs whose process stopped, deleting old runs.

Why in the scheduler's pass: every process that fires jobs runs one, so the records are kept wherever jobs
run, with no process of its own to deploy.  It runs at most once per :data:`HOUSEKEEPING_EVERY` of the
scheduler's (injectable) clock — the first pass of a process included — and each step is cheap when there is
nothing to do.  Several processes doing it at once is harmless: both steps are idempotent.

* **Stale runs.**  A run still ``running`` ``stale_run_seconds`` after it started is ended ``failed`` with
  :data:`~agentfy.store.repos.cron.STOPPED_RUN_ERROR`: its process died mid-run (the claim is at most once,
  the slot is not retried).  A dead run is so marked between ``stale_run_seconds`` and that plus one
  :data:`HOUSEKEEPING_EVERY` after it started.
* **Pruning.**  Runs that ended more than ``run_retention_days`` ago are deleted, :data:`PRUNE_BATCH` per
  transaction so no write lock is held long (0 days keeps them all).

A failure (the database away) is logged and waits for the next turn: housekeeping never stops jobs firing.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Final

from agentfy.runtime.scheduler_settings import SchedulerSettings
from agentfy.store.db import Database
from agentfy.store.repos import cron

logger: Final = logging.getLogger("agentfy.scheduler")

#: How often a scheduler sweeps stale runs and prunes old ones.
HOUSEKEEPING_EVERY: Final = timedelta(hours=1)
#: Runs deleted in one transaction.
PRUNE_BATCH: Final = 5000


class RunHousekeeping:
    """One scheduler's housekeeping (see the module docstring): :meth:`when_due` on every pass."""

    def __init__(self, db: Database, settings: SchedulerSettings) -> None:
        self.db = db
        self.settings = settings
        self._last: datetime | None = None

    def when_due(self, at: datetime) -> None:
        """Sweep and prune if the last turn was at least :data:`HOUSEKEEPING_EVERY` before ``at`` (or there
        was none); a failure is logged, not raised."""
        if self._last is not None and at - self._last < HOUSEKEEPING_EVERY:
            return
        self._last = at
        try:
            self.fail_stale(at)
            self.prune(at)
        except Exception:  # the next turn retries; the pass goes on to claim
            logger.exception("scheduler.housekeeping_failed")

    def fail_stale(self, at: datetime) -> int:
        """End the runs whose process stopped; how many."""
        started_before = at - timedelta(seconds=self.settings.stale_run_seconds)
        with self.db.transaction() as tx:
            failed = cron.fail_stale_runs(tx, started_before=started_before, at=at)
        if failed:
            logger.warning("scheduler.stale_runs_failed", extra={
                "runs": failed, "stale_run_seconds": self.settings.stale_run_seconds})
        return failed

    def prune(self, at: datetime) -> int:
        """Delete the runs past retention, a batch per transaction; how many."""
        if self.settings.run_retention_days <= 0:
            return 0
        ended_before = at - timedelta(days=self.settings.run_retention_days)
        deleted = 0
        while True:
            with self.db.transaction() as tx:
                count = cron.prune_runs(tx, ended_before=ended_before, limit=PRUNE_BATCH)
            deleted += count
            if count < PRUNE_BATCH:
                break
        if deleted:
            logger.info("scheduler.runs_pruned", extra={
                "runs": deleted, "run_retention_days": self.settings.run_retention_days})
        return deleted
