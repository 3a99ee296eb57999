"""The cutover's failures.  Each one means nothing was committed: the database is as it was."""

from __future__ import annotations


class CutoverError(RuntimeError):
    """The cutover stopped and rolled back; the message says why and what to do."""


class CutoverRefusedError(CutoverError):
    """Another writer, another cutover, or a lock held elsewhere: nothing was read or written."""


class BackupError(CutoverError):
    """The backup could not be taken, or its restored copy does not match the database."""


class UnknownReferenceError(CutoverError):
    """A translated ID was found in a column that is not a known reference."""


class IdConflictError(CutoverError):
    """A new ID would equal one that exists, or a legacy ID cannot be translated."""


class PostCheckError(CutoverError):
    """A check before COMMIT failed: a dangling reference, a legacy value left, a changed row count, a
    secret that does not decrypt, or a hop that does not resolve."""
