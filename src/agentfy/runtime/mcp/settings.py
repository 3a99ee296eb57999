"""The ``mcp`` section of the settings (:mod:`agentfy.settings`): how this process reaches MCP servers.

* ``allowed_commands`` — the command lines a stdio MCP server may be started with, exactly as written here
  (split like a shell would, never run through one).  Empty by default: then no organization can make this
  host start a program.  An organization registers ``stdio:<one of these lines>``; nothing else it sends
  (arguments, environment) reaches the command.
* ``connect_timeout_seconds`` — connecting to a server and listing its tools, per server and run; a server
  slower than this is unavailable for the run.
* ``call_timeout_seconds`` — one tool call, unless the server's own ``config.timeout`` says otherwise; a call
  slower than this is answered to the model as an error.
"""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel, ConfigDict, Field

DEFAULT_CONNECT_TIMEOUT_SECONDS: Final = 10.0
DEFAULT_CALL_TIMEOUT_SECONDS: Final = 60.0
#: The longest timeout a setting or a server's ``config.timeout`` may ask for (seconds).
TIMEOUT_MAX_SECONDS: Final = 600.0


class McpSettings(BaseModel):
    """How runs reach their agents' MCP servers (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    allowed_commands: tuple[str, ...] = ()
    connect_timeout_seconds: float = Field(default=DEFAULT_CONNECT_TIMEOUT_SECONDS, gt=0, le=TIMEOUT_MAX_SECONDS)
    call_timeout_seconds: float = Field(default=DEFAULT_CALL_TIMEOUT_SECONDS, gt=0, le=TIMEOUT_MAX_SECONDS)


DEFAULT_MCP_SETTINGS: Final = McpSettings()
