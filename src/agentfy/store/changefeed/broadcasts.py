"""Broadcasts: messages for every other process on the database that are not changes (a run's events).

A change (:mod:`.changes`) is transactional and stales caches; a broadcast is neither.  It is sent at once,
outside any transaction, and is only handed to the ``on_broadcast`` handlers of the *other* processes: the
sending process has already delivered it itself (that is why the sender need not wait for the database).
The store does not read a broadcast's body: its users give it a string and get the same string back.

On PostgreSQL a broadcast is a notification on :data:`CHANNEL`, a channel of its own (the change feed's
listener flushes caches on a change it cannot read; a broadcast must never do that), heard by the same
listening connection as the changes — still one listening connection per process.  It is sent by the
process's :class:`~agentfy.store.changefeed.publisher.Publisher` (a thread with a connection of its own), so
broadcasting never waits for the database.  Every payload is framed as ``{origin}:{sequence}:{body}``: the
origin (the sending feed's random token) lets a listener skip its own process's broadcasts, and the sequence
keeps two equal bodies sent in one statement distinct (PostgreSQL folds identical notifications of one
transaction into one).

Limits: a body is at most :data:`BODY_LIMIT_BYTES` (PostgreSQL's 8000-byte payload limit, less the frame);
callers split longer messages.  Between processes broadcasts are best-effort: see the publisher for what
is dropped.  On SQLite there is one gateway process and nothing is sent.
"""

from __future__ import annotations

from typing import Final, NamedTuple

from agentfy.store.changefeed.changes import PAYLOAD_LIMIT_BYTES

#: The notification channel of broadcasts (every listening connection listens on it too).
CHANNEL: Final = "agentfy_run_events"
#: ``{origin}:{sequence}:`` takes at most 16 + 1 + 20 + 1 bytes; a body gets the rest of the payload.
BODY_LIMIT_BYTES: Final = PAYLOAD_LIMIT_BYTES - 40
_ORIGIN_CHARACTERS: Final = frozenset("0123456789abcdef")


class BroadcastFormatError(ValueError):
    """A payload on the broadcast channel that is not ``{origin}:{sequence}:{body}``."""


class Broadcast(NamedTuple):
    """One received broadcast: the sending feed's origin token and the body it sent."""

    origin: str
    body: str


def frame(origin: str, sequence: int, body: str) -> str:
    """The notification payload of ``body`` sent by the feed ``origin`` as its ``sequence``-th broadcast."""
    return f"{origin}:{sequence}:{body}"


def unframe(payload: str) -> Broadcast:
    """The broadcast a payload carries, or :class:`BroadcastFormatError`."""
    origin, _, rest = payload.partition(":")
    sequence, colon, body = rest.partition(":")
    if (not colon or len(origin) != 16 or not _ORIGIN_CHARACTERS.issuperset(origin)
            or not sequence.isascii() or not sequence.isdigit()):
        raise BroadcastFormatError(f"not a broadcast: {payload[:100]!r}")
    return Broadcast(origin, body)


def check_body(body: str) -> None:
    """:class:`ValueError` unless ``body`` fits in one notification."""
    size = len(body.encode("utf-8", "surrogatepass"))
    if size > BODY_LIMIT_BYTES:
        raise ValueError(f"a broadcast of {size} bytes exceeds the {BODY_LIMIT_BYTES}-byte limit")
