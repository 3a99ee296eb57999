"""An MCP tool's result as the text the model reads.

The text blocks, in order, one per line; any other block as a short note of its kind (an image or audio
block's MIME type, a resource's URI), since the runtime's tool results are text.  Structured content follows
as JSON (``structured content: {...}``) unless it only repeats the text: a text block holding the same JSON
value, or ``{"result": <the text>}`` (how the SDK's servers wrap a plain return value).  A result the server
marks as an error starts with ``error:``, like every tool error the model sees.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from mcp_types import CallToolResult

#: What a result says when the server sent neither content nor structured content.
EMPTY: Final = "(the tool returned nothing)"


def _block(block: Any) -> str:
    kind = getattr(block, "type", "content")
    if kind == "text":
        return str(getattr(block, "text", ""))
    if kind in ("image", "audio"):
        return f"[{kind} content, {getattr(block, 'mime_type', None) or 'unknown type'}]"
    resource = getattr(block, "resource", None)
    uri = getattr(resource, "uri", None) or getattr(block, "uri", None)
    return f"[{kind} {uri}]" if uri else f"[{kind} content]"


def _parsed(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _repeats(structured: Any, texts: list[str]) -> bool:
    joined = "\n".join(texts)
    return any(_parsed(text) == structured for text in texts) or (
        isinstance(structured, dict) and set(structured) == {"result"}
        and structured["result"] in (joined, _parsed(joined)))


def result_text(result: CallToolResult) -> str:
    """The model's text for ``result`` (see the module docstring)."""
    from mcp_types import TextContent  # noqa: PLC0415 (the SDK's types came with the connection)

    texts = [block.text for block in result.content if isinstance(block, TextContent)]
    parts = [_block(block) for block in result.content]
    structured = result.structured_content
    if structured is not None and not _repeats(structured, texts):
        parts.append("structured content: " + json.dumps(structured, ensure_ascii=False, default=str))
    text = "\n".join(parts) or EMPTY
    return f"error: {text}" if result.is_error else text
