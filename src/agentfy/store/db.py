"""The database handle: engines for SQLite and PostgreSQL, transactions, and compiled statements.

Statements are built with SQLAlchemy Core (one schema, one query language for both engines), compiled
once per database, and executed on the driver's own cursor.  Why not ``Connection.execute``: on the hot
paths (resolve an agent, insert a row) SQLAlchemy's execution machinery costs several times the
statement itself on SQLite (measured: 31 µs vs 6 µs for a primary-key SELECT), and the store's goal is to
stay within 1.5x of plain SQL.  Both drivers take named parameters as a dict (SQLite ``:name``, psycopg
``%(name)s``), so repositories pass dicts either way; the few statements on the path of every request are
:class:`Positional` and take a tuple instead (cheaper to bind, and checked against the SQL's own order).

SQLite is opened with ``PRAGMA foreign_keys=ON`` (per connection: SQLite forgets it otherwise), WAL, a
busy timeout and ``synchronous=NORMAL``; transactions are explicit (``BEGIN IMMEDIATE`` for writes, so
two writers queue on the busy timeout instead of deadlocking on a lock upgrade).
"""

from __future__ import annotations

import contextvars
import functools
import re
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Final, TypeAlias, cast

import sqlalchemy as sa
from opentelemetry.trace import SpanKind, Tracer
from sqlalchemy.engine import make_url
from sqlalchemy.pool import StaticPool
from sqlalchemy.sql.compiler import SQLCompiler

from agentfy.ids import RandomSource, format_id, with_id_retry
from agentfy.ids.retry import DEFAULT_ATTEMPTS, IdCollisionError, IdRetryExhaustedError
from agentfy.store.changefeed import Change, ChangeFeed
from agentfy.store.changefeed.changes import CHANNEL, NOTIFY_SQL
from agentfy.store.checkpoints import checkpoint_in_background
from agentfy.store.errors import (
    DanglingReferenceError,
    InvalidInputError,
    StoreError,
    TransactionFailedError,
    UnavailableError,
    UniqueViolation,
)
from agentfy.store.pool import Connections, PoolSettings
from agentfy.store.schema import metadata
from agentfy.store.urls import sqlite_file
from agentfy.store.write_gate import GateTimeout, WriteGate, gate_for

SQLITE_BUSY_TIMEOUT_MS: Final = 5000
#: SQLite's write transaction: it takes the file's write lock at once (see :class:`Database`).
_BEGIN_IMMEDIATE: Final = "BEGIN IMMEDIATE"

Params: TypeAlias = Mapping[str, Any] | tuple[Any, ...]
Row: TypeAlias = tuple[Any, ...]
Statement: TypeAlias = "sa.ClauseElement | Sql | Positional | str"
_NO_DEFAULTS: Final[dict[str, Any]] = {}
#: How often a transaction is begun on a fresh connection after a pooled one turned out to be dead.
_BEGIN_ATTEMPTS: Final = 3
#: A PostgreSQL write not begun yet: its ``BEGIN`` goes with its first statement, in one round trip (a marker,
#: never sent as SQL; see :meth:`Tx._with_begin`).
_WITH_FIRST: Final = "BEGIN with the first statement"
#: What ``Tx._begin`` holds while no transaction is begun on PostgreSQL: a read (``None``) or a write.
_NOT_BEGUN: Final = (None, _WITH_FIRST)
_LOG_CHANGE: Final = "INSERT INTO change_log (origin, payload, created_at) VALUES (?, ?, ?)"
#: What makes a PostgreSQL ``SELECT`` more than a plain read, so that a read transaction must begin a real one
#: for it (see :meth:`Database.transaction`): a row lock, a ``SELECT … INTO``, or a function with an effect (a
#: notification, a sequence, a setting, an advisory lock, a transaction ID).  A false match costs a transaction
#: (its ``COMMIT``); a missed one would run that statement outside a transaction, so the list errs towards
#: matching.
_NOT_PLAIN: Final = re.compile(
    r"\bFOR\s+(?:NO\s+KEY\s+|KEY\s+)?(?:UPDATE|SHARE)\b|\bINTO\b|\b(?:pg_notify|nextval|setval|currval|lastval"
    r"|set_config|pg_(?:try_)?advisory\w*|txid_current\w*|pg_current_xact_id\w*)\s*\(", re.IGNORECASE)
#: Each SQL text's answer (plain read or not), so each is classified once (bounded: see :func:`_plain_read`).
_PLAIN_READS: dict[str, bool] = {}
_PLAIN_READS_KEPT: Final = 4096


def _plain_read(sql: str) -> bool:
    """Whether ``sql`` only reads: a ``SELECT`` with no row lock and no function with an effect."""
    known = _PLAIN_READS.get(sql)
    if known is not None:
        return known
    plain = sql.lstrip(" \t\n(").upper().startswith("SELECT") and _NOT_PLAIN.search(sql) is None
    if len(_PLAIN_READS) >= _PLAIN_READS_KEPT:  # texts built per call (IN lists of many lengths): start over
        _PLAIN_READS.clear()
    _PLAIN_READS[sql] = plain
    return plain
    if not sql.lstrip(" \t\n(").upper().startswith("SELECT") or _NOT_PLAIN.search(sql):
        return False
    if len(_PLAIN_READS) >= _PLAIN_READS_KEPT:  # texts built per call (IN lists of many lengths): start over
        _PLAIN_READS.clear()
    _PLAIN_READS.add(sql)
    return True


