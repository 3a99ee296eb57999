"""The cron scheduler's settings: the ``scheduler`` section of the one settings object (:mod:`agentfy.settings`).

Why one section: ``agentfy serve`` and ``agentfy worker`` both run a scheduler (:mod:`agentfy.runtime.scheduler`)
on the same database, and must agree on how late a job may fire and how long run records are kept.  The
scheduler never reads the process's configuration itself: whoever starts it passes this section down (a
scheduler built without one uses the defaults below).  A bad value fails when the settings are built, naming
the field and the value (``AGENTFY_SCHEDULER_<FIELD>``, the settings file's ``[scheduler]`` table).

* ``poll_seconds`` — how often a pass looks for due jobs when the last one found fewer than a batch: a job
  fires at most about this late.
* ``batch_size`` — jobs claimed in one transaction and fired together (a full batch claims again at once).
* ``run_retention_days`` — ``cron_runs`` rows that ended this long ago are deleted (0 keeps them).
* ``stale_run_seconds`` — a run still ``running`` this long after it started is taken for one whose process
  stopped, and marked ``failed`` saying so: set it above the longest run an agent may take.

Pruning and the stale-run sweep happen in a pass at most once per
:data:`~agentfy.runtime.cron_housekeeping.HOUSEKEEPING_EVERY`.
"""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel, ConfigDict, Field


class SchedulerSettings(BaseModel):
    """How the cron scheduler polls, claims and keeps its run records (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    poll_seconds: float = Field(default=1.0, gt=0, le=3600)
    batch_size: int = Field(default=20, ge=1, le=1000)
    run_retention_days: float = Field(default=30.0, ge=0)
    stale_run_seconds: float = Field(default=3600.0, ge=60)


#: The settings of a scheduler given none: every field's default.
DEFAULT_SCHEDULER_SETTINGS: Final = SchedulerSettings()
