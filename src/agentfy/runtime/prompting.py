"""What the model is shown for one turn: the system prompt and the history.

The system prompt comes from :mod:`agentfy.agents.prompt`: the agent's **key** above the cache boundary
(with its instructions and context files, which change only when the agent is reconfigured, so the cached
prefix holds across turns), its **ID** below it, with the time and the session.  The agent's configuration
provides ``instructions`` (text) and ``context_files`` (names of files in the agent's ``context/`` directory
of its workspace, read on every turn; missing ones are skipped).

The organization's skills are listed in the prefix too — each skill's name and a one-line description, in
name order, so the prefix stays byte-identical until a skill is published, changed or deleted — and the
model loads a skill's body with the ``read_skill`` tool when a task calls for it (bodies can be long; only
the list is paid for on every turn).  At most :data:`SKILLS_IN_PROMPT` are listed.

The history is the session's messages since the latest compaction, replayed as the chat-completions API
expects them, so on a later turn the model still knows what it did: user messages, assistant messages (with
their ``tool_calls``), each tool result (with its ``tool_call_id``) right after the assistant message that
called it, and compaction summaries (``system``).  The API refuses a tool message that follows no call and
an assistant call without all its results, so :func:`model_history` replays an exchange only whole: an
assistant message whose calls are not all answered right after it is replayed as its text alone (or not at
all when it has none), and a tool message that answers no call just before it — an orphan, or a row stored
as ``name(args) -> result`` text before tool use was stored as structures — is left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from agentfy.agents.prompt import CACHE_BOUNDARY_MARKER, SystemPromptConfig, TurnContext, render_system_prompt
from agentfy.agents.workspace import InvalidSegmentError, WorkspaceEscapeError, workspace_path
from agentfy.runtime.model import ChatMessage, ToolCall
from agentfy.store.repos.agents import Agent
from agentfy.store.repos.sessions import SessionMessage
from agentfy.store.repos.skills import Skill

CONTEXT_DIRECTORY: Final = "context"
CONTEXT_FILE_MAX_BYTES: Final = 100_000
#: Skills named in the prompt; an organization with more lists the first by name (``read_skill`` reads any).
SKILLS_IN_PROMPT: Final = 100
#: The longest description a skill shows in the prompt (longer ones are cut at a word, with an ellipsis).
SKILL_DESCRIPTION_MAX_LENGTH: Final = 200


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def context_files(agent: Agent, workspace_root: Path, tenant_slug: str) -> list[tuple[str, str]]:
    """``(name, text)`` of each configured context file that exists (the marker line removed: it may only
    separate the prefix from the runtime section)."""
    names = agent.config.get("context_files") if isinstance(agent.config, dict) else None
    found: list[tuple[str, str]] = []
    for name in names if isinstance(names, list) else ():
        if not isinstance(name, str):
            continue
        try:
            path = workspace_path(workspace_root, tenant_slug, agent.agent_key, CONTEXT_DIRECTORY, name)
            data = path.read_bytes()[:CONTEXT_FILE_MAX_BYTES] if path.is_file() and not path.is_symlink() else None
        except (InvalidSegmentError, WorkspaceEscapeError, OSError):
            data = None
        if data is not None:
            found.append((name, data.decode("utf-8", "replace").replace(CACHE_BOUNDARY_MARKER, "")))
    return found


def skill_description(content: str) -> str:
    """A skill's one-line description: the ``description:`` line of a leading front-matter block (``---``
    lines, as in a ``SKILL.md``), else its first line with text (a heading's ``#`` dropped), at most
    :data:`SKILL_DESCRIPTION_MAX_LENGTH` characters on one line."""
    lines = content.replace(CACHE_BOUNDARY_MARKER, "").splitlines()
    found = ""
    if lines and lines[0].strip() == "---":
        for number, line in enumerate(lines[1:], start=1):
            if line.strip() == "---":
                lines = lines[number + 1:]
                break
            key, _, value = line.partition(":")
            if key.strip().lower() == "description" and value.strip():
                found = value.strip().strip("\"'")
    if not found:
        found = next((line.strip().lstrip("#").strip() for line in lines if line.strip().lstrip("#").strip()), "")
    found = " ".join(found.split())
    if len(found) > SKILL_DESCRIPTION_MAX_LENGTH:
        found = found[:SKILL_DESCRIPTION_MAX_LENGTH - 1].rsplit(" ", 1)[0] + "…"
    return found


def skills_section(skills: Sequence[Skill]) -> str:
    """The prompt's list of skills (empty when there are none), in the order given (by name)."""
    if not skills:
        return ""
    listed = [f"- {skill.name}: {skill_description(skill.content) or '(no description)'}" for skill in skills]
    return ("## Skills\nThe organization's skills; when a task calls for one, load its instructions with the "
            "read_skill tool before you act.\n" + "\n".join(listed))


def system_prompt(agent: Agent, tenant_slug: str, workspace_root: Path, session_key: str, *,
                  skills: Sequence[Skill] = (), recalled: str = "", now: datetime | None = None) -> str:
    """The turn's system prompt (key, instructions, context files and skills above the boundary; ID, time,
    session and what was recalled for the message below: :mod:`agentfy.runtime.recall`)."""
    parts = [_text(agent.config.get("instructions")).replace(CACHE_BOUNDARY_MARKER, "")]
    parts += [f"## {name}\n{text}" for name, text in context_files(agent, workspace_root, tenant_slug)]
    parts.append(skills_section(skills))
    config = SystemPromptConfig.for_agent(agent, tenant_slug, instructions="\n\n".join(p for p in parts if p))
    turn = TurnContext(now=now or datetime.now(UTC), session_key=session_key, recalled=recalled)
    return render_system_prompt(config, turn_context=turn)


def model_history(messages: Sequence[SessionMessage]) -> list[ChatMessage]:
    """The stored messages as the model sees them: only whole tool exchanges (see the module docstring)."""
    shown: list[ChatMessage] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        if message.role == "user":
            shown.append(ChatMessage("user", message.content))
        elif message.role == "system":
            shown.append(ChatMessage("system", message.content))
        elif message.role == "assistant":
            results = _results_after(messages, index)
            index += len(results)
            shown.extend(_exchange(message, results))
        # a tool message here answers no call just before it: left out
    return shown


def _results_after(messages: Sequence[SessionMessage], start: int) -> list[SessionMessage]:
    """The tool messages right after ``start`` (the results of the assistant message before it)."""
    end = start
    while end < len(messages) and messages[end].role == "tool":
        end += 1
    return list(messages[start:end])


def _exchange(assistant: SessionMessage, results: Sequence[SessionMessage]) -> list[ChatMessage]:
    """The assistant message and its results, each call answered once and in the calls' order; without every
    result, the message's text alone (no message when it has none and did call tools)."""
    by_id: dict[str, SessionMessage] = {}
    for result in results:
        if result.tool_call_id is not None:
            by_id.setdefault(result.tool_call_id, result)
    calls = assistant.tool_calls
    if calls and all(call.id in by_id for call in calls):
        return [ChatMessage("assistant", assistant.content,
                            tuple(ToolCall(call.id, call.name, call.arguments) for call in calls)),
                *(ChatMessage("tool", by_id[call.id].content, tool_call_id=call.id) for call in calls)]
    return [ChatMessage("assistant", assistant.content)] if assistant.content or not calls else []
