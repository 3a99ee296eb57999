"""The answer of a permission check: allowed or not, a stable code, why, and how to get access."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import NoReturn


class DecisionCode(StrEnum):
    """Which rule decided (stable strings: logs, metrics and API error details match on them)."""

    # allowed
    PRIVILEGED_ROLE = "privileged_role"
    OUTSIDE_GROUP = "outside_group"
    GRANTED = "granted"
    GRANTED_BY_FILE_WRITER = "granted_by_file_writer"
    STORE_ERROR_FAIL_OPEN = "store_error_fail_open"
    # denied
    MISSING_TENANT = "missing_tenant"
    EMPTY_SENDER = "empty_sender"
    SYNTHETIC_SENDER = "synthetic_sender"
    INVALID_IDENTITY = "invalid_identity"
    NO_GRANT = "no_grant"
    DENIED_BY_GRANT = "denied_by_grant"
    DENIED_BY_FILE_WRITER_GRANT = "denied_by_file_writer_grant"
    STORE_ERROR_FAIL_CLOSED = "store_error_fail_closed"


@dataclass(frozen=True, slots=True)
class Decision:
    """The result of a check.

    ``reason`` explains the rule for logs and operators; ``how_to_get_access`` (denials only) tells the
    person what to do, in words they can act on.  A decision is deliberately *not* usable as a boolean:
    ``if check(...):`` on a plain dataclass would always be true and silently allow everything, so
    ``bool(decision)`` raises and callers must read :attr:`allowed`.
    """

    allowed: bool
    code: DecisionCode
    config_type: str
    reason: str
    how_to_get_access: str | None = None

    def __bool__(self) -> NoReturn:
        raise TypeError("a permission Decision is not a boolean; read decision.allowed")
