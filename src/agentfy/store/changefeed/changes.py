"""What the change feed carries: one :class:`Change` per committed change that can stale a cache.

A change names *what* changed by its IDs (and, for agents, the ``agent_key`` it has and had), never the data
itself and never a secret: a process that needs the data reads it from the database.  Kinds and operations:

=============  =====================================  ==============================================
kind           operations                             meaning for a cache
=============  =====================================  ==============================================
``agent``      created, updated, renamed, archived,   drop ``{tenant}:{key}``, ``{tenant}:{previous key}``
               deleted                                and the agent's ID; archived/deleted: its run state
``org``        updated, deleted                       deleted: drop everything of the tenant
``team``       created, updated, deleted              drop what is cached of the team (its keys too)
``api_key``    revoked, narrowed                      drop the key's principal (narrowed: its role was lowered)
``team_key``   revoked                                drop the team key's principal
``member``     added, removed, role_changed           drop principals acting as that user in the tenant
``epoch``      bumped                                 every signed context is void
``settings``   updated                                drop the named platform setting
``feed``       marker                                 nothing: a WebSocket subscription's starting point
                                                      in the feed's order (``id`` is its random token;
                                                      the tenant, when set, is the subscriber's: the other
                                                      processes broadcast that tenant's run events)
=============  =====================================  ==============================================

The wire format is compact JSON with ``"v": 1``; PostgreSQL limits a notification payload to 8000 bytes, so
:meth:`Change.encode` refuses anything longer (IDs are at most 80 characters, so a change is a few hundred).
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring_ascii
from typing import Final, NamedTuple

WIRE_VERSION: Final = 1
#: The notification channel every agentfy process listens on.
CHANNEL: Final = "agentfy_changes"
#: PostgreSQL's limit on a ``pg_notify`` payload is 8000 bytes (the default block size); stay below it.
PAYLOAD_LIMIT_BYTES: Final = 7999
#: Sends one notification per payload of a text array on a channel, in the array's order, in one statement.
NOTIFY_SQL: Final = "SELECT pg_notify(%s, payload) FROM unnest(%s::text[]) AS payload"

KINDS: Final[dict[str, frozenset[str]]] = {
    "agent": frozenset({"created", "updated", "renamed", "archived", "deleted"}),
    "org": frozenset({"updated", "deleted"}),
    "team": frozenset({"created", "updated", "deleted"}),
    "api_key": frozenset({"revoked", "narrowed"}),
    "team_key": frozenset({"revoked"}),
    "member": frozenset({"added", "removed", "role_changed"}),
    "epoch": frozenset({"bumped"}),
    "settings": frozenset({"updated"}),
    "feed": frozenset({"marker"}),
}


_VERSION: Final = str(WIRE_VERSION)
#: The most characters one character of an ID or key can take in the payload (``\\uXXXX`` twice: a character
#: outside the Basic Multilingual Plane as a surrogate pair), and the most the rest of a payload can: the fixed
#: names and punctuation, the longest kind and operation, the time.
_MAX_ESCAPED_CHARS: Final = 12
_MAX_FIXED_CHARS: Final = 200


class ChangeFormatError(ValueError):
    """A payload that is not a change this version understands (the listener then flushes its caches)."""


class Change(NamedTuple):
    """One committed change: ``kind`` and ``op`` (see the module table), the tenant, and the subject's ID.

    ``key``/``previous_key`` are an agent's ``agent_key`` after and before the change (equal unless renamed);
    ``at`` is the wall-clock time the change was sent (seconds since the epoch), for lag measurements.
    """

    kind: str
    op: str
    tenant_id: str | None
    id: str | None
    key: str | None = None
    previous_key: str | None = None
    at: float | None = None

    def check(self) -> None:
        """:class:`ValueError` for an unknown kind/op or a change whose payload would exceed the size limit; what
        :meth:`encode` refuses, decided without encoding in the common case (a transaction checks each change
        when it is recorded and encodes it once, at ``COMMIT``)."""
        if self.op not in KINDS.get(self.kind, ()):
            raise ValueError(f"unknown change {self.kind}.{self.op}")
        texts = sum(len(value) for value in (self.tenant_id, self.id, self.key, self.previous_key) if value)
        if texts * _MAX_ESCAPED_CHARS + _MAX_FIXED_CHARS > PAYLOAD_LIMIT_BYTES:
            self.encode()  # long enough that only the encoding can tell

    def encode(self) -> str:
        """The notification payload; :class:`ValueError` for an unknown kind/op or over the size limit.

        Compact JSON (``json.dumps(…, separators=(",", ":"), ensure_ascii=True)`` of the wire dict, byte for
        byte), written field by field with the JSON module's own string escaping: this runs once per change of
        every writing transaction, and ``json.dumps`` with options builds an encoder per call."""
        if self.op not in KINDS.get(self.kind, ()):
            raise ValueError(f"unknown change {self.kind}.{self.op}")
        parts = ['{"v":', _VERSION, ',"k":', encode_basestring_ascii(self.kind), ',"o":',
                 encode_basestring_ascii(self.op)]
        for name, value in ((',"t":', self.tenant_id), (',"i":', self.id), (',"n":', self.key),
                            (',"p":', self.previous_key)):
            if value is not None:
                parts += (name, encode_basestring_ascii(value))
        if self.at is not None:
            parts += (',"a":', json.dumps(self.at))
        parts.append("}")
        payload = "".join(parts)
        if len(payload) > PAYLOAD_LIMIT_BYTES:
            raise ValueError(f"a change payload of {len(payload)} bytes exceeds the {PAYLOAD_LIMIT_BYTES}-byte "
                             "notification limit")
        return payload

    @classmethod
    def decode(cls, payload: str) -> Change:
        """The change a payload describes, or :class:`ChangeFormatError`."""
        try:
            wire = json.loads(payload)
        except ValueError as error:
            raise ChangeFormatError(f"not JSON: {payload[:100]!r}") from error
        if not isinstance(wire, dict) or wire.get("v") != WIRE_VERSION:
            raise ChangeFormatError(f"not a version-{WIRE_VERSION} change: {payload[:100]!r}")
        kind, op = wire.get("k"), wire.get("o")
        if not isinstance(kind, str) or not isinstance(op, str) or op not in KINDS.get(kind, ()):
            raise ChangeFormatError(f"unknown change {kind!r}.{op!r}")
        texts = [wire.get(name) for name in ("t", "i", "n", "p")]
        if any(value is not None and not isinstance(value, str) for value in texts):
            raise ChangeFormatError(f"a change's IDs and keys are strings: {payload[:100]!r}")
        at = wire.get("a")
        if at is not None and not isinstance(at, int | float):
            raise ChangeFormatError(f"a change's time is a number: {payload[:100]!r}")
        return cls(kind, op, texts[0], texts[1], texts[2], texts[3], float(at) if at is not None else None)
