"""The agent's tools: what a model may ask the runtime to do, each behind the one permission policy.

Every tool runs in the run's request context (:func:`agentfy.identity.context.current`): the tenant, the
agent's ID and key, the SCOPE (``user_id``: whose files, memory, cron jobs) and the ACTOR (``sender_id``: who
is asking).  A tool that changes something asks :mod:`agentfy.permissions.policy` first, with that
context, so in a group chat the *sender's* grant decides, never the group's; a denial is the tool's answer
(the reason and how to get access), and nothing is written.

A tool's answer is text for the model.  A mistake of the caller (a bad path, a missing argument, a value of
the wrong type) is a :class:`ToolError` whose message names the value and what was expected; it becomes the
answer too, so the model can correct itself.  Each tool declares its arguments as a JSON schema
(:func:`parameters`), which the model is shown and every call is checked against (:func:`check_arguments`)
before the tool runs, so a tool receives values of the declared types.  Any other exception is a bug and ends
the run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol

from agentfy.identity.context import RequestContext
from agentfy.permissions.decision import Decision
from agentfy.runtime.embeddings import QueryEmbedder
from agentfy.runtime.model import ToolSpec
from agentfy.store.db import Database
from agentfy.store.repos.agents import Agent
from agentfy.store.repos.sessions import Session
from agentfy.store.repos.tasks import TeamTask


class ToolError(ValueError):
    """The model called a tool wrongly; the message (value and expectation) is returned to it."""


class Delegation(Protocol):
    """What the runtime offers the subagent and delegate tools (the runtime schedules the work)."""

    def spawn_subagent(self, env: ToolEnv, task: str) -> str: ...

    def delegate(self, env: ToolEnv, target: Agent, task: str) -> str: ...

    def cancel(self, env: ToolEnv, task_id: str) -> bool: ...

    def send_to_session(self, env: ToolEnv, session: Session, text: str) -> None: ...

    async def dispatch_teammate(self, origin: RequestContext, task_id: str, teammate: str | None, *,
                                env: ToolEnv | None = None) -> TeamTask: ...

    def refused(self, env: ToolEnv, tool: str, reason: str) -> None:
        """A hand-off tool refused the call (the model is told why): recorded for the tenant and its admins."""


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
    #: Hand-offs from a person's message to this run (0: the person's own message; a subagent's run: 1, …).
    depth: int = 0
    #: Embeds a memory search's query with the agent's embeddings model (``None``: text search only).
    embedder: QueryEmbedder | None = None


ToolFunction = Callable[[ToolEnv, Mapping[str, Any]], Awaitable[str]]


@dataclass(frozen=True, slots=True)
class Tool:
    """A tool: what the model is told (``spec``, whose ``parameters`` schema the toolbox checks every call
    against) and the function that runs it, with arguments of the declared types."""

    spec: ToolSpec
    run: ToolFunction
    #: A tool that hands work to another run: its refusals are recorded (``Delegation.refused``), not only
    #: told to the model.
    hands_off: bool = False


# -- schemas: the few JSON-schema shapes the tools use, and the check of a call against them ------------------

def string(description: str, *, max_length: int = 10_000, allow_empty: bool = False) -> dict[str, Any]:
    """A string parameter of at most ``max_length`` characters (non-empty unless ``allow_empty``)."""
    return {"type": "string", "description": description, "minLength": 0 if allow_empty else 1,
            "maxLength": max_length}


def integer(description: str, *, minimum: int, maximum: int) -> dict[str, Any]:
    """An integer parameter between ``minimum`` and ``maximum`` (inclusive)."""
    return {"type": "integer", "description": description, "minimum": minimum, "maximum": maximum}


def parameters(properties: Mapping[str, Mapping[str, Any]], required: tuple[str, ...] = ()) -> dict[str, Any]:
    """The JSON schema of a tool's arguments: an object of ``properties``, ``required`` among them, nothing
    else allowed (a misspelt argument must not be silently ignored)."""
    unknown = set(required) - set(properties)
    if unknown:
        raise ValueError(f"required parameters {sorted(unknown)} are not among the properties {sorted(properties)}")
    return {"type": "object", "properties": {name: dict(schema) for name, schema in properties.items()},
            "required": list(required), "additionalProperties": False}


_TYPES: Final[dict[str, tuple[str, Callable[[Any], bool]]]] = {
    "string": ("a string", lambda v: isinstance(v, str)),
    "integer": ("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    "number": ("a number", lambda v: isinstance(v, int | float) and not isinstance(v, bool)),
    "boolean": ("true or false", lambda v: isinstance(v, bool)),
    "array": ("a list", lambda v: isinstance(v, list)),
    "object": ("an object", lambda v: isinstance(v, dict)),
}


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 100 else text[:100] + "…"


def _check(tool: str, name: str, schema: object, value: Any) -> None:
    if not isinstance(schema, Mapping):  # a boolean schema (an MCP server's): nothing to check here
        return
    kind = schema.get("type")
    if isinstance(kind, str) and kind in _TYPES:
        expected, fits = _TYPES[kind]
        if not fits(value):
            raise ToolError(f"{tool}: argument {name!r} must be {expected}, got {_shown(value)}")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            raise ToolError(f"{tool}: argument {name!r} must be a non-empty string, got {_shown(value)}")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            raise ToolError(f"{tool}: argument {name!r} is {len(value)} characters long; at most "
                            f"{schema['maxLength']} are allowed")
    if kind in ("integer", "number"):
        low, high = schema.get("minimum"), schema.get("maximum")
        if (low is not None and value < low) or (high is not None and value > high):
            raise ToolError(f"{tool}: argument {name!r} must be between {low} and {high}, got {_shown(value)}")
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            _check(tool, f"{name}[{index}]", schema["items"], item)


def check_arguments(spec: ToolSpec, arguments: Mapping[str, Any]) -> None:
    """:class:`ToolError` unless ``arguments`` fit ``spec.parameters``: no undeclared argument (where the schema
    says ``additionalProperties: false``, as every built-in tool's does), every required one present, each of
    its declared type and within its bounds.  The message names the tool, the argument, the value and what was
    expected, so the model can correct its call."""
    declared = spec.parameters.get("properties", {})
    extra = sorted(set(arguments) - set(declared))
    if extra and spec.parameters.get("additionalProperties", True) is False:
        raise ToolError(f"{spec.name} takes {', '.join(declared) or 'no arguments'}; unknown argument {extra[0]!r}")
    for name in spec.parameters.get("required", ()):
        if name not in arguments:
            raise ToolError(f"{spec.name} needs the argument {name!r} (got {', '.join(sorted(arguments)) or 'none'})")
    for name, value in arguments.items():
        _check(spec.name, name, declared.get(name), value)


def text(arguments: Mapping[str, Any], name: str) -> str:
    """A string argument that :func:`check_arguments` let through."""
    value = arguments[name]
    assert isinstance(value, str), f"{name} was not checked"
    return value


def whole(arguments: Mapping[str, Any], name: str, default: int) -> int:
    """An optional integer argument that :func:`check_arguments` let through, else ``default``."""
    value = arguments.get(name, default)
    assert isinstance(value, int), f"{name} was not checked"
    return value


def refusal(decision: Decision) -> str:
    """A policy denial as the tool's answer: the reason, then how to get access."""
    text = f"denied ({decision.code.value}): {decision.reason}."
    return f"{text} {decision.how_to_get_access}" if decision.how_to_get_access else text
