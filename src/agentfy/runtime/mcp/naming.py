"""The names the model is shown for MCP tools: ``mcp__<server name>__<tool name>``.

Model APIs take tool names of ``[a-zA-Z0-9_-]`` and at most 64 characters (OpenAI's rule; Anthropic's is the
same), while a server's name is any label and a tool's name any string.  So every other character becomes
``_``, and a name longer than 64 characters — or one that, so changed, collides with a name already given in
the run — is cut and ends in ``_`` and 8 hex digits of the SHA-256 of the server and tool names as they are:
stable across runs, distinct for distinct tools.  Built-in tools never start with ``mcp__``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Container
from typing import Final

PREFIX: Final = "mcp__"
SEPARATOR: Final = "__"
NAME_MAX_LENGTH: Final = 64
_OUTSIDE: Final = re.compile(r"[^a-zA-Z0-9_-]")
_DIGEST_LENGTH: Final = 8


def _clean(part: str) -> str:
    return _OUTSIDE.sub("_", part) or "_"


def model_tool_name(server: str, tool: str, *, taken: Container[str] = ()) -> str:
    """The model-facing name of ``tool`` of ``server`` (see the module docstring); ``taken``: the names already
    given in this run."""
    name = f"{PREFIX}{_clean(server)}{SEPARATOR}{_clean(tool)}"
    if len(name) <= NAME_MAX_LENGTH and name not in taken:
        return name
    digest = hashlib.sha256(f"{server}\x00{tool}".encode()).hexdigest()[:_DIGEST_LENGTH]
    return f"{name[:NAME_MAX_LENGTH - _DIGEST_LENGTH - 1]}_{digest}"
