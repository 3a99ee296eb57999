"""The knobs of the consolidation pipeline, in one frozen value shared by every worker.

Why one object: the episodic, semantic, dreaming and dedup workers are built together by
:func:`agentfy.events.consolidation.handlers` and must agree on the bus settings they publish with (strict ID
mode) and on the dreaming debounce; passing one value keeps them from drifting apart.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

from agentfy.events.settings import BusSettings

#: The pipeline's own event type: "promote this agent's and user scope's summaries now" (see dreaming).
DREAMING_DUE: Final = "dreaming.due"

#: A clock returns the current time, timezone-aware, in UTC.  Injected so debounce tests need no sleeping.
Clock = Callable[[], datetime]


def utc_now() -> datetime:
    """The default :data:`Clock`."""
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class ConsolidationSettings:
    """How the pipeline behaves.

    * ``debounce_seconds`` — the dreaming worker waits until the newest unpromoted summary of an
      (agent, user scope) is at least this old before promoting, so a burst of sessions becomes one memory
      update; ``0`` promotes at once.
    * ``max_batch`` — …unless at least this many summaries are waiting: then it promotes immediately.
    * ``max_session_messages`` — at most this many messages of a session are loaded for the summariser
      (oldest first), so one enormous session cannot exhaust the worker.
    * ``dream_max_chars`` — a dream document keeps its newest sections within this size; older sections
      are dropped (they were promoted and are still in the episodic summaries).
    * ``bus`` — the settings events are published with (``strict_ids`` refuses a non-ID agent at publish);
      ``None``: the process's bus settings (from the environment).
    """

    debounce_seconds: float = 600.0
    max_batch: int = 10
    max_session_messages: int = 10_000
    dream_max_chars: int = 200_000
    bus: BusSettings | None = None

    def __post_init__(self) -> None:
        if self.debounce_seconds < 0:
            raise ValueError(f"debounce_seconds {self.debounce_seconds!r} must be >= 0")
        if self.max_batch < 1:
            raise ValueError(f"max_batch {self.max_batch!r} must be >= 1")
        if self.max_session_messages < 1:
            raise ValueError(f"max_session_messages {self.max_session_messages!r} must be >= 1")
        if self.dream_max_chars < 1:
            raise ValueError(f"dream_max_chars {self.dream_max_chars!r} must be >= 1")


DEFAULT_CONSOLIDATION_SETTINGS: Final = ConsolidationSettings()
