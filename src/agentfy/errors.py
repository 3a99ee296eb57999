"""The API's error: :class:`ApiError`, an HTTP status, a stable code, a message and the details a client
needs (the field, the value, what was expected).

Why here, on its own, with no dependencies: two layers answer API callers — the gateway and the chat
channels' webhooks, which sit below it — and both raise this one error.  Shaping it into the one error body
and a response is the gateway's job (:mod:`agentfy.gateway.errors`: ``error_body``, ``describe``).
"""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """An error the gateway or a channel raises itself (authentication, authorisation, bad requests)."""

    def __init__(self, status: int, code: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details
