"""The pure parts of the MCP client: tool names as the model APIs allow them, and a call's result as the
model's text."""

from __future__ import annotations

import re

from mcp_types import CallToolResult, ImageContent, TextContent

from agentfy.runtime.mcp.naming import NAME_MAX_LENGTH, model_tool_name
from agentfy.runtime.mcp.results import EMPTY, result_text

ALLOWED = re.compile(r"[a-zA-Z0-9_-]{1,64}")


def test_names_are_prefixed_with_the_server_and_keep_only_what_model_apis_allow() -> None:
    assert model_tool_name("weather", "forecast") == "mcp__weather__forecast"
    assert model_tool_name("my files", "read.file/v2") == "mcp__my_files__read_file_v2"
    assert model_tool_name("Ünïcode", "ok-tool") == "mcp___n_code__ok-tool"


def test_a_long_or_colliding_name_is_cut_and_made_distinct_by_a_stable_digest() -> None:
    long = model_tool_name("a-server-with-a-rather-long-name", "and-a-tool-whose-name-goes-on-and-on")
    assert len(long) == NAME_MAX_LENGTH and ALLOWED.fullmatch(long)
    assert long == model_tool_name("a-server-with-a-rather-long-name", "and-a-tool-whose-name-goes-on-and-on")
    assert long != model_tool_name("a-server-with-a-rather-long-name", "and-a-tool-whose-name-goes-on-and-oN")
    first = model_tool_name("s", "a.b")
    second = model_tool_name("s", "a_b", taken={first})
    assert first == "mcp__s__a_b" and second != first and ALLOWED.fullmatch(second)


def test_text_blocks_come_first_and_structured_content_only_when_it_adds_something() -> None:
    plain = CallToolResult(content=[TextContent(type="text", text="sunny")], structured_content={"result": "sunny"})
    assert result_text(plain) == "sunny"
    same = CallToolResult(content=[TextContent(type="text", text='{"a": 1}')], structured_content={"a": 1})
    assert result_text(same) == '{"a": 1}'
    more = CallToolResult(content=[TextContent(type="text", text="two cities"),
                                   ImageContent(type="image", data="aGk=", mime_type="image/png")],
                          structured_content={"cities": ["Oslo", "Rome"]})
    assert result_text(more) == ('two cities\n[image content, image/png]\n'
                                 'structured content: {"cities": ["Oslo", "Rome"]}')
    assert result_text(CallToolResult(content=[])) == EMPTY


def test_an_error_result_reads_as_an_error() -> None:
    failed = CallToolResult(content=[TextContent(type="text", text="no such city")], is_error=True)
    assert result_text(failed) == "error: no such city"
