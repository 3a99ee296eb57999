"""Where an MCP server record points, checked: the one rule for registration (the API refuses a record that
breaks it) and for runs (a record that breaks it now — a command since removed from the settings — is
skipped with a log line).

A record is ``name``, ``url`` and ``config``::

    url "https://tools.example/mcp"           Streamable HTTP (the default transport)
    url "https://tools.example/sse", config {"transport": "sse"}
    url "stdio:<command line>"                a local program, only when the line is exactly one of the
                                              platform's ``mcp.allowed_commands``
    config {"credential": "search-token",     the organization's stored credential, sent as a header:
            "header": "Authorization"}        ``Authorization: Bearer <secret>`` (the default header), any
                                              other header name gets the secret as is
    config {"timeout": 20}                    seconds one tool call may take (default ``mcp.call_timeout_seconds``)

Any other URL scheme, transport or config key is refused: an organization's API call can never make the host
run a program the platform did not list.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from agentfy.runtime.mcp.settings import TIMEOUT_MAX_SECONDS, McpSettings
from agentfy.runtime.providers import is_http_url
from agentfy.store.errors import InvalidInputError
from agentfy.store.repos import credentials

Transport = Literal["streamable-http", "sse", "stdio"]
STREAMABLE_HTTP: Final = "streamable-http"
SSE: Final = "sse"
STDIO: Final = "stdio"
HTTP_TRANSPORTS: Final = (STREAMABLE_HTTP, SSE)
STDIO_SCHEME: Final = "stdio:"
DEFAULT_HEADER: Final = "Authorization"
CONFIG_KEYS: Final = ("transport", "credential", "header", "timeout")
#: An HTTP header name (RFC 9110 token), at most 100 characters.
HEADER_NAME_PATTERN: Final = r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$"
_HEADER_NAME: Final = re.compile(HEADER_NAME_PATTERN)
#: The JSON schema of a record's ``config``: what :func:`parse_target` takes, stated for the API's document.
CONFIG_SCHEMA: Final = {
    "type": "object",
    "properties": {
        "transport": {"enum": list(HTTP_TRANSPORTS),
                      "description": f"{STREAMABLE_HTTP} (the default) or {SSE}; an http(s) URL's only"},
        "credential": {"type": "string", "pattern": credentials.NAME_PATTERN, "minLength": 1,
                       "maxLength": credentials.SLUG_NAME_MAX_LENGTH,
                       "description": "the organization's credential sent to the server (HTTP transports only)"},
        "header": {"type": "string", "pattern": HEADER_NAME_PATTERN,
                   "description": f"the header carrying the credential; {DEFAULT_HEADER} (the default) as "
                                  "'Bearer <secret>', any other as the secret itself"},
        "timeout": {"type": "number", "exclusiveMinimum": 0, "maximum": TIMEOUT_MAX_SECONDS,
                    "description": "seconds one tool call may take (default: the platform's setting)"},
    },
    "additionalProperties": False,
}


@dataclass(frozen=True, slots=True)
class ServerTarget:
    """How to reach one server: ``url`` for the HTTP transports, ``command`` (the argument vector of an allowed
    command line) for stdio; the credential to send in ``header``; the call timeout (``None``: the setting's)."""

    transport: Transport
    url: str | None = None
    command: tuple[str, ...] = ()
    credential: str | None = None
    header: str = DEFAULT_HEADER
    timeout: float | None = None

    def header_value(self, secret: str) -> str:
        """What ``header`` carries for ``secret``: ``Bearer <secret>`` in ``Authorization``, else the secret."""
        return f"Bearer {secret}" if self.header.lower() == DEFAULT_HEADER.lower() else secret


def _refuse(message: str, field: str, value: object, expected: str) -> InvalidInputError:
    shown = value if isinstance(value, str | int | float) and not isinstance(value, bool) else None
    return InvalidInputError(message, field=field, value=shown, expected=expected)


def parse_target(url: str, config: Mapping[str, Any] | None, settings: McpSettings) -> ServerTarget:
    """The target of a record with ``url`` and ``config``, or :class:`InvalidInputError` naming the field
    (``url``, ``config.<key>``), the value and what was expected (see the module docstring)."""
    config = config or {}
    unknown = sorted(set(config) - set(CONFIG_KEYS))
    if unknown:
        raise _refuse(f"config key {unknown[0]!r} is unknown; an MCP server's config takes {', '.join(CONFIG_KEYS)}",
                      f"config.{unknown[0]}", unknown[0], f"one of {', '.join(CONFIG_KEYS)}")
    transport = _transport(url, config)
    timeout = _timeout(config.get("timeout"))
    if transport == STDIO:
        if "credential" in config or "header" in config:
            key = "credential" if "credential" in config else "header"
            raise _refuse(f"config.{key} applies to the HTTP transports only, not to a stdio server",
                          f"config.{key}", config[key], "no credential or header for a stdio server")
        return ServerTarget(STDIO, command=_allowed_command(url, settings), timeout=timeout)
    return ServerTarget(transport, url=url, credential=_credential(config.get("credential")),
                        header=_header(config.get("header", DEFAULT_HEADER)), timeout=timeout)


def _transport(url: str, config: Mapping[str, Any]) -> Transport:
    named = config.get("transport")
    if url.startswith(STDIO_SCHEME):
        if named not in (None, STDIO):
            raise _refuse(f"config.transport {named!r:.100} does not fit a stdio: URL", "config.transport", named,
                          f"{STDIO!r} or nothing")
        return STDIO
    if not is_http_url(url):
        raise _refuse(f"url {url!r:.200} is not an http(s) URL with a host (or stdio:<an allowed command>)", "url",
                      url, "an http:// or https:// URL, e.g. https://tools.example/mcp")
    if named is None:
        return STREAMABLE_HTTP
    if named not in HTTP_TRANSPORTS:
        raise _refuse(f"config.transport {named!r:.100} is unknown for an http(s) URL; expected "
                      f"{' or '.join(HTTP_TRANSPORTS)}", "config.transport", named, " or ".join(HTTP_TRANSPORTS))
    return STREAMABLE_HTTP if named == STREAMABLE_HTTP else SSE


def _allowed_command(url: str, settings: McpSettings) -> tuple[str, ...]:
    line = url[len(STDIO_SCHEME):]
    if line not in settings.allowed_commands:
        raise _refuse(f"url {url!r:.200}: the command {line!r:.200} is not among this platform's allowed MCP "
                      "commands (setting mcp.allowed_commands)", "url", url,
                      "an http(s) URL, or stdio: followed by exactly one of the platform's mcp.allowed_commands")
    try:
        argv = tuple(shlex.split(line))
    except ValueError:
        argv = ()
    if not argv:
        raise _refuse(f"url {url!r:.200}: the allowed command {line!r:.200} is not a command line", "url", url,
                      "a command line such as 'mcp-server-time --local-timezone UTC'")
    return argv


def _credential(value: object) -> str | None:
    if value is None:
        return None
    problem = credentials.name_problem(value)
    if problem is not None:
        raise _refuse(f"config.credential {value!r:.100}: {problem}", "config.credential", value,
                      "the name of one of the organization's credentials (a lower-case slug)")
    assert isinstance(value, str)
    return value


def _header(value: object) -> str:
    if not isinstance(value, str) or _HEADER_NAME.fullmatch(value) is None:
        raise _refuse(f"config.header {value!r:.100} is not an HTTP header name", "config.header", value,
                      "a header name such as Authorization or X-Api-Key")
    return value


def _timeout(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= TIMEOUT_MAX_SECONDS:
        raise _refuse(f"config.timeout {value!r:.100} must be a number of seconds above 0 and at most "
                      f"{TIMEOUT_MAX_SECONDS:g}", "config.timeout", value, f"a number in (0, {TIMEOUT_MAX_SECONDS:g}]")
    return float(value)