class FirstCheck:
    """A check that the transactions begun in one context run as their first statements, until one passes.

    Why: a unit of work that must hold a precondition read fresh from the database — the gateway's "this
    write's credential is still good" — would otherwise pay a transaction of its own (and on PostgreSQL a
    round trip and a thread hop) before the transaction that does the work.  Run as the first statements of
    that transaction instead, it costs a statement or two, and it is still checked before anything is
    written.  Set with :func:`check_first` in the context of the unit of work (a request's task; worker threads
    and tasks started from it share it, as they copy the context and so this object); every transaction of
    ``db`` begun there runs ``check(tx)`` right after ``BEGIN`` until one call returns.  A check that raises
    fails that transaction's ``with`` before its block runs (rolled back, the connection returned) and is
    tried again by the next one.  :meth:`settle` runs it in a read transaction of its own when the unit of work
    began none.  Two threads of one context may both run it before either has passed: it only reads.
    """

    __slots__ = ("check", "db", "passed")

    def __init__(self, db: Database, check: Callable[[Tx], None]) -> None:
        self.db = db
        self.check = check
        self.passed = False

    def run(self, tx: Tx) -> None:
        self.check(tx)
        self.passed = True

    def settle(self) -> None:
        """Run the check now (a read transaction of its own) unless a transaction already passed it."""
        if not self.passed:
            with self.db.transaction(write=False):
                pass


_FIRST_CHECK: Final[contextvars.ContextVar[FirstCheck | None]] = contextvars.ContextVar("agentfy_first_check",
                                                                                       default=None)


def check_first(db: Database, check: Callable[[Tx], None]) -> FirstCheck:
    """Make ``check`` the first statements of every transaction of ``db`` begun in the current context until
    one passes it (see :class:`FirstCheck`); replaces the context's previous check."""
    first = FirstCheck(db, check)
    _FIRST_CHECK.set(first)
    return first


def pending_first_check() -> FirstCheck | None:
    """The current context's check if no transaction has passed it yet."""
    first = _FIRST_CHECK.get()
    return None if first is None or first.passed else first


def now() -> str:
    """The current time as the store writes it: ISO-8601 UTC with microseconds and a ``Z``."""
    # The aware time's "+00:00" cut off rather than a naive copy made first: one call less on every write.
    return datetime.now(UTC).isoformat(timespec="microseconds")[:-6] + "Z"


class Sql:
    """A statement that differs by dialect: ``build(dialect_name)`` is called once per database."""

    __slots__ = ("build",)

    def __init__(self, build: Callable[[str], sa.ClauseElement]) -> None:
        self.build = build


class Positional:
    """A statement run with its values as a tuple, in the order ``names`` declares, rather than a dict.

    Why: SQLite's driver binds a dict by making a string of each parameter's name and looking it up, on
    every execution; on the hottest reads (an agent by ID or key, one per request) that is a measurable share
    of the statement.  ``names`` is checked against the order the compiled SQL binds its parameters in, once,
    when the statement is first compiled: a statement whose SQL orders them differently fails loudly there,
    never binds a value to the wrong column.  Every value is a parameter (no ``.values(x=1)`` defaults).
    Build it once, at module level, like every statement.
    """

    __slots__ = ("names", "statement")

    def __init__(self, statement: sa.ClauseElement, names: tuple[str, ...]) -> None:
        self.statement = statement
        self.names = names


def _sqlite_on_connect(dbapi_connection: sqlite3.Connection, _record: object) -> None:
    dbapi_connection.isolation_level = None  # explicit BEGIN/COMMIT, see Tx
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys = ON")
    cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA synchronous = NORMAL")
    cursor.close()


def _sqlite_on_connect_checkpointed_elsewhere(dbapi_connection: sqlite3.Connection, record: object) -> None:
    """The store's own connections: no checkpoint inside a commit (:mod:`agentfy.store.checkpoints`)."""
    _sqlite_on_connect(dbapi_connection, record)
    dbapi_connection.execute("PRAGMA wal_autocheckpoint = 0")


