"""The one logging configuration: agentfy's and uvicorn's records alike, JSON or console, the request's
identity on every record, extras printed, uvicorn's terminal-escaped duplicate dropped."""

from __future__ import annotations

import io
import json
import logging
import logging.config

import pytest

from agentfy.logs import LogSettings, log_identity, logging_config


def _configure(settings: LogSettings) -> io.StringIO:
    """Apply the configuration, its one handler writing to a buffer instead of stderr."""
    logging.config.dictConfig(logging_config(settings))
    buffer = io.StringIO()
    handlers = {handler for name in ("agentfy", "uvicorn", "uvicorn.error", "uvicorn.access", "")
                for handler in logging.getLogger(name or None).handlers if isinstance(handler, logging.StreamHandler)}
    assert len({id(h.formatter) for h in handlers}) == 1  # one handler, one format, for every logger
    for handler in handlers:
        handler.setStream(buffer)
    return buffer


@pytest.fixture(autouse=True)
def _restore() -> object:
    yield None
    logging.config.dictConfig(logging_config(LogSettings(level="warning")))


@pytest.mark.parametrize("name", ["agentfy.gateway", "uvicorn.error", "uvicorn.access"])
def test_json_lines_for_ours_and_uvicorns_records(name: str) -> None:
    stream = _configure(LogSettings(level="info", format="json"))
    with log_identity(request_id="r-1", tenant="acme", agent_key="support-bot"):
        logging.getLogger(name).info("hello %s", "there", extra={"status": 200, "color_message": "\x1b[1m"})
    logging.getLogger(name).debug("below the level")
    [line] = stream.getvalue().splitlines()
    record = json.loads(line)
    assert record["message"] == "hello there" and record["logger"] == name and record["level"] == "info"
    assert (record["request_id"], record["tenant"], record["agent_key"], record["status"]) == (
        "r-1", "acme", "support-bot", 200)
    assert "color_message" not in record


def test_the_console_format_keeps_every_field() -> None:
    stream = _configure(LogSettings(level="debug", format="console"))
    logging.getLogger("agentfy.events").warning("eventbus.dead_letter", extra={"event_id": "domain-event-x",
                                                                               "reason": "boom"})
    line = stream.getvalue().strip()
    assert "WARNING agentfy.events: eventbus.dead_letter" in line
    assert "event_id=domain-event-x" in line and "reason=boom" in line
