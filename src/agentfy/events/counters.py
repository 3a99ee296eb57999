"""Durable counts of what the bus reports, per UTC day: observer warnings and dead letters.

Why in the database: a gate such as "no ``eventbus.non_id_agent_id`` warning for 72 hours" must hold across
every process and restart, which a counter in one process's memory cannot show.  A count is written in the
transaction of what it counts (the publish that drew the warning, the update that dead-lettered the event),
so it is exact: a rolled-back publish is not counted, a committed dead letter always is.

Cost: one upsert per counted thing, and only then; the common publish draws no warning and writes nothing
here.  On PostgreSQL concurrent warned publishes of one day queue briefly on the day's row.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import Final

from agentfy.store.db import Database, Tx

#: Dead-lettered events (after their last attempt, at once for a deterministic error, or after the worker
#: stopped while holding them too often).
DEAD_LETTER: Final = "eventbus.dead_letter"

_ADD: Final = ("INSERT INTO event_bus_counters (day, name, total) VALUES (:day, :name, :n) "
               "ON CONFLICT (day, name) DO UPDATE SET total = event_bus_counters.total + excluded.total")
_SINCE: Final = "SELECT day, name, total FROM event_bus_counters WHERE day >= :since ORDER BY day, name"


def today() -> str:
    return datetime.now(UTC).date().isoformat()


def add(tx: Tx, name: str, n: int = 1) -> None:
    """Count ``n`` more ``name`` today, in ``tx`` (so the count commits or rolls back with its cause)."""
    tx.execute(_ADD, {"day": today(), "name": name, "n": n})


def daily(db: Database, days: int = 7) -> dict[str, dict[str, int]]:
    """``{day: {name: total}}`` for the last ``days`` UTC days (today included); days with nothing counted
    are absent."""
    since = (datetime.now(UTC).date() - timedelta(days=days - 1)).isoformat()
    found: dict[str, dict[str, int]] = defaultdict(dict)
    with db.transaction(write=False) as tx:
        for day, name, total in tx.all(_SINCE, {"since": since}):
            found[str(day)][str(name)] = int(total)
    return dict(found)
