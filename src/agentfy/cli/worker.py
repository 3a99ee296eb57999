"""``agentfy worker``: the consolidation workers as a separate process."""

from __future__ import annotations

from typing import Annotated

import typer

from agentfy.cli.common import err, open_database, resolve_settings
from agentfy.cli.options import (
    AttemptsOption,
    BackoffMaxOption,
    BackoffOption,
    BatchOption,
    ConcurrencyOption,
    DatabaseUrlOption,
    JitterOption,
    LeaseOption,
    PollOption,
    PoolOverflowOption,
    PoolSizeOption,
    PoolTimeoutOption,
    RenewOption,
    RetentionOption,
    TimeoutOption,
    bus_options,
    pool_options,
)
from agentfy.events.consolidation import handlers
from agentfy.events.runner import run_until_signalled


def worker(
    *,
    database_url: DatabaseUrlOption = None,
    once: Annotated[bool, typer.Option("--once", help="Handle what is due now, then exit.")] = False,
    poll: PollOption = None,
    lease_seconds: LeaseOption = None,
    renew_seconds: RenewOption = None,
    handler_timeout: TimeoutOption = None,
    max_attempts: AttemptsOption = None,
    backoff_base: BackoffOption = None,
    backoff_max: BackoffMaxOption = None,
    backoff_jitter: JitterOption = None,
    batch_size: BatchOption = None,
    concurrency: ConcurrencyOption = None,
    retention_days: RetentionOption = None,
    pool_size: PoolSizeOption = None,
    pool_overflow: PoolOverflowOption = None,
    pool_timeout: PoolTimeoutOption = None,
) -> None:
    """Run the consolidation workers (episodic, semantic, dreaming, dedup) as a separate process.

    Any number of worker processes may share one PostgreSQL database (events are claimed with FOR UPDATE
    SKIP LOCKED); on SQLite, claims are serialised. Every setting can also come from $AGENTFY_EVENTS_<NAME>
    (e.g. AGENTFY_EVENTS_LEASE_SECONDS). Ctrl-C and SIGTERM stop cleanly: what is finished is written, the
    rest is given back; a second Ctrl-C quits at once.
    """
    settings = resolve_settings(database_url=database_url, **pool_options(pool_size, pool_overflow, pool_timeout),
                                **bus_options(poll=poll, lease_seconds=lease_seconds, renew_seconds=renew_seconds,
                                              handler_timeout=handler_timeout, max_attempts=max_attempts,
                                              backoff_base=backoff_base, backoff_max=backoff_max,
                                              backoff_jitter=backoff_jitter, batch_size=batch_size,
                                              concurrency=concurrency, retention_days=retention_days))
    bus = settings.events
    db = open_database(database_url, settings=settings)
    pipeline = handlers(settings=settings.consolidation, bus=bus)
    err.print(f"worker x{1 if once else bus.concurrency} on {db.display_url}: {', '.join(sorted(pipeline))} "
              f"(lease {bus.lease_seconds:g} s, batch {bus.batch_size}, "
              f"{bus.max_attempts} attempts)", highlight=False, soft_wrap=True)
    try:
        run_until_signalled(db, pipeline, settings=bus, once=once)
    except KeyboardInterrupt:  # the second Ctrl-C
        pass
    finally:
        db.dispose()
