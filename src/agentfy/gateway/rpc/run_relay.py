"""A run event between gateway processes: the body of a change-feed broadcast, and back.

The body carries what the receiving broadcaster needs to choose subscribers exactly as the publishing one
did — the tenant ID and the conversation's scope (``scope_user_id``) — beside the event itself; neither is
ever part of what a client receives (:meth:`~agentfy.runtime.events.AgentEvent.message` leaves them out).

A body must fit in one notification (:data:`~agentfy.store.changefeed.broadcasts.BODY_LIMIT_BYTES`): a
delta whose text is longer becomes several deltas of the same run, in order, whose texts join to the
original (split between characters, never inside one).  The JSON is ASCII (``\\uXXXX`` escapes), so its
size in bytes is its length whatever the text, and a lone surrogate the model produced survives the trip.
"""

from __future__ import annotations

import json
from typing import Any, Final

from agentfy.identity import AgentId, AgentKey, parse_id
from agentfy.identity.keys import TenantSlug
from agentfy.runtime.events import RUN_DELTA, RUN_EVENTS, AgentEvent
from agentfy.store.changefeed.broadcasts import BODY_LIMIT_BYTES

WIRE_VERSION: Final = 1
_SHORT_ESCAPES: Final = frozenset('"\\\n\r\t\b\f')


class RunEventFormatError(ValueError):
    """A broadcast body that is not a run event this version understands."""


def encode_run_event(tenant_id: str, event: AgentEvent, *, limit: int = BODY_LIMIT_BYTES) -> list[str]:
    """The bodies that carry ``event`` of ``tenant_id`` to other processes, each at most ``limit`` bytes: one,
    or for a long delta one per piece of its text.  :class:`ValueError` for an event that cannot fit."""
    whole = _encode(tenant_id, event, event.run)
    if len(whole) <= limit:
        return [whole]
    run = event.run or {}
    text = run.get("text")
    if event.name != RUN_DELTA or not text:
        raise ValueError(f"a {event.name} event of {len(whole)} bytes exceeds the {limit}-byte broadcast limit")
    room = limit - len(_encode(tenant_id, event, {**run, "text": ""}))
    if room < 12:  # the longest escape of one character (an astral one: two \uXXXX)
        raise ValueError(f"a {event.name} event leaves no room for its text within {limit} bytes")
    return [_encode(tenant_id, event, {**run, "text": piece}) for piece in split_text(text, room)]


def split_text(text: str, room: int) -> list[str]:
    """``text`` in pieces (joined: ``text``) whose JSON string escapes are each at most ``room`` bytes."""
    pieces: list[str] = []
    start, used = 0, 0
    for index, character in enumerate(text):
        cost = _escaped_length(character)
        if used + cost > room:
            pieces.append(text[start:index])
            start, used = index, 0
        used += cost
    pieces.append(text[start:])
    return pieces


def _escaped_length(character: str) -> int:
    """The length of ``character`` inside an ASCII JSON string (as :func:`json.dumps` writes it)."""
    code = ord(character)
    if character in _SHORT_ESCAPES:
        return 2
    if 0x20 <= code < 0x7F:
        return 1
    return 12 if code > 0xFFFF else 6


def _encode(tenant_id: str, event: AgentEvent, run: dict[str, str] | None) -> str:
    wire: dict[str, Any] = {"v": WIRE_VERSION, "t": tenant_id, "e": event.name, "i": event.agent_id,
                            "k": event.agent_key, "s": event.tenant_slug}
    if run is not None:
        wire["r"] = run
    if event.scope_user_id is not None:
        wire["u"] = event.scope_user_id
    return json.dumps(wire, separators=(",", ":"), ensure_ascii=True)


def decode_run_event(body: str) -> tuple[str, AgentEvent]:
    """The tenant ID and the run event a body carries, or :class:`RunEventFormatError`."""
    try:
        wire = json.loads(body)
    except ValueError as error:
        raise RunEventFormatError(f"not JSON: {body[:100]!r}") from error
    if not isinstance(wire, dict) or wire.get("v") != WIRE_VERSION:
        raise RunEventFormatError(f"not a version-{WIRE_VERSION} run event: {body[:100]!r}")
    name, run, scope = wire.get("e"), wire.get("r"), wire.get("u")
    if name not in RUN_EVENTS:
        raise RunEventFormatError(f"not a run event: {name!r}")
    texts = [value for field in ("t", "i", "k", "s") if isinstance(value := wire.get(field), str)]
    if len(texts) != 4 or (scope is not None and not isinstance(scope, str)):
        raise RunEventFormatError(f"a run event's IDs, key and slug are strings: {body[:100]!r}")
    if run is not None and not (isinstance(run, dict) and all(isinstance(v, str) for v in run.values())):
        raise RunEventFormatError(f"a run event's run is an object of strings: {body[:100]!r}")
    tenant_id, agent_id, agent_key, slug = texts
    try:
        parse_id(tenant_id, "org", field="tenant_id")
        event = AgentEvent(name, AgentId(agent_id), AgentKey(agent_key), TenantSlug(slug), run=run,
                           scope_user_id=scope)
    except ValueError as error:
        raise RunEventFormatError(f"an invalid run event: {error}") from error
    return tenant_id, event