def create_engine(url: str, *, background_checkpoints: bool = False) -> sa.Engine:
    """A SQLAlchemy engine with the pragmas and options this store relies on.  ``background_checkpoints``: a
    SQLite file's connections leave WAL checkpoints to the caller's background checkpointing (the store's
    :class:`Database`); an engine of its own (a migration run) checkpoints as SQLite does by default."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        file = sqlite_file(parsed)
        in_memory = file is None
        if file is not None:
            file.parent.mkdir(parents=True, exist_ok=True)
        engine = sa.create_engine(
            parsed, paramstyle="named", pool_reset_on_return=None,  # Tx always ends its transaction itself
            connect_args={"check_same_thread": False, "isolation_level": None},
            **({"poolclass": StaticPool} if in_memory else {}),
        )
        sa.event.listen(engine, "connect", _sqlite_on_connect_checkpointed_elsewhere
                        if background_checkpoints and not in_memory else _sqlite_on_connect)
        if not in_memory:
            with engine.connect() as connection:  # WAL is a property of the file: set it once
                connection.exec_driver_sql("PRAGMA journal_mode = WAL")
        return engine
    if parsed.get_backend_name() == "postgresql":
        if parsed.drivername == "postgresql":
            parsed = parsed.set(drivername="postgresql+psycopg")
        return sa.create_engine(parsed, pool_pre_ping=True, pool_reset_on_return=None)
    raise ValueError(f"unsupported database URL {parsed.render_as_string(hide_password=True)!r}: expected "
                     "sqlite:///PATH or postgresql+psycopg://USER@HOST/DB")


_SQLITE_UNIQUE = re.compile(r"UNIQUE constraint failed: (.+)")


def _unique_violation_columns(error: BaseException, engine: sa.Engine) -> tuple[str | None, tuple[str, ...]]:
    """Which table and columns a unique violation names, from either driver, without parsing SQL."""
    if isinstance(error, sqlite3.IntegrityError):
        match = _SQLITE_UNIQUE.search(str(error))
        if not match:
            return None, ()
        pairs = [c.strip().split(".", 1) for c in match.group(1).split(",")]
        return pairs[0][0], tuple(p[-1] for p in pairs)
    diag = getattr(error, "diag", None)
    constraint = getattr(diag, "constraint_name", None) or ""
    table = getattr(diag, "table_name", None)
    known = _unique_constraints().get(constraint)
    return (table, known) if known else (table, (constraint,))


@functools.cache
def _unique_constraints() -> dict[str, tuple[str, ...]]:
    """Primary key, unique constraint and unique index name -> columns, from the schema (PostgreSQL
    reports a violated constraint by name only)."""
    names: dict[str, tuple[str, ...]] = {}
    for table in metadata.tables.values():
        names[f"pk_{table.name}"] = tuple(c.name for c in table.primary_key.columns)
        for constraint in table.constraints:
            if isinstance(constraint, sa.UniqueConstraint) and constraint.name:
                names[str(constraint.name)] = tuple(c.name for c in constraint.columns)
        for index in table.indexes:
            if index.unique and index.name:
                names[str(index.name)] = tuple(c.name for c in index.columns)
    return names


def _is_disconnect(error: BaseException, connection: Any) -> bool:
    """Whether ``error`` left the connection unusable (killed by the server, network lost): psycopg marks
    such a connection ``broken`` or ``closed``; a SQLite connection is never lost this way."""
    return bool(getattr(connection, "broken", False) or getattr(connection, "closed", False))


def _is_operational(error: BaseException) -> bool:
    """psycopg's ``OperationalError`` (the server went away, a statement was cancelled, a lock timed out):
    the request may succeed later, so it is "unavailable", not a bug.  By type, without importing psycopg
    for SQLite users."""
    psycopg = sys.modules.get("psycopg")
    return psycopg is not None and isinstance(error, psycopg.OperationalError)


def _integrity_violation(error: BaseException) -> str | None:
    """``"unique"``, ``"foreign_key"`` or ``"other"`` for a driver's integrity error, else ``None``.  By the
    driver's own types (psycopg's SQLSTATE classes, taken from ``sys.modules`` so SQLite users never import
    psycopg); SQLite has one class for all of them, told apart by its fixed message prefixes."""
    if isinstance(error, sqlite3.IntegrityError):
        text = str(error)
        return ("unique" if text.startswith("UNIQUE constraint failed") else
                "foreign_key" if text.startswith("FOREIGN KEY constraint failed") else "other")
    psycopg = sys.modules.get("psycopg")
    if psycopg is None or not isinstance(error, psycopg.IntegrityError):
        return None
    errors = psycopg.errors
    return ("unique" if isinstance(error, errors.UniqueViolation) else
            "foreign_key" if isinstance(error, errors.ForeignKeyViolation) else "other")


def _is_locked(error: BaseException) -> bool:
    """SQLite's ``database is locked`` / ``busy``: another writer held the lock past the busy timeout."""
    return isinstance(error, sqlite3.OperationalError) and ("locked" in str(error) or "busy" in str(error))


