"""``agentfy worker``: the consolidation workers as a separate process."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated

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
from agentfy.settings import Settings
from agentfy.store.db import Database

if TYPE_CHECKING:
    from agentfy.events.handlers import AnyHandler
    from agentfy.runtime.memory_models import ModelCalls
    from agentfy.runtime.scheduler import Scheduler


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
    cron: Annotated[bool, typer.Option("--cron/--no-cron", help="Also run the cron scheduler (docs/cron.md); "
                                       "with --once, fire what is due now.")] = True,
) -> None:
    """Run the consolidation workers (episodic, semantic, dreaming, dedup) as a separate process.

    Any number of worker processes may share one PostgreSQL database (events are claimed with FOR UPDATE
    SKIP LOCKED); on SQLite, claims are serialised. Every setting can also come from $AGENTFY_EVENTS_<NAME>
    (e.g. AGENTFY_EVENTS_LEASE_SECONDS), the cron scheduler's from $AGENTFY_SCHEDULER_<NAME>. Ctrl-C and
    SIGTERM stop cleanly: what is finished is written, the rest is given back; a second Ctrl-C quits at once.
    """
    settings = resolve_settings(database_url=database_url, **pool_options(pool_size, pool_overflow, pool_timeout),
                                **bus_options(poll=poll, lease_seconds=lease_seconds, renew_seconds=renew_seconds,
                                              handler_timeout=handler_timeout, max_attempts=max_attempts,
                                              backoff_base=backoff_base, backoff_max=backoff_max,
                                              backoff_jitter=backoff_jitter, batch_size=batch_size,
                                              concurrency=concurrency, retention_days=retention_days))
    bus = settings.events
    db = open_database(database_url, settings=settings)
    calls, pipeline = _pipeline(db, settings)
    err.print(f"worker x{1 if once else bus.concurrency} on {db.display_url}: {', '.join(sorted(pipeline))} "
              f"(lease {bus.lease_seconds:g} s, batch {bus.batch_size}, "
              f"{bus.max_attempts} attempts)", highlight=False, soft_wrap=True)
    # Imported here, not for every command: the runtime loads its model providers (see `agentfy chat`).
    from agentfy.runtime.scheduler import Firing, SchedulerThread  # noqa: PLC0415

    scheduler = _scheduler(db, settings) if cron else None
    thread = None if scheduler is None or once else SchedulerThread(scheduler)
    try:
        if thread is not None:
            thread.start()
        run_until_signalled(db, pipeline, settings=bus, once=once)
        if scheduler is not None and once:
            asyncio.run(scheduler.tick())
    except KeyboardInterrupt:  # the second Ctrl-C
        pass
    finally:
        if thread is not None:
            thread.stop()
        if scheduler is not None and isinstance(scheduler.fire, Firing):
            scheduler.fire.runtime.close()
        calls.close()
        db.dispose()


def _pipeline(db: Database, settings: Settings) -> tuple[ModelCalls, Mapping[str, AnyHandler]]:
    """The consolidation handlers and the memory embedder, their model calls on each agent's own model when it has one
    (through providers of their own, on an event loop of their own: :mod:`agentfy.runtime.memory_models`)."""
    from agentfy.events.embedding import MEMORY_EMBED  # noqa: PLC0415
    from agentfy.keys import credentials_cipher  # noqa: PLC0415 - start-up time, as below
    from agentfy.runtime.memory_embedder import MemoryEmbedder  # noqa: PLC0415
    from agentfy.runtime.memory_models import AgentModels, ModelCalls, ModelExtractor, ModelSummariser  # noqa: PLC0415
    from agentfy.runtime.providers import Providers  # noqa: PLC0415

    cipher = credentials_cipher(settings, db.url, create=False, required=False)
    calls = ModelCalls(Providers(cipher=cipher, policy=settings.runtime.call_policy()))
    models = AgentModels(db, calls)
    return calls, {**handlers(settings=settings.consolidation, bus=settings.events,
                              summariser=ModelSummariser(models), extractor=ModelExtractor(models)),
                   MEMORY_EMBED: MemoryEmbedder(calls, bus=settings.events)}


def _scheduler(db: Database, settings: Settings) -> Scheduler:
    """The cron scheduler of this process: it fires through a runtime of its own (the agents' models, their
    credentials decrypted with the server's key).  Replies are recorded in their sessions; delivering them to a
    chat needs the channels of `agentfy serve`, which this process does not run."""
    from agentfy.agents.router import Router  # noqa: PLC0415 - start-up time, as above
    from agentfy.gateway.app import default_workspace_root  # noqa: PLC0415
    from agentfy.keys import credentials_cipher  # noqa: PLC0415
    from agentfy.runtime.providers import Providers  # noqa: PLC0415
    from agentfy.runtime.runner import Runtime  # noqa: PLC0415
    from agentfy.runtime.scheduler import Firing, Scheduler  # noqa: PLC0415

    providers = Providers(cipher=credentials_cipher(settings, db.url, create=False, required=False),
                          policy=settings.runtime.call_policy())
    runtime = Runtime(db, Router(db), workspace_root=settings.workspace_root or default_workspace_root(db),
                      providers=providers, settings=settings.runtime)
    return Scheduler(db, Firing(db, runtime), settings=settings.scheduler)
