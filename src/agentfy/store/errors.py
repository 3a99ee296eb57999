"""Errors the storage layer raises: each says what was wrong in terms of the caller's input, never SQL.

Driver errors are translated at the boundary of :class:`~agentfy.store.db.Tx`; an error that cannot be
translated becomes :class:`StoreError` with a generic message, and the original stays only in
``__cause__`` (for logs), so database text never reaches an API caller.
"""

from __future__ import annotations


class StoreError(Exception):
    """Base of storage errors; ``str()`` is safe to show to an API caller."""

    code = "store_error"


class NotFoundError(StoreError):
    """No such row in the caller's tenant (a row of another tenant is reported exactly the same way)."""

    code = "not_found"

    def __init__(self, entity: str, ref: object, *, field: str | None = None) -> None:
        """``field``: the request's field that named what is missing, when it is not the path's object itself
        (the platform of an agent that exists but has no bot there): a client must not read the 404 as the
        agent being gone."""
        super().__init__(f"{entity} {ref!r} not found")
        self.entity = entity
        self.ref = ref
        self.field = field


class ConflictError(StoreError):
    """The write would break a uniqueness rule the caller can fix (a duplicate ``agent_key``, a slug)."""

    code = "conflict"

    def __init__(self, message: str, *, field: str | None = None, value: object = None) -> None:
        super().__init__(message)
        self.field = field
        self.value = value


class InvalidInputError(StoreError, ValueError):
    """A value that is not an ID but still has rules (an ``agent_key``, a role, a path) broke them."""

    code = "invalid_input"

    def __init__(self, message: str, *, field: str, value: object, expected: str | None = None) -> None:
        super().__init__(message)
        self.field = field
        self.value = value
        #: What would have been accepted, when the rule says more than the message (a schedule's grammar).
        self.expected = expected


class DanglingReferenceError(StoreError):
    """A referenced row does not exist (a foreign key failed): reported without SQL."""

    code = "reference_not_found"


class UniqueViolation(StoreError):
    """A unique constraint failed; ``columns`` names it portably (``("agents", "id")`` style).

    Repositories turn the ones a caller can fix into :class:`ConflictError`; a primary-key collision on a
    freshly minted ID is retried (``with_id_retry``) and never reaches the caller.
    """

    code = "conflict"

    def __init__(self, table: str | None, columns: tuple[str, ...]) -> None:
        super().__init__("a row with the same unique values already exists")
        self.table = table
        self.columns = columns

    @property
    def is_primary_key(self) -> bool:
        return self.columns == ("id",)


class TransactionFailedError(StoreError):
    """A statement in the transaction failed and the caller went on to commit: everything is rolled back.

    Catch a store error *outside* the transaction it happened in (or inside a ``tx.savepoint()``), never
    inside it and carry on: PostgreSQL has already aborted the transaction, and on SQLite the earlier
    statements would be committed without the failed one.
    """

    code = "transaction_failed"

    def __init__(self) -> None:
        super().__init__("a statement of this transaction failed; nothing was written")


class UnavailableError(StoreError):
    """The database cannot serve the request right now (unreachable, the connection was lost mid-statement,
    no pooled connection became free, the file is locked): retrying later may succeed.  The API's 503."""

    code = "unavailable"
