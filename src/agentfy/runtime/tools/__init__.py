"""The agent's tools: what a model may ask the runtime to do, each behind the one permission policy.

Every tool runs in the run's request context (:func:`agentfy.identity.context.current`): the tenant, the
agent's ID and key, the SCOPE (``user_id``: whose files, memory, cron jobs) and the ACTOR (``sender_id``: who
is asking).  A tool that changes something asks :mod:`agentfy.permissions.policy` first, with that
context, so in a group chat the *sender's* grant decides, never the group's; a denial is the tool's answer
(the reason and how to get access), and nothing is written.

A tool's answer is text for the model.  A mistake of the caller (a bad path, a missing argument) is a
:class:`ToolError` whose message names the value and what was expected; it becomes the answer too, so the
model can correct itself.  Any other exception is a bug and ends the run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from agentfy.identity.context import RequestContext
from agentfy.permissions.decision import Decision
from agentfy.runtime.model import ToolSpec
from agentfy.store.db import Database
from agentfy.store.repos.agents import Agent


class ToolError(ValueError):
    """The model called a tool wrongly; the message (value and expectation) is returned to it."""


class Delegation(Protocol):
    """What the runtime offers the subagent and delegate tools (the runtime schedules the work)."""

    def spawn_subagent(self, env: ToolEnv, task: str) -> str: ...

    def delegate(self, env: ToolEnv, target: Agent, task: str) -> str: ...


@dataclass(frozen=True, slots=True)
class ToolEnv:
    """What a tool runs with, besides the request context: the run's agent and tenant slug, the store, the
    workspace root, where the run came from (to announce results back), and the runtime's delegation."""

    db: Database
    agent: Agent
    tenant_slug: str
    workspace_root: Path
    context: RequestContext
    channel: str
    conversation: str
    delegation: Delegation


ToolFunction = Callable[[ToolEnv, Mapping[str, str]], Awaitable[str]]


@dataclass(frozen=True, slots=True)
class Tool:
    spec: ToolSpec
    run: ToolFunction


def argument(arguments: Mapping[str, str], tool: str, name: str, *, max_length: int = 10_000,
             allow_empty: bool = False) -> str:
    """A required string argument, or :class:`ToolError` naming the tool, the argument and the limit."""
    value = arguments.get(name)
    if value is None:
        raise ToolError(f"{tool} needs the argument {name!r} (got {', '.join(sorted(arguments)) or 'none'})")
    if not isinstance(value, str) or (not value and not allow_empty):
        raise ToolError(f"{tool}: argument {name!r} must be a non-empty string, got {value!r}")
    if len(value) > max_length:
        raise ToolError(f"{tool}: argument {name!r} is {len(value)} characters long; at most {max_length} are "
                        "allowed")
    return value


def refusal(decision: Decision) -> str:
    """A policy denial as the tool's answer: the reason, then how to get access."""
    text = f"denied ({decision.code.value}): {decision.reason}."
    return f"{text} {decision.how_to_get_access}" if decision.how_to_get_access else text


def unexpected(arguments: Mapping[str, str], tool: str, allowed: tuple[str, ...]) -> None:
    """:class:`ToolError` for an argument the tool does not take (a typo must not be silently ignored)."""
    extra = sorted(set(arguments) - set(allowed))
    if extra:
        raise ToolError(f"{tool} takes {', '.join(allowed) or 'no arguments'}; unknown argument {extra[0]!r}")
