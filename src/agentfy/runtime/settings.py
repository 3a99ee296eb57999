"""The runtime's settings: the ``runtime`` section of the one settings object (:mod:`agentfy.settings`).

Why one object: the gateway's runtime, ``agentfy chat`` and ``agentfy agents model check`` must try a model
the same way (how many attempts, how long each may take), or a check would pass that a run then fails.  The
runtime never reads the process's configuration itself: whoever builds it passes this section down (a
runtime built without one uses the defaults below).  A bad value fails when the settings are built, naming
the field and the value (``AGENTFY_RUNTIME_<FIELD>``, the settings file's ``[runtime]`` table).

* ``max_tool_rounds`` — model calls that may ask for tools in one run; then the run ends with what it has.
* ``flush_ratio`` — the share of the context window at which the memory flush runs.
* ``text_max_length`` — the longest message text a run takes.
* ``model_attempts`` … ``model_retry_after_max_seconds`` — how one model call is tried
  (:class:`~agentfy.runtime.call_policy.CallPolicy`, whose defaults these are).
* ``max_delegation_depth`` — hand-offs (subagent or delegate) from a person's message to the run doing the
  work: a run at this depth may not hand off again.  Bounds a model that keeps delegating to itself.
* ``max_delegations_per_agent`` — hand-offs of one agent running at the same time in this process; one more
  is refused with the reason (the model is told, and can wait for a result).
* ``recall_tokens`` — how much of the SCOPE's memory the run may put below the cache boundary for a message
  (:mod:`agentfy.runtime.recall`); 0: none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from agentfy.runtime.call_policy import CallPolicy

#: The defaults of a model call (:class:`~agentfy.runtime.call_policy.CallPolicy` takes them from here).
DEFAULT_MODEL_ATTEMPTS: Final = 3
DEFAULT_MODEL_TIMEOUT_SECONDS: Final = 60.0
DEFAULT_MODEL_BACKOFF_SECONDS: Final = 0.5
DEFAULT_MODEL_BACKOFF_MAX_SECONDS: Final = 8.0
DEFAULT_MODEL_RETRY_AFTER_MAX_SECONDS: Final = 60.0
#: What the run may recall from memory into a turn's prompt, in tokens (four characters each).
DEFAULT_RECALL_TOKENS: Final = 600
#: The memory flush runs when the prompt reaches this share of the context window.
DEFAULT_FLUSH_RATIO: Final = 0.75


class RuntimeSettings(BaseModel):
    """How runs use models, tools and hand-offs (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_tool_rounds: int = Field(default=8, ge=0, le=100)
    flush_ratio: float = Field(default=DEFAULT_FLUSH_RATIO, gt=0, le=1)
    text_max_length: int = Field(default=100_000, ge=1, le=1_000_000)
    model_attempts: int = Field(default=DEFAULT_MODEL_ATTEMPTS, ge=1, le=20)
    model_timeout_seconds: float = Field(default=DEFAULT_MODEL_TIMEOUT_SECONDS, gt=0, le=3600)
    model_backoff_seconds: float = Field(default=DEFAULT_MODEL_BACKOFF_SECONDS, ge=0, le=600)
    model_backoff_max_seconds: float = Field(default=DEFAULT_MODEL_BACKOFF_MAX_SECONDS, ge=0, le=3600)
    model_retry_after_max_seconds: float = Field(default=DEFAULT_MODEL_RETRY_AFTER_MAX_SECONDS, ge=0, le=3600)
    max_delegation_depth: int = Field(default=3, ge=0, le=20)
    max_delegations_per_agent: int = Field(default=8, ge=1, le=1000)
    recall_tokens: int = Field(default=DEFAULT_RECALL_TOKENS, ge=0, le=100_000)

    def call_policy(self) -> CallPolicy:
        """The model call policy these settings describe (every provider of the process gets it)."""
        # Imported here: the settings are read by every command, the SDK only by those that call a model.
        from agentfy.runtime.call_policy import CallPolicy  # noqa: PLC0415

        return CallPolicy(attempts=self.model_attempts, timeout_seconds=self.model_timeout_seconds,
                          backoff_seconds=self.model_backoff_seconds,
                          backoff_max_seconds=self.model_backoff_max_seconds,
                          retry_after_max_seconds=self.model_retry_after_max_seconds)


DEFAULT_RUNTIME_SETTINGS: Final = RuntimeSettings()