class Database:
    """One database (SQLite file or PostgreSQL): its engine, its compiled statements, and minting.

    ``url`` is the caller's (the ``database_url`` setting, resolved at the edge: the store reads no
    configuration itself); ``pool`` its pool settings (the ``db`` section; the defaults when omitted).
    ``random`` is the source IDs are minted from; ``None`` (the default) is the OS CSPRNG.  Tests pass a
    deterministic source to force primary-key collisions.
    """

    def __init__(self, url: str, *, random: RandomSource | None = None,
                 pool: PoolSettings | None = None) -> None:
        self.url = url
        self.engine = create_engine(self.url, background_checkpoints=True)
        self.dialect: str = self.engine.dialect.name
        self._sqlite = self.dialect == "sqlite"
        file = sqlite_file(self.engine.url)
        #: A SQLite file's WAL is checkpointed by a thread of the process, never inside a request's commit.
        self._checkpoints = checkpoint_in_background(file) if file is not None else None
        #: A write on SQLite takes the write lock at BEGIN, so two writers queue on the busy timeout instead of
        #: deadlocking on a lock upgrade.
        self._begin_write = _BEGIN_IMMEDIATE if self._sqlite else _WITH_FIRST
        #: A read on PostgreSQL begins no transaction until a statement needs one (see :meth:`transaction`).
        self._begin_read: str | None = "BEGIN" if self._sqlite else None
        #: ... and this process's writers of the file take that lock in turn (:mod:`agentfy.store.write_gate`).
        self._write_gate = gate_for(file) if file is not None else WriteGate()
        #: Set when tracing is on (:mod:`agentfy.tracing`): every statement then runs in a span.
        self.tracer: Tracer | None = None
        self.random = random
        self._connections = Connections(self.engine, pool if pool is not None else PoolSettings())
        #: Committed changes that can stale a cache, for this process's caches and WebSocket clients.
        self.changes = ChangeFeed(self.dialect)
        # Keyed by the statement object itself (hashed by identity, as SQLAlchemy statements are): a hit is
        # one dict probe, and the entry keeps its statement alive, so no other statement can take its key.
        self._compiled: dict[object, tuple[str, dict[str, Any]]] = {}
        self._texts: dict[str, str] = {}
        #: The same dialect binding by position (``?`` on SQLite, ``%s`` on psycopg), for :class:`Positional`.
        dialect_class: Any = type(self.engine.dialect)
        self._positional_dialect: sa.Dialect = dialect_class(paramstyle="qmark" if self._sqlite else "format")

    @property
    def conninfo(self) -> str:
        """The URL as the driver itself takes it (``postgresql://…``), for connections of its own (the change
        feed's listening connection)."""
        return self.engine.url.set(drivername=self.dialect).render_as_string(hide_password=False)

    @property
    def display_url(self) -> str:
        """The URL without its password, for messages."""
        return self.engine.url.render_as_string(hide_password=True)

    def __repr__(self) -> str:
        return f"Database({self.display_url!r})"

    def mint(self, prefix: str) -> str:
        """A new ID of ``prefix`` from this database's random source."""
        return format_id(prefix, self.random)

    def compile(self, statement: Statement) -> str:
        """``statement`` as this database's SQL text (cached)."""
        return self.compiled(statement)[0]

    def compiled(self, statement: Statement) -> tuple[str, dict[str, Any]]:
        """``(sql, defaults)``: the SQL text and the values bound in the statement itself (``.values(x=1)``),
        which are merged under the caller's parameters at execution."""
        if isinstance(statement, str):  # literal SQL with :name parameters, in this dialect's paramstyle
            text = self._texts.get(statement)
            if text is None:
                text = self._texts[statement] = str(sa.text(statement).compile(dialect=self.engine.dialect))
            return text, _NO_DEFAULTS
        cached = self._compiled.get(statement)
        if cached is not None:
            return cached
        if isinstance(statement, Positional):
            return self._compile_positional(statement), _NO_DEFAULTS
        built = statement.build(self.dialect) if isinstance(statement, Sql) else statement
        compiled = built.compile(dialect=self.engine.dialect)
        defaults = {name: value for name, value in compiled.params.items() if value is not None}
        # Build statements once, at module level: a statement built per call would be cached per call.
        self._compiled[statement] = (str(compiled), defaults)
        return str(compiled), defaults

    def _compile_positional(self, statement: Positional) -> str:
        compiled = statement.statement.compile(dialect=self._positional_dialect)
        bound = sorted(name for name, value in compiled.params.items() if value is not None)
        if bound:
            raise ValueError(f"a positional statement takes every value as a parameter; it binds {bound} itself")
        order = tuple(cast(SQLCompiler, compiled).positiontup or ())
        if order != statement.names:
            raise ValueError(f"the statement binds its parameters in the order {order}, not {statement.names} as "
                             "declared: its values would go to the wrong columns")
        self._compiled[statement] = (str(compiled), _NO_DEFAULTS)
        return str(compiled)

    @property
    def pool(self) -> Connections:
        return self._connections

    def transaction(self, *, write: bool = True) -> Tx:
        """A transaction, for ``with db.transaction() as tx:``: begun when the block starts, committed when it
        ends normally, rolled back when it raises.

        A connection whose transaction could not be ended cleanly is closed, never reused.  A database that
        cannot be reached, a pool with no free connection, or (SQLite) a write lock not obtained within the
        busy timeout raise :class:`UnavailableError` before the block runs.  ``write=False`` is a read: on
        SQLite it takes no write lock (``BEGIN`` rather than ``BEGIN IMMEDIATE``).

        On PostgreSQL a write's ``BEGIN`` is sent with its first statement, in one round trip rather than two
        (psycopg's pipeline mode); a write that runs no statement begins nothing.

        On PostgreSQL a read begins no transaction: each of its plain reads runs as a statement of its own
        (autocommit), which saves the ``BEGIN`` and ``COMMIT`` round trips — two of the three a one-statement
        read costs.  Nothing a reader sees changes: at READ COMMITTED, the isolation the store runs at, every
        statement of a transaction takes a snapshot of its own anyway, so a read of several statements was
        never one consistent picture, and a plain read takes no lock to hold.  The first statement that is
        not a plain read (a row lock, a write, a savepoint, a recorded change; see :data:`_NOT_PLAIN`) begins a
        real transaction, which the block's end commits as usual; a read whose pooled connection turns out
        dead runs again on a fresh one, as a ``BEGIN`` would.
        """
        # Tx has no __init__ (it would be a Python frame on every request): this sets what every transaction reads.
        tx = Tx()
        tx.db = self
        tx._begin = self._begin_write if write else self._begin_read
        tx._open = tx._failed = False
        tx._changes = tx._after_commit = None
        return tx

    def dispose(self) -> None:
        """Close every pooled connection (tests, shutdown)."""
        if self._checkpoints is not None:
            self._checkpoints.close()
        self._connections.close_all()
        self.engine.dispose()


