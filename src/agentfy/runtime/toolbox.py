"""The tools every agent has, by name, and running one call.

One table (:data:`TOOLS`): the model is told about exactly these, and a call to any other name is answered
with the list of names, never run.  :func:`run_tool` turns a :class:`~agentfy.runtime.tools.ToolError` into the
tool's answer (the model can correct itself), and so is a call whose arguments do not fit the tool's schema
(a wrong type is a message naming the argument and the expected type, not a crash); a refused hand-off tool
(``Tool.hands_off``) is also recorded by the runtime; any other exception is a bug and propagates.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from agentfy.runtime.model import ToolCall
from agentfy.runtime.tools import Tool, ToolEnv, ToolError, check_arguments
from agentfy.runtime.tools.conversations import SESSION_SEND, SESSIONS_LIST
from agentfy.runtime.tools.delegation import CANCEL_TASK, DELEGATE, SPAWN_SUBAGENT
from agentfy.runtime.tools.files import READ_FILE, WRITE_FILE
from agentfy.runtime.tools.memory import REMEMBER, SEARCH_KNOWLEDGE
from agentfy.runtime.tools.records import CREATE_CRON, PUBLISH_SKILL, SEARCH_MEMORY
from agentfy.runtime.tools.skills import READ_SKILL
from agentfy.runtime.tools.tasks import TASK_CLAIM, TASK_COMPLETE, TASK_CREATE, TASK_DISPATCH, TASK_FAIL, TASK_LIST
from agentfy.runtime.tools.vault import READ_VAULT, SEARCH_VAULT

TOOLS: Final = MappingProxyType({tool.spec.name: tool for tool in (
    READ_FILE, WRITE_FILE, CREATE_CRON, PUBLISH_SKILL, READ_SKILL, SEARCH_MEMORY, REMEMBER, SEARCH_KNOWLEDGE,
    SEARCH_VAULT, READ_VAULT, SPAWN_SUBAGENT, DELEGATE, CANCEL_TASK, SESSIONS_LIST, SESSION_SEND, TASK_CREATE,
    TASK_LIST, TASK_CLAIM, TASK_COMPLETE, TASK_FAIL, TASK_DISPATCH)})


async def run_tool(env: ToolEnv, call: ToolCall, tools: Mapping[str, Tool] = TOOLS) -> str:
    """The answer of one tool call: the tool's result, its :class:`ToolError` (arguments that do not fit the
    tool's schema included: the tool does not run), or "unknown tool".  ``tools``: the run's (the built-in ones
    and the agent's MCP tools, :mod:`agentfy.runtime.mcp`)."""
    tool = tools.get(call.name)
    if tool is None:
        return f"error: there is no tool {call.name[:100]!r}; the tools are {', '.join(sorted(tools))}"
    try:
        check_arguments(tool.spec, call.arguments)
        return await tool.run(env, call.arguments)
    except ToolError as error:
        if tool.hands_off:
            env.delegation.refused(env, call.name, str(error))
        return f"error: {error}"
