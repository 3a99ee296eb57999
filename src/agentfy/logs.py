"""Logging for every agentfy process: one configuration for our records and uvicorn's, a readable console
format or JSON lines, and the request's identity on every record.

Why a filter and not ``extra=`` at each call: the request ID, the tenant's slug and the agent key are known
once per request (or run) and belong on *every* record made while it is handled, including those of
libraries; a :class:`contextvars.ContextVar` carries them across ``await`` and into worker threads started
with the context, and :class:`IdentityFilter` copies them onto each record.  Fields passed with
``extra=`` are printed too (JSON: as keys; console: as ``key=value``), so no record loses what its caller
attached.

Logs name the tenant by slug and the agent by key (readable, and what an operator searches for); IDs belong
in spans and in metric labels only where they are bounded.
"""

from __future__ import annotations

import contextvars
import json
import logging
import logging.config
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict


class LogSettings(BaseModel):
    """``level`` of agentfy's and uvicorn's records; ``format`` ``console`` (readable) or ``json`` (one
    object per line, for a log shipper).  The ``log`` section of the settings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    level: Literal["debug", "info", "warning", "error", "critical"] = "info"
    format: Literal["console", "json"] = "console"


#: The attributes every LogRecord has; anything else on a record was attached by its caller.  uvicorn's
#: ``color_message`` repeats the message with terminal escapes: never printed.
_STANDARD: Final = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message", "asctime", "taskName", "color_message"}


@dataclass(slots=True)
class LogIdentity:
    """What every record made while handling one request (or run) carries.

    Mutable on purpose: a request's outermost layer sets one per request, and what a handler learns later
    (the agent it resolved, possibly in a worker thread that runs in a *copy* of the request's context) is
    written into that same object, so the request's final record carries it."""

    request_id: str | None = None
    tenant: str | None = None  # the organization's slug
    agent_key: str | None = None
    agent_id: str | None = None  # for spans only: logs carry the key (IdentityFilter copies the three above)


_NO_IDENTITY: Final = LogIdentity()  # outside any request: never written to (see bind_log_identity)
_identity: contextvars.ContextVar[LogIdentity] = contextvars.ContextVar("agentfy_log_identity",
                                                                        default=_NO_IDENTITY)


def current_identity() -> LogIdentity:
    return _identity.get()


@contextmanager
def log_identity(**fields: str | None) -> Iterator[LogIdentity]:
    """Records of the enclosed block carry ``fields`` (request_id, tenant, agent_key) over the current ones."""
    bound = replace(_identity.get(), **fields)
    token = _identity.set(bound)
    try:
        yield bound
    finally:
        _identity.reset(token)


def set_log_identity(identity: LogIdentity) -> contextvars.Token[LogIdentity]:
    """Make ``identity`` current (a request's outermost layer); undo with :func:`reset_log_identity`."""
    return _identity.set(identity)


def reset_log_identity(token: contextvars.Token[LogIdentity]) -> None:
    _identity.reset(token)


def bind_log_identity(**fields: str | None) -> None:
    """Add ``fields`` to the current request's identity (seen by its later records, from any thread that
    runs in a copy of its context); outside a request, to the rest of the current task only."""
    identity = _identity.get()
    if identity is _NO_IDENTITY:
        _identity.set(replace(identity, **fields))
        return
    for name, value in fields.items():
        setattr(identity, name, value)


class IdentityFilter(logging.Filter):
    """Copies the request's identity onto each record (``request_id``, ``tenant``, ``agent_key``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        identity = _identity.get()
        for name in ("request_id", "tenant", "agent_key"):
            if getattr(record, name, None) is None:
                setattr(record, name, getattr(identity, name))
        return True


def _extras(record: logging.LogRecord) -> dict[str, Any]:
    return {name: value for name, value in vars(record).items()
            if name not in _STANDARD and value is not None and not name.startswith("_")}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, the identity fields and every extra."""

    def format(self, record: logging.LogRecord) -> str:
        document: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name, value in _extras(record).items():
            document.setdefault(name, value if isinstance(value, str | int | float | bool) else str(value))
        if record.exc_info:
            document["exception"] = self.formatException(record.exc_info)
        return json.dumps(document, ensure_ascii=False)


class ConsoleFormatter(logging.Formatter):
    """``time level logger message key=value …``: readable in a terminal, every extra kept."""

    def format(self, record: logging.LogRecord) -> str:
        stamp = datetime.fromtimestamp(record.created, UTC).strftime("%H:%M:%S.%f")[:-3]
        fields = " ".join(f"{name}={value}" for name, value in _extras(record).items())
        line = f"{stamp} {record.levelname:<7} {record.name}: {record.getMessage()}{' ' + fields if fields else ''}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def logging_config(settings: LogSettings) -> dict[str, Any]:
    """The :func:`logging.config.dictConfig` document for ``settings``: agentfy's, uvicorn's and the root
    logger's records through one handler on stderr."""
    formatter = JsonFormatter if settings.format == "json" else ConsoleFormatter
    level = settings.level.upper()
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"identity": {"()": IdentityFilter}},
        "formatters": {"agentfy": {"()": formatter}},
        "handlers": {"stderr": {"class": "logging.StreamHandler", "stream": "ext://sys.stderr",
                                "formatter": "agentfy", "filters": ["identity"]}},
        "loggers": {
            "agentfy": {"level": level, "handlers": ["stderr"], "propagate": False},
            "uvicorn": {"level": level, "handlers": ["stderr"], "propagate": False},
            "uvicorn.error": {"level": level, "handlers": ["stderr"], "propagate": False},
            "uvicorn.access": {"level": level, "handlers": ["stderr"], "propagate": False},
        },
        "root": {"level": "WARNING", "handlers": ["stderr"]},
    }


def configure_logging(settings: LogSettings) -> None:
    """Apply :func:`logging_config` to this process."""
    logging.config.dictConfig(logging_config(settings))


def uvicorn_log_config(settings: LogSettings) -> dict[str, Any]:
    """What ``uvicorn.run(log_config=…)`` takes, so its worker processes log like this one."""
    return logging_config(settings)