class Tx:
    """One transaction on one driver connection; every statement of a unit of work goes through it.

    Its own context manager (see :meth:`Database.transaction`): a class rather than a generator, and one
    object rather than two, because this is the path of every request, and a generator's enter and exit cost
    more than SQLite's ``BEGIN`` and ``COMMIT`` together.
    """

    __slots__ = ("_after_commit", "_begin", "_broken", "_changes", "_cursor", "_failed", "_open", "_pair",
                 "_savepoints", "db")

    # Made by Database.transaction, which sets db, _begin, _open, _failed, _changes and _after_commit (the
    # last two are made on first use: most transactions, every read, never need them).  _pair (the pooled
    # connection and its cursor, given back as the same tuple) and _cursor are set when it begins; _broken
    # and _savepoints only when needed (read with a default).
    db: Database
    # None: a PostgreSQL read with no transaction begun (yet); _WITH_FIRST: a PostgreSQL write not begun yet
    # (see Database.transaction); else the BEGIN that was sent.
    _begin: str | None
    _open: bool
    _failed: bool
    _changes: list[Change] | None
    _after_commit: list[Callable[[], None]] | None
    _pair: tuple[Any, Any]
    _cursor: Any
    _broken: bool
    _savepoints: int

    def __enter__(self) -> Tx:
        """Take a connection and (SQLite) begin.  On PostgreSQL nothing is sent yet: the ``BEGIN`` goes with the
        first statement that needs it, and a pooled connection the server killed fails there, before any of the
        caller's statements has run; it is discarded with every idle one (killed together, most likely) and a
        new one is tried (:meth:`_again_outside`)."""
        gated = self._begin is _BEGIN_IMMEDIATE
        if gated:  # a SQLite write: this process's writers queue here, in turn
            self._queue_for_the_write_lock()
        # Everything below is inline, not a method (this is the path of every transaction: a Python frame costs
        # a few per cent of a one-statement read), and a try block costs nothing until something raises.
        try:
            # Connections.acquire(), inlined for its common case (a permit and an idle connection).
            pool = self.db._connections
            try:
                pool._permits.pop()
            except IndexError:
                pair = self._acquire()
            else:
                try:
                    pair = pool._idle.pop()
                except IndexError:
                    pair = self._acquire(permitted=True)
            try:
                # PostgreSQL connections are in autocommit mode (see agentfy.store.pool): BEGIN is explicit, and
                # sent with the first statement that needs it (Tx._with_begin); SQLite's here.
                if self.db._sqlite:
                    pair[1].execute(self._begin)
            except Exception as error:
                self._begin_failed(pair[0], error)
            else:
                self._pair, self._cursor = pair, pair[1]
            self._open = True
            first = _FIRST_CHECK.get()
            if first is not None and not first.passed and first.db is self.db:
                try:
                    first.run(self)
                except BaseException:
                    self._end_unclean()  # __exit__ is not called when __enter__ raises
                    raise
        except BaseException:
            if gated:
                self.db._write_gate.release()
            raise
        return self

    def _queue_for_the_write_lock(self) -> None:
        try:
            self.db._write_gate.acquire(SQLITE_BUSY_TIMEOUT_MS / 1000)
        except GateTimeout:
            raise UnavailableError("the database could not begin a transaction (it is locked by another writer)",
                                   ) from None

    def _acquire(self, *, permitted: bool = False) -> tuple[Any, Any]:
        """A connection from the pool (``permitted``: its permit is already taken), or UnavailableError."""
        pool = self.db._connections
        try:
            return pool.connect_permitted() if permitted else pool.acquire()
        except UnavailableError:
            raise
        except Exception as error:
            raise UnavailableError("the database is not reachable") from error

    def _begin_failed(self, connection: Any, error: Exception) -> None:
        """After SQLite's ``BEGIN`` failed: the connection is closed, and the failure is the caller's
        :class:`UnavailableError` (the file locked or unreadable) or :class:`StoreError`."""
        self.db._connections.discard(connection)
        if _is_operational(error) or _is_locked(error):
            raise UnavailableError("the database could not begin a transaction"
                                   + (" (it is locked by another writer)" if _is_locked(error) else ""),
                                   ) from error
        raise StoreError("the database could not begin a transaction") from error

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        try:
            if exc_type is not None:
                self._end_unclean()
                return  # the block's exception propagates
            if self._open and not self._changes and not self._failed:  # commit(), inlined for the common case
                self._open = False
                try:
                    if self._begin not in _NOT_BEGUN:  # (on PostgreSQL none may have been begun)
                        self._cursor.execute("COMMIT")
                except Exception as error:
                    self._broken = True
                    self._end_unclean()
                    raise self._commit_error(error) from error
            else:
                try:
                    self.commit()
                except BaseException:
                    self._end_unclean()
                    raise
            pool = self.db._connections  # Connections.release(), inlined: the end of every transaction
            if len(pool._idle) < pool._keep:
                pool._idle.append(self._pair)
                pool._permits.append(None)
                if pool._waiting:
                    pool.notify_waiter()
            else:
                pool.release(*self._pair)
        finally:  # the next writer goes in before the after-commit callbacks, which may write themselves
            if self._begin is _BEGIN_IMMEDIATE:
                self.db._write_gate.release()
        if self._after_commit:
            for callback in self._after_commit:
                callback()

    def _end_unclean(self) -> None:
        """Roll back; a connection that could not (or that broke while committing) is closed, not reused."""
        if self.rollback():
            self.db._connections.release(*self._pair)
        else:
            self.db._connections.discard(self._pair[0])

    def after_commit(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once this transaction has committed (never if it rolls back)."""
        if self._after_commit is None:
            self._after_commit = []
        self._after_commit.append(callback)

    def record_change(self, change: Change) -> None:
        """Record a change that can stale a cache: this process's caches are told at once, and every
        process's when the transaction commits (on PostgreSQL by ``pg_notify`` sent in this transaction, so
        it is delivered exactly when the change commits and never when it rolls back)."""
        change.check()  # refuse an unknown or oversized change now, not at COMMIT
        if self._begin in _NOT_BEGUN:  # its notification is sent in the transaction, at COMMIT
            self._begin_now()
        if self._changes is None:
            self._changes = []
        self._changes.append(change)
        self.db.changes.noticed(change)

    # -- transaction control -------------------------------------------------------------------------
    def commit(self) -> None:
        if not self._open:
            return
        if self._failed:
            # PostgreSQL would turn this COMMIT into a silent ROLLBACK; SQLite would commit the statements
            # before the failed one.  Neither is what the caller meant: refuse, the same way on both.
            self.rollback()
            raise TransactionFailedError()
        self._open = False
        try:
            if not self._changes:
                if self._begin not in _NOT_BEGUN:
                    self._cursor.execute("COMMIT")
                return
            sent_at = time.time()
            changes = [change._replace(at=sent_at) for change in self._changes]
            feed = self.db.changes
            if self.db._sqlite:  # for other processes on the file, which tail the log
                stamp = now()
                if len(changes) == 1:  # the commonest writing transaction: one change, one row
                    self._cursor.execute(_LOG_CHANGE, (feed.origin, changes[0].encode(), stamp))
                else:
                    self._cursor.executemany(_LOG_CHANGE, [(feed.origin, change.encode(), stamp)
                                                           for change in changes])
            else:
                self._cursor.execute(NOTIFY_SQL, (CHANNEL, [change.encode() for change in changes]))
            if feed.delivers_in_process:
                with feed.order_lock:  # deliveries follow commit order
                    self._cursor.execute("COMMIT")
                    feed.committed_here(changes)
            else:
                self._cursor.execute("COMMIT")
                feed.committed_here(changes)
        except Exception as error:
            self._broken = True
            raise self._commit_error(error) from error

    def _commit_error(self, error: Exception) -> StoreError:
        if _is_disconnect(error, self._pair[0]):
            return UnavailableError("the connection to the database was lost while committing; the change "
                                    "may not have been saved")
        return StoreError("the database could not commit the transaction")

    def rollback(self) -> bool:
        """End the transaction without its changes; ``False`` if the connection could not (discard it)."""
        if not self._open or self._begin in _NOT_BEGUN:  # (no transaction begun: nothing to undo)
            self._open = False
            return not getattr(self, "_broken", False)
        self._open = False
        try:
            self._cursor.execute("ROLLBACK")
        except Exception:
            return False
        return True

    @contextmanager
    def savepoint(self) -> Iterator[None]:
        """A nested unit: rolled back alone when the block raises (the transaction stays usable)."""
        if self._begin in _NOT_BEGUN:
            self._begin_now()
        number = self._savepoints = getattr(self, "_savepoints", 0) + 1
        name = f"sp_{number}"
        failed_before, changes_before = self._failed, len(self._changes or ())
        self._cursor.execute(f"SAVEPOINT {name}")
        try:
            yield
        except BaseException:
            self._cursor.execute(f"ROLLBACK TO SAVEPOINT {name}")
            self._cursor.execute(f"RELEASE SAVEPOINT {name}")
            self._failed = failed_before  # the failure was undone with the savepoint
            if self._changes:
                del self._changes[changes_before:]  # and so were its changes
            raise
        self._cursor.execute(f"RELEASE SAVEPOINT {name}")

    # -- statements ----------------------------------------------------------------------------------
    def execute(self, statement: Statement, params: Params | None = None) -> Any:
        """Run one statement; driver errors come back as :mod:`agentfy.store.errors` (never SQL text)."""
        # Database.compiled, inlined for a statement compiled before: this is every statement.
        sql, defaults = self.db._compiled.get(statement) or self.db.compiled(statement)
        if defaults:  # never a Positional statement's tuple: those bind no values of their own
            params = {**defaults, **cast(Mapping[str, Any], params or {})}
        begin = self._begin
        if begin is _WITH_FIRST or (begin is None and not _plain_read(sql)):  # PostgreSQL: nothing begun yet
            return self._with_begin(sql, params or {})
        if self.db.tracer is not None:
            return self._traced(sql, params or {})
        try:
            return self._cursor.execute(sql, params or {})
        except Exception as error:
            if self._begin is None:  # a plain read outside a transaction: it may run again on a fresh connection
                return self._again_outside(lambda cursor: cursor.execute(sql, params or {}), error)
            self._failed = True
            raise self._translate(error) from error

    def _with_begin(self, sql: str, params: Params) -> Any:
        """``BEGIN`` and the statement that needs it, on PostgreSQL, in one round trip: psycopg's pipeline sends
        both and waits once (see :meth:`Database.transaction`).  Nothing was committed before, so a connection
        found dead is replaced and both run again on a fresh one, as a ``BEGIN`` alone would; a statement that
        fails leaves its transaction begun (and failed), rolled back at the block's end."""

        def run(cursor: Any) -> Any:
            with cursor.connection.pipeline():  # the cursor's results are then its last statement's
                cursor.execute("BEGIN")
                cursor.execute(sql, params)
            return cursor

        with self._span(sql):
            try:
                result = run(self._cursor)
            except Exception as error:
                # Begun from here on, whatever happens next: a failed statement (here or on a fresh connection)
                # leaves its transaction open for the block's end to roll back, and a ROLLBACK on a dead
                # connection fails, which drops it.
                self._begin = "BEGIN"
                if not _is_disconnect(error, self._pair[0]):
                    self._failed = True
                    raise self._translate(error) from error
                result = self._again_outside(run, error)
        self._begin = "BEGIN"
        return result

    def _begin_now(self) -> None:
        """A PostgreSQL transaction begins on its own (before what cannot go in a pipeline with it: many rows, a
        savepoint, a recorded change's notification).  The statements before it ran on their own, finished; so a
        dead connection is replaced, as at BEGIN."""
        try:
            self._cursor.execute("BEGIN")
        except Exception as error:
            self._begin = "BEGIN"  # as in _with_begin
            self._again_outside(lambda cursor: cursor.execute("BEGIN"), error)
        self._begin = "BEGIN"

    def _again_outside(self, run: Callable[[Any], Any], error: Exception) -> Any:
        """``run(cursor)`` again on a fresh connection, after ``error`` from it outside any transaction: a
        connection the server killed (a restart, an idle timeout) is dropped with every idle one (killed
        together, most likely) and a new one is tried, a few times; any other error is the caller's, as
        :meth:`execute` translates it.  Only for what is safe to repeat: a plain read, or ``BEGIN``."""
        connections = self.db._connections
        failed = self._failed
        for attempt in range(1, _BEGIN_ATTEMPTS + 1):
            if not _is_disconnect(error, self._pair[0]) or attempt == _BEGIN_ATTEMPTS:
                self._failed = True
                raise self._translate(error) from error
            # A fresh connection first, then the dead one dropped; if none can be had, the block's end drops it
            # (marked broken: a dead connection is never given back to the pool).
            self._failed = self._broken = True
            pair = self._acquire()
            connections.discard(self._pair[0])
            connections.discard_idle()
            self._pair, self._cursor = pair, pair[1]
            self._failed, self._broken = failed, False
            try:
                return run(pair[1])
            except Exception as again:
                error = again
        raise AssertionError("unreachable")  # pragma: no cover - the last attempt raises

    def _span(self, sql: str) -> AbstractContextManager[Any]:
        """A statement's span when tracing is on: its SQL (never its parameter values) and the engine."""
        if self.db.tracer is None:
            return nullcontext()
        verb = sql.lstrip().split(None, 1)[0].upper() if sql.strip() else "SQL"
        return self.db.tracer.start_as_current_span(f"db {verb}", kind=SpanKind.CLIENT,
                                                    attributes={"db.system": self.db.dialect, "db.statement": sql})

    def _traced(self, sql: str, params: Params) -> Any:
        """:meth:`execute` inside its span."""
        with self._span(sql):
            try:
                return self._cursor.execute(sql, params)
            except Exception as error:
                if self._begin is None:  # as in execute()
                    return self._again_outside(lambda cursor: cursor.execute(sql, params), error)
                self._failed = True
                raise self._translate(error) from error

    def executemany(self, statement: Statement, rows: Sequence[Mapping[str, Any]]) -> None:
        if not rows:
            return
        sql, defaults = self.db.compiled(statement)
        if defaults:
            rows = [{**defaults, **row} for row in rows]
        if self._begin in _NOT_BEGUN:
            self._begin_now()
        try:
            self._cursor.executemany(sql, rows)
        except Exception as error:
            self._failed = True
            raise self._translate(error) from error

    def one(self, statement: Statement, params: Params | None = None) -> Row | None:
        """The first row, or ``None``."""
        row = self.execute(statement, params).fetchone()
        return row if row is None or type(row) is tuple else tuple(row)

    def all(self, statement: Statement, params: Params | None = None) -> list[Row]:
        return [tuple(r) for r in self.execute(statement, params).fetchall()]

    def all_binary(self, statement: Statement, params: Params | None = None) -> list[Row]:
        """:meth:`all`, with PostgreSQL's results in the binary format: many large ``bytea`` values (the memory
        vectors) arrive in half the bytes and without hex decoding; the same rows as :meth:`all` on SQLite."""
        if self.db.dialect != "postgresql":
            return self.all(statement, params)
        sql, defaults = self.db._compiled.get(statement) or self.db.compiled(statement)
        values = {**defaults, **cast(Mapping[str, Any], params or {})} if defaults else (params or {})
        if self._begin is _WITH_FIRST or (self._begin is None and not _plain_read(sql)):
            self._begin_now()

        def rows(on: Any) -> list[Row]:
            with on.connection.cursor(binary=True) as cursor:
                cursor.execute(sql, values)
                return [tuple(r) for r in cursor.fetchall()]

        with self._span(sql):
            try:
                return rows(self._cursor)
            except Exception as error:
                if self._begin is None:  # as in execute()
                    return cast(list[Row], self._again_outside(rows, error))
                self._failed = True
                raise self._translate(error) from error

    def scalar(self, statement: Statement, params: Params | None = None) -> Any:
        row = self.one(statement, params)
        return None if row is None else row[0]

    def insert_minted(self, prefix: str, insert: Statement, values: dict[str, Any]) -> str:
        """Insert one row under a freshly minted ID, repeating with a new ID on a primary-key collision.

        ``insert`` must be an ``INSERT … ON CONFLICT (id) DO NOTHING RETURNING id`` (see
        :func:`agentfy.store.sql.insert_returning_id`): a collision returns no row instead of an error, so
        the transaction stays usable on PostgreSQL and no savepoint is needed.  Any other unique violation
        (a duplicate ``agent_key``) raises at once and is not retried.
        """

        def attempt() -> str:
            values["id"] = self.db.mint(prefix)
            if self.execute(insert, values).fetchone() is None:
                raise IdCollisionError(values["id"])
            return str(values["id"])

        try:
            return attempt()  # the first try without the retry wrapper: collisions are rare
        except IdCollisionError:
            try:
                return with_id_retry(attempt, attempts=DEFAULT_ATTEMPTS - 1)
            except IdRetryExhaustedError as exhausted:
                raise IdRetryExhaustedError(DEFAULT_ATTEMPTS) from exhausted.__cause__

    def insert_minted_batch(self, prefix: str, insert: Statement, rows: list[dict[str, Any]]) -> list[str]:
        """Insert many rows under freshly minted IDs; a collision repeats the whole batch with new IDs."""

        def attempt() -> list[str]:
            for row in rows:
                row["id"] = self.db.mint(prefix)
            with self.savepoint():
                self.executemany(insert, rows)
            return [str(row["id"]) for row in rows]

        return with_id_retry(attempt, is_collision=lambda e: isinstance(e, UniqueViolation) and e.is_primary_key)

    def _translate(self, error: Exception) -> StoreError:
        if _is_disconnect(error, self._pair[0]):
            self._broken = True
            return UnavailableError("the connection to the database was lost during the request")
        if _is_operational(error):
            return UnavailableError("the database could not run the statement now")
        if _is_locked(error):
            return UnavailableError("the database is locked by another writer")
        violation = _integrity_violation(error)
        if violation is not None:
            text = str(error)
            if violation == "unique":
                table, columns = _unique_violation_columns(error, self.db.engine)
                return UniqueViolation(table, columns)
            if violation == "foreign_key":
                return DanglingReferenceError("a referenced row does not exist")
            constraint = getattr(getattr(error, "diag", None), "constraint_name", None)
            match = re.search(r"CHECK constraint failed: (\w+)", text)
            rule = constraint or (match.group(1) if match else "a database rule")
            return InvalidInputError(f"the value broke {rule}", field=str(rule), value=None)
        return StoreError("the database failed to run the statement")
