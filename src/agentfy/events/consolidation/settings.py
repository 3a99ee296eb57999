"""The knobs of the consolidation pipeline, in one frozen value shared by every worker: the
``consolidation`` section of the one settings object (:mod:`agentfy.settings`, ``AGENTFY_CONSOLIDATION_*``,
the settings file's ``[consolidation]`` table).

Why one object: the episodic, semantic, dreaming and dedup workers are built together by
:func:`agentfy.events.consolidation.handlers` and must agree on the dreaming debounce and the limits;
passing one value keeps them from drifting apart.  The bus settings they publish with are the bus's own
section, passed beside it (``handlers(settings=…, bus=…)``).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

#: The pipeline's own event type: "promote this agent's and user scope's summaries now" (see dreaming).
DREAMING_DUE: Final = "dreaming.due"

#: A clock returns the current time, timezone-aware, in UTC.  Injected so debounce tests need no sleeping.
Clock = Callable[[], datetime]


def utc_now() -> datetime:
    """The default :data:`Clock`."""
    return datetime.now(UTC)


class ConsolidationSettings(BaseModel):
    """How the pipeline behaves.

    * ``debounce_seconds`` — the dreaming worker waits until the newest unpromoted summary of an
      (agent, user scope) is at least this old before promoting, so a burst of sessions becomes one memory
      update; ``0`` promotes at once.
    * ``max_batch`` — …unless at least this many summaries are waiting: then it promotes immediately.
    * ``max_session_messages`` — at most this many messages of a session are loaded for the summariser
      (oldest first), so one enormous session cannot exhaust the worker.
    * ``dream_max_chars`` — a dream document keeps its newest sections within this size; older sections
      are dropped (they were promoted and are still in the episodic summaries).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    debounce_seconds: float = Field(default=600.0, ge=0)
    max_batch: int = Field(default=10, ge=1)
    max_session_messages: int = Field(default=10_000, ge=1)
    dream_max_chars: int = Field(default=200_000, ge=1)


DEFAULT_CONSOLIDATION_SETTINGS: Final = ConsolidationSettings()
