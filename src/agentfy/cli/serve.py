"""``agentfy serve``: the HTTP and WebSocket API, with the event workers in-process unless turned off."""

from __future__ import annotations

import base64
import os
from typing import Annotated

import typer
from pydantic import SecretStr

from agentfy.cli.common import fail_usage, open_database, out, resolve_settings
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
from agentfy.gateway.bootstrap import prepare
from agentfy.keys import signing_secret
from agentfy.logs import uvicorn_log_config
from agentfy.settings import RESOLVED_SETTINGS_ENV, serialized


def serve(
    *,
    database_url: DatabaseUrlOption = None,
    host: Annotated[str | None, typer.Option(help="Interface to listen on \\[default: 127.0.0.1].",
                                             show_default=False)] = None,
    port: Annotated[int | None, typer.Option(min=1, max=65535, help="Port to listen on \\[default: 8000].",
                                             show_default=False)] = None,
    processes: Annotated[int | None, typer.Option(
        "--workers", min=1, max=64, show_default=False,
        help="Gateway processes behind the one port (PostgreSQL for more than one) \\[default: 1].")] = None,
    event_workers: Annotated[bool | None, typer.Option(
        "--event-workers/--no-event-workers", show_default=False,
        help="Run the consolidation workers in-process \\[default: yes].")] = None,
    pool_size: PoolSizeOption = None,
    pool_overflow: PoolOverflowOption = None,
    pool_timeout: PoolTimeoutOption = None,
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
) -> None:
    """Serve the HTTP and WebSocket API: migrate, create the platform organization, print a one-time admin
    key on the first start (or adopt the admin_api_key setting), run the event workers, and serve.

    Any number of processes may serve one PostgreSQL database (--workers here, or more hosts: then set
    AGENTFY_SIGNING_KEY to one value everywhere). Start-up takes turns under a lock, and each process hears
    the others' changes through the change feed. Every option is also a setting (`agentfy config show`).
    """
    # Imported here, not for every command: the ASGI server and the WebSocket protocol (FastAPI) are about
    # 170 modules only `serve` needs, which would slow down `agentfy --help` and the rest.
    import uvicorn  # noqa: PLC0415

    from agentfy.gateway.rpc.protocol import MAX_FRAME_BYTES  # noqa: PLC0415

    settings = resolve_settings(database_url=database_url, **pool_options(pool_size, pool_overflow, pool_timeout),
                                **{"serve.host": host, "serve.port": port, "serve.workers": processes,
                                   "serve.event_workers": event_workers},
                                **bus_options(poll=poll, lease_seconds=lease_seconds, renew_seconds=renew_seconds,
                                              handler_timeout=handler_timeout, max_attempts=max_attempts,
                                              backoff_base=backoff_base, backoff_max=backoff_max,
                                              backoff_jitter=backoff_jitter, batch_size=batch_size,
                                              concurrency=concurrency, retention_days=retention_days))
    db = open_database(None, migrated=False, settings=settings, create=True)
    if settings.serve.workers > 1 and db.dialect == "sqlite":
        db.dispose()
        raise fail_usage("--workers > 1 needs PostgreSQL: SQLite is the single-process embedded store")
    try:
        boot = prepare(db, settings)
        secret = signing_secret(settings)
    except ValueError as error:
        raise fail_usage(str(error)) from None
    finally:
        db.dispose()
    out.print(f"{db.display_url}: ready; platform organization {boot.platform_org_id}", highlight=False,
              soft_wrap=True)
    if boot.new_admin_key:
        out.print("[bold]platform-admin API key (shown once; store it now):[/bold]", highlight=False)
        out.print(boot.new_admin_key, highlight=False, soft_wrap=True)
    # The server processes (this one too, with one) serve with exactly these settings and this signing key:
    # handed down in one variable their factory reads (agentfy.gateway.server), not read again from the
    # environment or the config file.
    resolved = settings.model_copy(update={"signing_key": SecretStr(base64.b64encode(secret).decode("ascii"))})
    os.environ[RESOLVED_SETTINGS_ENV] = serialized(resolved)
    uvicorn.run("agentfy.gateway.server:app_from_env", factory=True, host=settings.serve.host,
                port=settings.serve.port, workers=settings.serve.workers, ws_max_size=MAX_FRAME_BYTES,
                log_config=uvicorn_log_config(settings.log), log_level=settings.log.level,
                access_log=False)  # each request's agentfy.request record is the access log, with its identity
