"""The options several commands share, each defined once: the database URL, the pool and the event bus.

Options that are also settings read no environment variable themselves: the settings do (below the config
file), and an option given on the command line wins over both.  :func:`pool_options` and
:func:`bus_options` name the given values by their settings (``db.pool_size``, ``events.lease_seconds``).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

PoolSizeOption = Annotated[int | None, typer.Option(
    "--db-pool-size", min=1, show_default=False,
    help="Idle database connections each process keeps \\[setting db.pool_size, $AGENTFY_DB_POOL_SIZE; "
         "default: 8].")]
PoolOverflowOption = Annotated[int | None, typer.Option(
    "--db-max-overflow", min=0, show_default=False,
    help="More connections each process may open under load, closed once no burst has needed them for "
         "db.overflow_idle_seconds (default 30) [$AGENTFY_DB_MAX_OVERFLOW; default: 12].")]
PoolTimeoutOption = Annotated[float | None, typer.Option(
    "--db-pool-timeout", min=0.1, show_default=False,
    help="Seconds a request waits for a free connection before answering 503 [$AGENTFY_DB_POOL_TIMEOUT; "
         "default: 10].")]
DatabaseUrlOption = Annotated[str | None, typer.Option(
    "--database-url", show_default=False,
    help="sqlite:///PATH or postgresql+psycopg://USER@HOST/DB [$AGENTFY_DATABASE_URL; default: "
         "sqlite:///var/agentfy.db].")]

# The bus settings as options of `worker` and `serve`; unset ones come from $AGENTFY_EVENTS_* or the defaults.
LeaseOption = Annotated[float | None, typer.Option(
    "--lease-seconds", help="Seconds a claim is held without renewal \\[default: 60].", show_default=False)]
RenewOption = Annotated[float | None, typer.Option(
    "--renew-seconds", help="Seconds between lease renewals \\[default: a third of the lease].", show_default=False)]
TimeoutOption = Annotated[float | None, typer.Option(
    "--handler-timeout", help="Seconds an attempt may take before it fails \\[default: 300].", show_default=False)]
AttemptsOption = Annotated[int | None, typer.Option(
    "--max-attempts", help="Deliveries before an event is dead-lettered \\[default: 5].", show_default=False)]
BackoffOption = Annotated[float | None, typer.Option(
    "--backoff-base", help="Seconds before the first retry, doubled each time \\[default: 1].", show_default=False)]
BackoffMaxOption = Annotated[float | None, typer.Option(
    "--backoff-max", help="Longest wait between retries, in seconds \\[default: 300].", show_default=False)]
JitterOption = Annotated[float | None, typer.Option(
    "--backoff-jitter", help="Share (0-1) of a retry's wait cut at random \\[default: 0.5].", show_default=False)]
BatchOption = Annotated[int | None, typer.Option(
    "--batch-size", help="Events claimed and acknowledged together \\[default: 20].", show_default=False)]
ConcurrencyOption = Annotated[int | None, typer.Option(
    "--concurrency", help="Worker threads in this process \\[default: 1].", show_default=False)]
PollOption = Annotated[float | None, typer.Option(
    "--poll", help="Seconds between polls when idle \\[default: 0.5].", show_default=False)]
RetentionOption = Annotated[float | None, typer.Option(
    "--retention-days", help="Days handled events are kept; 0 keeps them \\[default: 7].", show_default=False)]


def bus_options(*, poll: float | None, lease_seconds: float | None, renew_seconds: float | None,
                 handler_timeout: float | None, max_attempts: int | None, backoff_base: float | None,
                 backoff_max: float | None, backoff_jitter: float | None, batch_size: int | None,
                 concurrency: int | None, retention_days: float | None) -> dict[str, Any]:
    """The event-bus options of ``worker`` and ``serve`` under their setting names."""
    return {"events.poll_seconds": poll, "events.lease_seconds": lease_seconds,
            "events.renew_seconds": renew_seconds, "events.handler_timeout_seconds": handler_timeout,
            "events.max_attempts": max_attempts, "events.backoff_base_seconds": backoff_base,
            "events.backoff_max_seconds": backoff_max, "events.backoff_jitter": backoff_jitter,
            "events.batch_size": batch_size, "events.concurrency": concurrency,
            "events.retention_days": retention_days}


def pool_options(size: int | None, overflow: int | None, timeout: float | None) -> dict[str, Any]:
    return {"db.pool_size": size, "db.max_overflow": overflow, "db.pool_timeout": timeout}
