"""The system prompt: the agent's two identities, each where it belongs, around a cache boundary.

Two identities, two fields that cannot be swapped by accident (two adjacent strings of a config are easy to
swap at a call site, and the swap would put the ID in front of the model and the key in the runtime):

* ``display_agent_key`` — the ``agent_key``, what the model and the user read ("You are @support-bot");
* ``runtime_agent_id`` — the agent's ID (``agent-calm-rivers-k8m4p2d7n9x3``), for runtime identification
  (tools, correlation); the model is never told it is its name.

Both are keyword-only and validated at construction: an ID given as the key is refused
(:class:`~agentfy.identity.InvalidAgentKeyError`, an ``agent_key`` may never look like an ID) and a key
given as the ID is refused (:class:`~agentfy.identity.InvalidIdError`).  ``SystemPromptConfig.for_agent``
builds both from one :class:`~agentfy.store.repos.agents.Agent` record, so the usual path has no choice to
get wrong.

The rendered prompt has two parts separated by the fixed line :data:`CACHE_BOUNDARY_MARKER`:

1. the **stable prefix** — identity by key, tenant slug, instructions.  It is byte-identical on every turn
   of an agent, so the LLM provider can cache it;
2. the **runtime section** — rendered fresh every turn: the agent ID, the time, the session.

Why the agent ID lives below the boundary: everything above the marker feeds the provider's prompt cache, and
everything below is per-turn.  A code path that built a config without the agent ID (a memory flush, say)
would do no harm *only* because the ID is rendered below the marker: a missing ID means an empty runtime
field, never a different prefix.  Were the ID above the marker, that omission would give the same agent two
prefixes (one per code path) and bust the cache on every switch.  Keeping the ID out of the prefix also keeps
the prefix equal for an agent re-created under the same key (new ID, same prompt) and keeps ID-shaped text out
of what the model reads as its identity. Nothing above the marker may depend on the ID; the tests check the
prefix holds no ID at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

from agentfy.identity import AgentId, AgentKey, parse_agent_key, parse_id
from agentfy.identity.keys import TenantSlug, parse_tenant_slug
from agentfy.store.repos.agents import Agent

#: The line between the cached prefix and the per-turn runtime section.  Never produced by rendering
#: anything else: instructions that contain it are refused.
CACHE_BOUNDARY_MARKER: Final = "<!-- agentfy:cache-boundary -->"


@dataclass(frozen=True, slots=True, kw_only=True)
class SystemPromptConfig:
    """What the system prompt is built from; validated at construction (see the module docstring)."""

    display_agent_key: AgentKey
    runtime_agent_id: AgentId
    tenant_slug: TenantSlug
    display_name: str = ""
    instructions: str = ""

    def __post_init__(self) -> None:
        parse_agent_key(self.display_agent_key, field="display_agent_key")
        parse_id(self.runtime_agent_id, "agent", field="runtime_agent_id")
        parse_tenant_slug(self.tenant_slug)
        _check_text(self.display_name, "display_name")
        _check_text(self.instructions, "instructions")

    @classmethod
    def for_agent(cls, agent: Agent, tenant_slug: str, *, instructions: str = "") -> SystemPromptConfig:
        """The config of a stored agent: its key for display, its ID for runtime, its display name."""
        return cls(display_agent_key=agent.agent_key, runtime_agent_id=agent.id,
                   tenant_slug=TenantSlug(tenant_slug), display_name=agent.display_name,
                   instructions=instructions)


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnContext:
    """Per-turn data, rendered below the boundary only.  ``now`` must be timezone-aware."""

    now: datetime
    session_key: str | None = None
    #: What the run recalled for this turn's message (memory of the SCOPE), rendered last; ``""``: nothing.
    recalled: str = ""

    def __post_init__(self) -> None:
        if self.now.tzinfo is None or self.now.utcoffset() is None:
            raise ValueError("TurnContext.now must be timezone-aware")
        _check_text(self.recalled, "recalled")
        if self.session_key is not None:
            _check_text(self.session_key, "session_key")
            if any(c in self.session_key for c in "\r\n"):
                raise ValueError("session_key must be a single line")


def _check_text(value: str, name: str) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {type(value).__name__}")
    if CACHE_BOUNDARY_MARKER in value:
        raise ValueError(f"{name} must not contain the cache boundary marker {CACHE_BOUNDARY_MARKER!r}")


def render_stable_prefix(config: SystemPromptConfig) -> str:
    """The cached part: a function of the key, the slug, the display name and the instructions only."""
    who = f"You are @{config.display_agent_key}"
    if config.display_name and config.display_name != config.display_agent_key:
        who += f" ({config.display_name})"
    lines = [f"{who}, an agent of the '{config.tenant_slug}' workspace."]
    if config.instructions:
        lines += ["", config.instructions.strip("\n")]
    return "\n".join(lines) + "\n"


def render_runtime_section(config: SystemPromptConfig, turn: TurnContext) -> str:
    """The per-turn part: the only place the agent ID is rendered."""
    lines = ["# Runtime", f"agent_id: {config.runtime_agent_id}",
             f"current_time: {turn.now.astimezone(UTC).isoformat(timespec='seconds')}"]
    if turn.session_key is not None:
        lines.append(f"session: {turn.session_key}")
    if turn.recalled:
        lines += ["", turn.recalled]
    return "\n".join(lines) + "\n"


def render_system_prompt(config: SystemPromptConfig, *, turn_context: TurnContext) -> str:
    """Stable prefix, then the :data:`CACHE_BOUNDARY_MARKER` line, then the runtime section."""
    return (render_stable_prefix(config) + CACHE_BOUNDARY_MARKER + "\n"
            + render_runtime_section(config, turn_context))


def split_system_prompt(prompt: str) -> tuple[str, str]:
    """``(stable prefix, runtime section)`` of a rendered prompt, e.g. to mark the prefix cacheable."""
    prefix, marker, runtime = prompt.partition(CACHE_BOUNDARY_MARKER + "\n")
    if not marker:
        raise ValueError("the prompt has no cache boundary marker line")
    return prefix, runtime
