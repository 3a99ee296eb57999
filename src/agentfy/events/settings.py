"""The event bus's settings: the ``events`` section of the one settings object (:mod:`agentfy.settings`).

Why one object: the library (``Worker(db, handlers, settings=…)``), ``agentfy worker`` and ``agentfy serve``
must agree on the lease, the retry policy and the batch size, or a worker started one way would dead-letter
what a worker started the other way still retries.  The bus never reads the process's configuration itself:
whoever starts it builds :class:`agentfy.settings.Settings` once (where ``AGENTFY_EVENTS_<FIELD>``, the
settings file's ``[events]`` table and the CLI options are read, docs/configuration.md) and passes its
``events`` section down; a function given none uses :data:`DEFAULT_BUS_SETTINGS`.

A bad value fails when the settings are built, naming the field and the value, never later in a worker.
"""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel, ConfigDict, Field, model_validator


class BusSettings(BaseModel):
    """How the bus publishes, leases, retries and keeps events.

    * ``strict_ids`` — refuse a publish whose tenant or agent ID is not an ID (default: warn and count).
    * ``validate_ids`` — ``False`` only to measure what publish-time validation costs.
    * ``max_attempts`` — deliveries of one event (every claim counts, so a worker that dies while handling
      it counts too) before it is dead-lettered.
    * ``backoff_base_seconds`` / ``backoff_max_seconds`` / ``backoff_jitter`` — a failed attempt ``n`` is
      retried after ``min(base * 2^(n-1), max)`` seconds, shortened by a random share of up to ``jitter``
      (0: exact; 1: anywhere from 0 to the full delay), so events that failed together (a database outage)
      do not all come back in the same instant.
    * ``lease_seconds`` — how long a claim is held without renewal; a worker that stops for longer than this
      has its events redelivered.  ``renew_seconds`` (default a third of the lease) is how often a running
      worker renews the leases of the events it holds, so a handler may run longer than the lease.
    * ``handler_timeout_seconds`` — an attempt that takes longer fails (and is retried like any failure).
    * ``batch_size`` — events claimed and acknowledged together (one transaction, a savepoint per event).
    * ``concurrency`` — worker threads per process (``agentfy worker``, ``agentfy serve``).
    * ``poll_seconds`` — the wait between claims when nothing was due.
    * ``retention_days`` — handled events are deleted this long after they were handled (0 keeps them).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    strict_ids: bool = False
    validate_ids: bool = True
    max_attempts: int = Field(default=5, ge=1, le=1000)
    backoff_base_seconds: float = Field(default=1.0, ge=0)
    backoff_max_seconds: float = Field(default=300.0, ge=0)
    backoff_jitter: float = Field(default=0.5, ge=0, le=1)
    lease_seconds: float = Field(default=60.0, gt=0)
    renew_seconds: float | None = Field(default=None, gt=0)
    handler_timeout_seconds: float = Field(default=300.0, gt=0)
    batch_size: int = Field(default=20, ge=1, le=1000)
    concurrency: int = Field(default=1, ge=1, le=64)
    poll_seconds: float = Field(default=0.5, gt=0)
    retention_days: float = Field(default=7.0, ge=0)

    @model_validator(mode="after")
    def _renewal_within_the_lease(self) -> BusSettings:
        if self.renew_seconds is not None and self.renew_seconds >= self.lease_seconds:
            raise ValueError(f"renew_seconds {self.renew_seconds!r} must be shorter than lease_seconds "
                             f"{self.lease_seconds!r}, or the lease runs out before it is renewed")
        return self

    @property
    def renew_interval(self) -> float:
        """Seconds between lease renewals: ``renew_seconds``, else a third of the lease (two may fail)."""
        return self.renew_seconds if self.renew_seconds is not None else self.lease_seconds / 3


#: The settings of a bus function or worker given none: every field's default.
DEFAULT_BUS_SETTINGS: Final = BusSettings()
