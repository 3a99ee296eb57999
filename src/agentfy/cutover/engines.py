"""What differs between SQLite and PostgreSQL in a cutover: locking, the mapping table, foreign keys,
backups and their restore check.

The cutover runs on one driver connection of its own (not the store's pool), in one transaction, because it
needs what the store hides: an exclusive lock, a temporary mapping table loaded in bulk, foreign keys
suspended while primary keys and references change and re-checked before COMMIT, and a backup of exactly
the state the transaction started from.

* **SQLite:** ``BEGIN EXCLUSIVE`` (other writers wait on their busy timeout; a second cutover times out
  here); foreign keys are off on this connection and ``PRAGMA foreign_key_check`` runs before COMMIT; the
  backup is SQLite's online backup API, read through a second, read-only connection (WAL lets it read the
  committed state while this one holds the write lock; the backup API on the locked connection itself
  never finishes).
* **PostgreSQL:** a transaction-level advisory lock (the maintenance lock), a refusal if any other session
  is connected to the database, then ``LOCK TABLE … IN EXCLUSIVE MODE`` under ``lock_timeout``; the backup is
  ``pg_dump`` of the snapshot this transaction exported, so it is the exact starting state; foreign keys
  are dropped and added again (which validates every row) inside the transaction.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import hashlib
import os
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, BinaryIO, Final

import psycopg
import sqlalchemy as sa
from psycopg import errors as pg_errors
from psycopg import sql as pg_sql

from agentfy.cutover.errors import BackupError, CutoverRefusedError, PostCheckError
from agentfy.cutover.fence import APPLICATION_NAME, ConnectionFence
from agentfy.cutover.references import LEGACY_SHAPED_GLOBS, LEGACY_SHAPED_PG
from agentfy.store.migrate import MAINTENANCE_LOCK_KEY
from agentfy.store.urls import sqlite_file

MAP_TABLE: Final = "cutover_map"
#: Where the mapping table's rows wait, unkeyed, for :meth:`CutoverEngine.seal_map` (SQLite).
_MAP_LOAD_TABLE: Final = "cutover_map_load"
#: Values per ``IN (…)`` list on SQLite (its limit on host parameters is 32,766): large, because each
#: statement has a fixed cost and the JSON step looks up every ID-shaped token of a page of documents.
_SQLITE_IN_CHUNK: Final = 10_000
#: prctl(2) option: the signal a child gets when its parent dies.
_PR_SET_PDEATHSIG: Final = 1

#: PostgreSQL's restore check: table -> (rows, checksum).
Checksums = dict[str, tuple[int, str]]
#: ``(bytes or rows done, total or None)`` while a backup or restore runs.
CopyProgress = Callable[[int, int | None], None]


def quote(name: str) -> str:
    """A quoted identifier (table and column names come from the schema, never from input)."""
    return '"' + name.replace('"', '""') + '"'


class CutoverEngine(ABC):
    """One connection, one transaction.  SQL uses ``?`` placeholders on both engines."""

    dialect: str
    connection: Any

    # -- statements ---------------------------------------------------------------------------------------
    def _sql(self, statement: str) -> str:
        return statement

    def execute(self, statement: str, params: Sequence[Any] = ()) -> int:
        """Run one statement; the number of rows it changed (``-1`` when the driver does not say)."""
        cursor = self.connection.cursor()
        try:
            cursor.execute(self._sql(statement), tuple(params))
            return int(cursor.rowcount)
        finally:
            cursor.close()

    def executemany(self, statement: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            cursor = self.connection.cursor()
            try:
                cursor.executemany(self._sql(statement), [tuple(row) for row in rows])
            finally:
                cursor.close()

    def query(self, statement: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        cursor = self.connection.cursor()
        try:
            cursor.execute(self._sql(statement), tuple(params))
            return [tuple(row) for row in cursor.fetchall()]
        finally:
            cursor.close()

    def stream(self, statement: str, params: Sequence[Any] = (), size: int = 10_000) -> Iterator[tuple[Any, ...]]:
        """Rows of a read-only query, ``size`` at a time (the caller must not write until it is exhausted)."""
        cursor = self.connection.cursor()
        try:
            cursor.execute(self._sql(statement), tuple(params))
            while batch := cursor.fetchmany(size):
                yield from batch
        finally:
            cursor.close()

    def scalar(self, statement: str, params: Sequence[Any] = ()) -> Any:
        rows = self.query(statement, params)
        return rows[0][0] if rows else None

    def count(self, table: str) -> int:
        return int(self.scalar(f"SELECT count(*) FROM {quote(table)}"))

    # -- what differs -------------------------------------------------------------------------------------
    @abstractmethod
    def lock(self, timeout_seconds: float) -> None:
        """Begin the transaction and make this the only writer, or :class:`CutoverRefusedError`."""

    @abstractmethod
    def table_names(self) -> set[str]:
        """The tables of the schema the cutover works in."""

    @abstractmethod
    def foreign_keys(self) -> list[tuple[str, str, str, str]]:
        """The catalog's foreign keys: ``(table, column, referred table, referred column)``."""

    @abstractmethod
    def create_map(self) -> None:
        """The temporary mapping table ``(old_id, new_id, entity, tbl, how)``, gone at the end; filled by
        :meth:`load_map`, then keyed by :meth:`seal_map` before anything reads it."""

    @abstractmethod
    def load_map(self, rows: Sequence[tuple[str, str, str, str, str]]) -> None:
        """Append rows to the mapping table."""

    @abstractmethod
    def seal_map(self) -> tuple[str, str, str] | None:
        """Key the loaded mapping table by old ID, in one sort: keyed while it loaded, every row landed on
        a random page of it (old IDs are random UUIDs) and the plan step slowed down as the table grew.
        ``(old ID, table, other table)`` for an old ID loaded twice (the key of two entities), else ``None``."""

    def index_map_by_new_id(self) -> None:
        """Index the mapping table by new ID (the collision search and the hop checks probe it)."""
        self.execute(f"CREATE INDEX {MAP_TABLE}_new_id ON {MAP_TABLE} (new_id)")

    def update_by_key(self, table: str, key: str, column: str, pairs: Sequence[tuple[str, Any]]) -> None:
        """Set ``column`` to each pair's new value in the row whose ``key`` is the pair's key."""
        self.executemany(f"UPDATE {quote(table)} SET {quote(column)} = ? WHERE {quote(key)} = ?",
                         [(value, key_value) for key_value, value in pairs])

    def page_key(self, key: str) -> str:
        """The column to page ``key``'s table by when every row is read: ``key`` itself, except where the
        engine has a cheaper physical order."""
        return key

    @abstractmethod
    def lookup(self, values: Iterable[str]) -> dict[str, str]:
        """Old ID -> new ID for those of ``values`` the mapping table translates."""

    @abstractmethod
    def legacy_filter(self, column: str) -> tuple[str, tuple[str, ...]]:
        """A WHERE condition that holds for every value containing a legacy-shaped ID (and a few more)."""

    @abstractmethod
    def suspend_foreign_keys(self) -> None:
        """Stop checking foreign keys row by row until :meth:`check_foreign_keys`."""

    @abstractmethod
    def dangling_foreign_keys(self) -> list[str]:
        """Foreign-key references that point at no row, as found now (before any rewrite): at most a few,
        each described as ``table.column = value (no referred-table row)``; empty when every one holds."""

    @abstractmethod
    def check_foreign_keys(self) -> None:
        """Check every foreign key of every row again; :class:`PostCheckError` names a violation."""

    @abstractmethod
    def backup(self, path: Path, progress: CopyProgress) -> None:
        """Write the starting state to ``path`` (atomically: a partial backup never has that name)."""

    @abstractmethod
    def verify_backup(self, path: Path, tables: Sequence[str], progress: CopyProgress) -> str | None:
        """Restore ``path`` and compare every one of ``tables`` with the database as this transaction sees it
        (nothing has been written yet); ``None`` when they all match, else the first difference (such as
        ``table T has …, the backup …``).  :class:`BackupError` when the backup cannot be restored or read."""

    @abstractmethod
    def scratch_parent(self) -> Path:
        """Where this database's scratch directories go (each named with :func:`scratch_directory_prefix`)."""

    @abstractmethod
    def identity(self) -> str:
        """What names this database in scratch names."""

    def sweep_scratch(self) -> list[str]:
        """Remove what killed runs on this database left (the caller holds the maintenance lock, so no
        other run is using them): scratch directories, and on PostgreSQL scratch databases."""
        prefix = scratch_directory_prefix(self.identity())
        stale = sorted(self.scratch_parent().glob(prefix + "*"))
        for path in stale:
            shutil.rmtree(path, ignore_errors=True)
        return [str(path) for path in stale]

    def commit(self) -> None:
        self.connection.commit() if self.dialect == "postgresql" else self.execute("COMMIT")

    def rollback(self) -> None:
        with contextlib.suppress(Exception):
            if self.dialect == "postgresql":
                self.connection.rollback()
            elif self.connection.in_transaction:
                self.connection.execute("ROLLBACK")

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.connection.close()


def _partial(path: Path) -> Path:
    return path.with_name(path.name + ".partial")


def scratch_database_prefix(database: str) -> str:
    """The name prefix of the scratch databases a PostgreSQL restore check of ``database`` creates."""
    return f"agentfy_cutover_check_{hashlib.sha256(database.encode()).hexdigest()[:10]}_"


def scratch_directory_prefix(database: str) -> str:
    """The name prefix of a run's scratch directory (a dry run's backup, SQLite's restored copy), named
    after the database so the next run on it finds what a killed run left."""
    return f".agentfy-cutover-scratch-{hashlib.sha256(database.encode()).hexdigest()[:10]}-"


def _check_backup_directory(path: Path) -> None:
    if not path.parent.is_dir():
        raise BackupError(f"cannot write the backup {path}: the directory {path.parent} does not exist")
    if path.is_dir():
        raise BackupError(f"cannot write the backup {path}: it is a directory")


# -- SQLite ---------------------------------------------------------------------------------------------------
class SqliteEngine(CutoverEngine):
    dialect = "sqlite"

    def __init__(self, path: str, timeout_seconds: float) -> None:
        if not Path(path).exists():
            raise CutoverRefusedError(f"no SQLite database at {path!r}: the cutover needs an existing database file")
        self.path = Path(path)
        self._maintenance: BinaryIO | None = None
        self.connection = sqlite3.connect(path, isolation_level=None, timeout=timeout_seconds,
                                          check_same_thread=False)
        try:
            self.connection.execute(f"PRAGMA busy_timeout = {int(timeout_seconds * 1000)}")
            # Off for this connection only (it cannot change inside a transaction): rows are checked all at
            # once before COMMIT instead of one UPDATE at a time.
            self.connection.execute("PRAGMA foreign_keys = OFF")
            self.connection.execute("PRAGMA cache_size = -131072")  # 128 MiB of pages, not Python objects
            self.connection.execute("PRAGMA temp_store = FILE")
            self.connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.DatabaseError as error:
            self.connection.close()
            raise CutoverRefusedError(f"{path} is not a usable SQLite database: {error}") from None

    def lock(self, timeout_seconds: float) -> None:
        """The maintenance lock (the ``flock`` agentfy's start-up and migrations take: a server or worker
        starting meanwhile waits, then starts on the committed state), then the exclusive write lock, both
        before anything is read and both held to the end: no other writer gets in during the run."""
        self._maintenance = open(self.path, "rb")  # noqa: SIM115 - held until close()
        deadline = time.monotonic() + timeout_seconds
        while True:
            try:
                fcntl.flock(self._maintenance, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise CutoverRefusedError(
                        f"the maintenance lock of {self.path} is held (waited {timeout_seconds:g} s): another cutover, "
                        "or a migration or start-up of agentfy, is running; wait for it to finish") from None
                time.sleep(0.05)
        try:
            self.connection.execute("BEGIN EXCLUSIVE")
        except sqlite3.DatabaseError as error:
            raise CutoverRefusedError(
                f"{self.path} is locked by another writer or another cutover (waited {timeout_seconds:g} s: "
                f"{error}); stop the server and workers, then run the cutover again") from None
        # Asked, not set: setting it would change the file even in a dry run.  Every database agentfy has
        # opened is in WAL already (agentfy.store.db.create_engine).
        mode = self.connection.execute("PRAGMA journal_mode").fetchone()[0]
        if mode != "wal":
            raise CutoverRefusedError(
                f"{self.path} is in journal mode {mode!r}; the cutover needs WAL (its backup reads while the "
                "cutover holds the write lock): run `agentfy db upgrade`, which sets it, then try again")

    def close(self) -> None:
        super().close()
        if self._maintenance is not None:
            with contextlib.suppress(OSError):
                self._maintenance.close()  # releases the flock
            self._maintenance = None

    def table_names(self) -> set[str]:
        return {str(name) for (name,) in self.query("SELECT name FROM sqlite_master WHERE type = 'table'")}

    def foreign_keys(self) -> list[tuple[str, str, str, str]]:
        return [(str(t), str(c), str(rt), str(rc)) for t, c, rt, rc in self.query(
            'SELECT m.name, f."from", f."table", f."to" FROM sqlite_master AS m, pragma_foreign_key_list(m.name) '
            "AS f WHERE m.type = 'table'")]

    def create_map(self) -> None:
        self.execute(f"CREATE TEMP TABLE {_MAP_LOAD_TABLE} (old_id TEXT NOT NULL, new_id TEXT NOT NULL, "
                     "entity TEXT NOT NULL, tbl TEXT NOT NULL, how TEXT NOT NULL)")
        # WITHOUT ROWID: the joins on old_id read new_id from the key's own B-tree, no second lookup.
        self.execute(f"CREATE TEMP TABLE {MAP_TABLE} (old_id TEXT PRIMARY KEY, new_id TEXT NOT NULL, "
                     "entity TEXT NOT NULL, tbl TEXT NOT NULL, how TEXT NOT NULL) WITHOUT ROWID")

    def load_map(self, rows: Sequence[tuple[str, str, str, str, str]]) -> None:
        self.executemany(f"INSERT INTO {_MAP_LOAD_TABLE} VALUES (?, ?, ?, ?, ?)", rows)

    def seal_map(self) -> tuple[str, str, str] | None:
        try:
            self.execute(f"INSERT INTO {MAP_TABLE} SELECT * FROM {_MAP_LOAD_TABLE} ORDER BY old_id")
        except sqlite3.IntegrityError:
            twice = self.query(f"SELECT old_id, min(tbl), max(tbl) FROM {_MAP_LOAD_TABLE} GROUP BY old_id "
                               "HAVING count(*) > 1 ORDER BY old_id LIMIT 1")
            return (str(twice[0][0]), str(twice[0][1]), str(twice[0][2])) if twice else None
        finally:
            self.execute(f"DROP TABLE {_MAP_LOAD_TABLE}")
        return None

    def index_map_by_new_id(self) -> None:
        """Covering: with ``tbl`` and ``how`` in it (and ``old_id``, the key of a WITHOUT ROWID table, in
        every entry), a probe by new ID that filters on the table reads the index alone instead of also
        looking the row up by its key — the hop check's per-table probes took three times as long."""
        self.execute(f"CREATE INDEX {MAP_TABLE}_new_id ON {MAP_TABLE} (new_id, tbl, how)")

    def identity(self) -> str:
        return str(self.path.resolve())

    def scratch_parent(self) -> Path:
        """Beside the database: the restored copy is as big as the database, so it goes to the same disk."""
        return self.path.parent

    def page_key(self, key: str) -> str:
        """``rowid``: reading in the table's own order is sequential, where the primary key's index order
        fetches each row from a random page (the JSON step took 102 s at 100k organizations that way)."""
        return "rowid"

    def lookup(self, values: Iterable[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        pending = list(dict.fromkeys(values))
        for start in range(0, len(pending), _SQLITE_IN_CHUNK):
            chunk = pending[start:start + _SQLITE_IN_CHUNK]
            marks = ", ".join("?" * len(chunk))
            found.update(self.query(f"SELECT old_id, new_id FROM {MAP_TABLE} WHERE old_id IN ({marks})", chunk))
        return found

    def legacy_filter(self, column: str) -> tuple[str, tuple[str, ...]]:
        return " OR ".join(f"{column} GLOB ?" for _ in LEGACY_SHAPED_GLOBS), LEGACY_SHAPED_GLOBS

    def suspend_foreign_keys(self) -> None:
        """Already off on this connection (see ``__init__``)."""

    def dangling_foreign_keys(self) -> list[str]:
        found: list[str] = []
        for table, rowid, parent, fk_index in self.query("PRAGMA foreign_key_check")[:5]:
            columns = [(str(c), str(r)) for _, _, _, c, r, *_ in self.query(
                f"SELECT * FROM pragma_foreign_key_list({_sqlite_string(str(table))}) WHERE id = ?", (fk_index,))]
            values = self.query(f"SELECT {', '.join(quote(c) for c, _ in columns)} FROM {quote(str(table))} "
                                "WHERE rowid = ?", (rowid,))
            shown = ", ".join(f"{table}.{c} = {v!r}" for (c, _), v in zip(columns, values[0] if values else (),
                                                                            strict=False))
            found.append(f"{shown or f'{table} row {rowid}'} (no {parent} row)")
        return found

    def check_foreign_keys(self) -> None:
        violations = self.query("PRAGMA foreign_key_check")
        if violations:
            table, rowid, parent, _ = violations[0]
            raise PostCheckError(f"{len(violations)} foreign key violation(s), e.g. {table} row {rowid} refers to "
                                 f"a missing {parent} row")

    def backup(self, path: Path, progress: CopyProgress) -> None:
        _check_backup_directory(path)
        partial = _partial(path)
        partial.unlink(missing_ok=True)
        try:
            with contextlib.closing(sqlite3.connect(_read_only_uri(self.path), uri=True)) as source, \
                    contextlib.closing(sqlite3.connect(partial)) as target:
                source.backup(target, pages=4096,
                              progress=lambda _status, remaining, total: progress(total - remaining, total))
                target.execute("PRAGMA journal_mode = DELETE")  # one self-contained file, no -wal beside it
        except sqlite3.Error as error:
            raise BackupError(f"the backup to {path} failed: {error}") from None
        partial.replace(path)

    def verify_backup(self, path: Path, tables: Sequence[str], progress: CopyProgress) -> str | None:
        """Restoring a SQLite backup is putting its file in place, so the backup file itself is opened (read
        only) as the restored database — a copy of it would only prove the file system can copy a file, at the
        cost of writing the whole database once more — and then:

        * ``PRAGMA integrity_check`` must say ``ok``: every page is sound and every index holds exactly its
          table's rows, so the restored database answers queries as this one does;
        * its schema (``sqlite_master``: every table, index, trigger and view, with its SQL) equals this
          database's;
        * each table equals this database's row for row: both row counts, and the rows joined on ``rowid``
          with every column the same value of the same storage class, text and blobs byte for byte
          (:func:`_sqlite_same_value`).  That reads each row of both once, in SQLite's C code; encoding every
          value as text to hash it cost several times as much.

        This database is attached read-only to that connection, so it is read in its committed state: the
        state this transaction started from, because the run holds the write lock (no one else can commit)
        and has written nothing but its temporary tables yet — the backup itself was read the same way.  (The
        other way round, the backup attached to the transaction's connection, it could not be detached
        before the transaction ends.)"""
        try:
            with contextlib.closing(sqlite3.connect(_read_only_uri(path), uri=True)) as restored:
                progress(0, None)
                status = restored.execute("PRAGMA integrity_check").fetchone()[0]
                if status != "ok":
                    raise BackupError(f"the backup {path} is corrupt (integrity check: {status})")
                restored.execute("ATTACH DATABASE ? AS live", (_read_only_uri(self.path),))
                return self._compare(restored, tables, progress)
        except sqlite3.Error as error:
            raise BackupError(f"the backup {path} cannot be restored: {error}") from None

    @staticmethod
    def _compare(restored: sqlite3.Connection, tables: Sequence[str], progress: CopyProgress) -> str | None:
        """The first difference between the backup (``main``) and the database (``live``), or ``None``."""
        schema = "SELECT type, name, tbl_name, sql FROM {}.sqlite_master ORDER BY type, name"
        live_schema = restored.execute(schema.format("live")).fetchall()
        backup_schema = restored.execute(schema.format("main")).fetchall()
        if live_schema != backup_schema:
            kind, name, _, _ = min(set(live_schema) ^ set(backup_schema), key=str)
            return f"the schema differs ({kind} {name})"
        for done, table in enumerate(tables):
            progress(done, len(tables))
            columns = [(str(name), str(declared)) for name, declared in restored.execute(
                "SELECT name, type FROM pragma_table_info(?, 'live') ORDER BY cid", (table,))]
            if not columns:
                raise BackupError(f"the database has no table {table}")
            live_rows = int(restored.execute(f"SELECT count(*) FROM live.{quote(table)}").fetchone()[0])
            backup_rows = int(restored.execute(f"SELECT count(*) FROM main.{quote(table)}").fetchone()[0])
            same = " AND ".join(_sqlite_same_value(f"a.{quote(c)}", f"b.{quote(c)}", declared)
                                for c, declared in columns)
            equal = int(restored.execute(
                f"SELECT count(*) FROM live.{quote(table)} AS a JOIN main.{quote(table)} AS b ON b.rowid = a.rowid "
                f"WHERE {same}").fetchone()[0])
            if not live_rows == backup_rows == equal:
                return (f"table {table} has {live_rows} rows, the backup {backup_rows} rows, of which {equal} equal "
                        "the database's row with the same rowid")
        progress(len(tables), len(tables))
        return None


def _sqlite_same_value(a: str, b: str, declared: str) -> str:
    """SQL that holds when the values ``a`` and ``b`` of a column declared ``declared`` are the same value of
    the same storage class.

    ``IS`` under ``BINARY`` compares text and blobs by length and bytes (a NUL byte included), numbers by
    value, NULL as equal to NULL only, and never finds values of two storage classes equal except an integer
    and a real of the same value.  So in a column of TEXT affinity, which stores only text, blobs and NULL
    (SQLite converts numbers on the way in), it is exact on its own; other columns also compare ``typeof``
    — a function call per value, which is why text columns go without."""
    same = f"{a} IS {b} COLLATE BINARY"
    if _sqlite_text_affinity(declared):
        return same
    return f"({same} AND typeof({a}) = typeof({b}))"


def _sqlite_text_affinity(declared: str) -> bool:
    """Whether a column declared ``declared`` has TEXT affinity (SQLite's rules, in their order: ``INT``
    first makes it INTEGER, then ``CHAR``, ``CLOB`` or ``TEXT`` make it TEXT)."""
    upper = declared.upper()
    return "INT" not in upper and any(word in upper for word in ("CHAR", "CLOB", "TEXT"))


def _read_only_uri(path: Path) -> str:
    """A SQLite URI opening ``path`` read-only (characters such as ``?`` and ``#`` in the path escaped)."""
    return f"{path.resolve().as_uri()}?mode=ro"


def _sqlite_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


# -- PostgreSQL -----------------------------------------------------------------------------------------------
def _libpq(url: sa.URL) -> tuple[str, dict[str, str]]:
    """A libpq URI without the password, and the environment that carries it (not on a command line)."""
    env = dict(os.environ)
    if url.password is not None:
        env["PGPASSWORD"] = str(url.password)
    plain = url.set(drivername="postgresql", password=None)
    return plain.render_as_string(hide_password=False), env


class PostgresEngine(CutoverEngine):
    dialect = "postgresql"

    def __init__(self, url: sa.URL, timeout_seconds: float) -> None:
        self.url = url
        self.uri, self.env = _libpq(url)
        self.fence = ConnectionFence(url, timeout_seconds)
        try:
            #: A fence left by a killed run (recorded on the server), lifted before connecting.
            self.lifted_fence = self.fence.lift_stale()
            self.connection = psycopg.connect(self.uri, password=url.password, autocommit=False,
                                              application_name=APPLICATION_NAME,
                                              connect_timeout=max(1, int(timeout_seconds)))
        except psycopg.Error as error:
            self.fence.close()
            raise CutoverRefusedError(f"cannot connect to {url.render_as_string(hide_password=True)}: "
                                      f"{str(error).strip()}") from None
        except BaseException:
            self.fence.close()
            raise
        #: Sessions that connected while the gate was open for ``pg_dump``, disconnected before any write.
        self.evicted = 0
        self._foreign_key_definitions: list[tuple[str, str, str]] = []
        self._snapshot: str | None = None
        self._cursors = 0

    def _sql(self, statement: str) -> str:
        return statement.replace("?", "%s")

    def close(self) -> None:
        """Close the connection, then lift what the run held beyond its transaction (the fence)."""
        super().close()
        self.fence.close()

    def lock(self, timeout_seconds: float) -> None:
        self.execute(f"SET LOCAL lock_timeout = '{int(timeout_seconds * 1000)}ms'")
        if not self.scalar("SELECT pg_try_advisory_xact_lock(?)", (MAINTENANCE_LOCK_KEY,)):
            raise CutoverRefusedError("the maintenance lock is held: another cutover or maintenance job is running "
                                      "on this database; wait for it to finish")
        # From here to the end of the run no new session may connect (see agentfy.cutover.fence).
        self.fence.raise_fence(self.connection.info.backend_pid, os.urandom(4).hex())
        deadline = time.monotonic() + timeout_seconds
        while True:  # a session that has just closed lingers in pg_stat_activity for a moment
            others = self.fence.others({self.connection.info.backend_pid})
            if not others or time.monotonic() >= deadline:
                break
            time.sleep(0.1)
        if others:
            listed = "; ".join(f"pid {pid} {app or '(no application name)'} {state} from {addr}"
                               for pid, app, state, addr in others[:5])
            raise CutoverRefusedError(f"{len(others)} other session(s) are connected to this database ({listed}); "
                                      "stop the servers and workers that use it, then run the cutover again")
        tables = [str(name) for (name,) in self.query(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename")]
        try:
            if tables:
                self.execute(f"LOCK TABLE {', '.join(quote(t) for t in tables)} IN EXCLUSIVE MODE")
        except pg_errors.LockNotAvailable:
            raise CutoverRefusedError(f"the tables are locked by another transaction (waited {timeout_seconds:g} s); "
                                      "stop the writers, then run the cutover again") from None
        self._snapshot = str(self.scalar("SELECT pg_export_snapshot()"))

    def table_names(self) -> set[str]:
        return {str(name) for (name,) in self.query(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")}

    def foreign_keys(self) -> list[tuple[str, str, str, str]]:
        return [(str(t), str(c), str(rt), str(rc)) for t, c, rt, rc in self.query(
            "SELECT cl.relname, a.attname, rcl.relname, ra.attname FROM pg_constraint AS con "
            "JOIN pg_class AS cl ON cl.oid = con.conrelid JOIN pg_class AS rcl ON rcl.oid = con.confrelid "
            "CROSS JOIN LATERAL unnest(con.conkey, con.confkey) AS k(col, rcol) "
            "JOIN pg_attribute AS a ON a.attrelid = con.conrelid AND a.attnum = k.col "
            "JOIN pg_attribute AS ra ON ra.attrelid = con.confrelid AND ra.attnum = k.rcol "
            "WHERE con.contype = 'f' AND con.connamespace = current_schema()::regnamespace")]

    def create_map(self) -> None:
        self.execute(f"CREATE TEMP TABLE {MAP_TABLE} (old_id text NOT NULL, new_id text NOT NULL, "
                     "entity text NOT NULL, tbl text NOT NULL, how text NOT NULL) ON COMMIT DROP")

    def load_map(self, rows: Sequence[tuple[str, str, str, str, str]]) -> None:
        cursor = self.connection.cursor()
        try:
            with cursor.copy(f"COPY {MAP_TABLE} (old_id, new_id, entity, tbl, how) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        finally:
            cursor.close()

    def seal_map(self) -> tuple[str, str, str] | None:
        self.execute("SAVEPOINT cutover_map")
        try:
            self.execute(f"ALTER TABLE {MAP_TABLE} ADD PRIMARY KEY (old_id)")
        except pg_errors.UniqueViolation:
            self.execute("ROLLBACK TO SAVEPOINT cutover_map")
            twice = self.query(f"SELECT old_id, min(tbl), max(tbl) FROM {MAP_TABLE} GROUP BY old_id "
                               "HAVING count(*) > 1 ORDER BY old_id LIMIT 1")
            return (str(twice[0][0]), str(twice[0][1]), str(twice[0][2])) if twice else None
        self.execute("RELEASE SAVEPOINT cutover_map")
        self.execute(f"ANALYZE {MAP_TABLE}")  # the planner's row estimates for the joins that follow
        return None

    def stream(self, statement: str, params: Sequence[Any] = (), size: int = 10_000) -> Iterator[tuple[Any, ...]]:
        """A server-side cursor: the client holds one batch, whatever the result's size."""
        self._cursors += 1
        with self.connection.cursor(name=f"cutover_stream_{self._cursors}") as cursor:
            cursor.itersize = size
            cursor.execute(self._sql(statement), tuple(params))
            yield from cursor

    def lookup(self, values: Iterable[str]) -> dict[str, str]:
        return {str(old): str(new) for old, new in self.query(
            f"SELECT old_id, new_id FROM {MAP_TABLE} WHERE old_id = ANY(?)", (list(dict.fromkeys(values)),))}

    def update_by_key(self, table: str, key: str, column: str, pairs: Sequence[tuple[str, Any]]) -> None:
        """One statement per page (``unnest`` of two arrays) instead of one round trip per row."""
        if pairs:
            self.execute(f"UPDATE {quote(table)} AS t SET {quote(column)} = v.value FROM "
                         "(SELECT unnest(?::text[]) AS key, unnest(?::text[]) AS value) AS v "
                         f"WHERE t.{quote(key)} = v.key",
                         ([str(k) for k, _ in pairs], [str(v) for _, v in pairs]))

    def legacy_filter(self, column: str) -> tuple[str, tuple[str, ...]]:
        return f"{column} ~ ?", (LEGACY_SHAPED_PG,)

    def suspend_foreign_keys(self) -> None:
        self._foreign_key_definitions = [(str(t), str(n), str(d)) for t, n, d in self.query(
            "SELECT cl.relname, con.conname, pg_get_constraintdef(con.oid) FROM pg_constraint AS con "
            "JOIN pg_class AS cl ON cl.oid = con.conrelid "
            "WHERE con.contype = 'f' AND con.connamespace = current_schema()::regnamespace ORDER BY 1, 2")]
        for table, name, _ in self._foreign_key_definitions:
            self.execute(f"ALTER TABLE {quote(table)} DROP CONSTRAINT {quote(name)}")

    def dangling_foreign_keys(self) -> list[str]:
        """One anti-join per foreign key (a constraint holds for committed rows unless triggers were disabled,
        e.g. with ``session_replication_role = replica``, but that is exactly the case to find)."""
        found: list[str] = []
        constraints = self.query(
            "SELECT cl.relname, rcl.relname, "
            "array(SELECT a.attname FROM unnest(con.conkey) WITH ORDINALITY AS k(n, i) JOIN pg_attribute AS a "
            "ON a.attrelid = con.conrelid AND a.attnum = k.n ORDER BY k.i), "
            "array(SELECT a.attname FROM unnest(con.confkey) WITH ORDINALITY AS k(n, i) JOIN pg_attribute AS a "
            "ON a.attrelid = con.confrelid AND a.attnum = k.n ORDER BY k.i) "
            "FROM pg_constraint AS con JOIN pg_class AS cl ON cl.oid = con.conrelid "
            "JOIN pg_class AS rcl ON rcl.oid = con.confrelid "
            "WHERE con.contype = 'f' AND con.connamespace = current_schema()::regnamespace ORDER BY 1, 2")
        for table, parent, columns, referred in constraints:
            present = " AND ".join(f"c.{quote(str(c))} IS NOT NULL" for c in columns)
            joined = " AND ".join(f"p.{quote(str(r))} = c.{quote(str(c))}" for c, r in zip(columns, referred,
                                                                                           strict=True))
            rows = self.query(f"SELECT {', '.join(f'c.{quote(str(c))}' for c in columns)} FROM {quote(str(table))} "
                              f"AS c WHERE {present} AND NOT EXISTS (SELECT 1 FROM {quote(str(parent))} AS p "
                              f"WHERE {joined}) LIMIT 1")
            if rows:
                shown = ", ".join(f"{table}.{c} = {v!r}" for c, v in zip(columns, rows[0], strict=True))
                found.append(f"{shown} (no {parent} row)")
        return found

    def check_foreign_keys(self) -> None:
        for table, name, definition in self._foreign_key_definitions:
            try:
                self.execute("SAVEPOINT cutover_fk")
                self.execute(f"ALTER TABLE {quote(table)} ADD CONSTRAINT {quote(name)} {definition}")
                self.execute("RELEASE SAVEPOINT cutover_fk")
            except pg_errors.ForeignKeyViolation as error:
                self.execute("ROLLBACK TO SAVEPOINT cutover_fk")
                detail = error.diag.message_detail or str(error).strip()
                raise PostCheckError(
                    f"foreign key {name} on {table} does not hold after the rewrite: {detail}") from None
        self._foreign_key_definitions = []

    def _checksum_query(self, table: str) -> str:
        # Order-independent: the sum of each row's hash (the restored copy has no defined row order).
        return (f"SELECT count(*), coalesce(sum(('x' || substr(md5(t::text), 1, 15))::bit(60)::bigint), 0)::text "
                f"FROM {quote(table)} AS t")

    def checksums(self, tables: Iterable[str]) -> Checksums:
        sums: Checksums = {}
        for table in tables:
            count, digest = self.query(self._checksum_query(table))[0]
            sums[table] = (int(count), str(digest))
        return sums

    def _start(self, command: list[str], what: str, env: dict[str, str]) -> subprocess.Popen[str]:
        executable = shutil.which(command[0])
        if executable is None:
            raise BackupError(f"{command[0]} is not installed: the cutover needs it for {what} (Debian: "
                              "apt-get install postgresql-client)")
        return subprocess.Popen([executable, *command[1:]], env=env, stdout=subprocess.PIPE,  # noqa: S603
                                stderr=subprocess.PIPE, text=True, preexec_fn=_die_with_parent)  # noqa: PLW1509

    @staticmethod
    def _finish(process: subprocess.Popen[str], command: str, what: str) -> None:
        """Wait for ``process``; killed (and reaped) if the wait is interrupted, a signal included."""
        try:
            _, stderr = process.communicate()
        except BaseException:
            process.kill()
            process.wait()
            raise
        if process.returncode != 0:
            raise BackupError(f"{what} failed ({command} exit {process.returncode}): {stderr.strip()[-2000:]}")

    def _run(self, command: list[str], what: str) -> None:
        self._finish(self._start(command, what, self.env), command[0], what)

    def backup(self, path: Path, progress: CopyProgress) -> None:
        """``pg_dump`` of this transaction's snapshot.  It must connect to the fenced database, so the gate
        opens until its session is there and closes again; anyone else who connected meanwhile is
        disconnected once the dump is done (the table locks kept them from writing)."""
        _check_backup_directory(path)
        if self._snapshot is None:
            raise BackupError("no exported snapshot: lock() must run first")
        partial = _partial(path)
        partial.unlink(missing_ok=True)
        progress(0, None)
        what = f"the backup (pg_dump) to {path}"
        application = f"{APPLICATION_NAME}-dump-{os.urandom(3).hex()}"
        self.fence.open_gate()
        try:
            process = self._start(["pg_dump", "--format=custom", f"--snapshot={self._snapshot}", f"--file={partial}",
                                   f"--dbname={self.uri}"], what, {**self.env, "PGAPPNAME": application})
            try:
                deadline = time.monotonic() + 30
                while process.poll() is None and time.monotonic() < deadline and not any(
                        app == application for _, app, _, _ in self.fence.others(set())):
                    time.sleep(0.02)
            finally:
                self.fence.close_gate()
        except BaseException:
            self.fence.close_gate()
            raise
        self._finish(process, "pg_dump", what)
        self.evicted += self.fence.evict({self.connection.info.backend_pid})
        partial.replace(path)
        progress(path.stat().st_size, path.stat().st_size)

    def identity(self) -> str:
        return self.url.render_as_string(hide_password=True)

    def scratch_parent(self) -> Path:
        return Path(tempfile.gettempdir())

    def sweep_scratch(self) -> list[str]:
        """Also drop the scratch databases earlier restore checks of this database left (killed runs):
        named after it, and ours to drop, since this run holds its maintenance lock."""
        prefix = scratch_database_prefix(str(self.url.database))
        stale = [str(name) for (name,) in self.fence.admin.execute(
            "SELECT datname FROM pg_database WHERE starts_with(datname, %s)", (prefix,)).fetchall()]
        for name in stale:
            self.fence.admin.execute(pg_sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                pg_sql.Identifier(name)))
        return [*super().sweep_scratch(), *stale]

    def verify_backup(self, path: Path, tables: Sequence[str], progress: CopyProgress) -> str | None:
        """``pg_restore`` into a scratch database (indexes and constraints included), then each table's row count
        and checksum there and here.  The live checksums run on this transaction's connection in a second
        thread while the backup is restored and checksummed on others: both wait on the server without the
        GIL, so the two passes overlap."""
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="cutover-live-checksums") as pool:
            live_pass = pool.submit(self.checksums, tables)
            restored = self.restored_checksums(path, tables, progress)
            live = live_pass.result()  # (on an error above, leaving the pool waits for the live pass)
        for table in tables:
            want, got = live[table], restored.get(table)
            if want != got:
                return (f"table {table} has {want[0]} rows (checksum {want[1]}), the backup "
                        f"{'lacks it' if got is None else f'{got[0]} rows (checksum {got[1]})'}")
        return None

    def restored_checksums(self, path: Path, tables: Iterable[str], progress: CopyProgress) -> Checksums:
        admin = self.fence.admin  # on the maintenance database: the target refuses new connections
        scratch_name = scratch_database_prefix(str(self.url.database)) + os.urandom(4).hex()
        try:
            admin.execute(pg_sql.SQL("CREATE DATABASE {}").format(pg_sql.Identifier(scratch_name)))
        except psycopg.Error as error:
            raise BackupError(f"cannot create the scratch database to restore the backup into: "
                              f"{str(error).strip()}") from None
        try:
            scratch_url = self.url.set(database=scratch_name)
            scratch_uri, _ = _libpq(scratch_url)
            progress(0, None)
            self._run(["pg_restore", "--exit-on-error", "--no-owner", "--no-privileges", f"--dbname={scratch_uri}",
                       str(path)], f"restoring the backup {path} into a scratch database")
            with psycopg.connect(scratch_uri, password=self.url.password) as scratch:
                sums: Checksums = {}
                for table in tables:
                    row = scratch.execute(self._checksum_query(table)).fetchone()
                    if row is None:
                        raise BackupError(f"the restored backup has no table {table}")
                    sums[table] = (int(row[0]), str(row[1]))
                return sums
        except psycopg.Error as error:
            raise BackupError(f"the restored backup cannot be read: {str(error).strip()}") from None
        finally:
            with contextlib.suppress(psycopg.Error):
                admin.execute(pg_sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                    pg_sql.Identifier(scratch_name)))


def _die_with_parent() -> None:
    """In a child, before exec: ask Linux to SIGKILL it when the cutover dies, however it dies (a SIGKILL
    cannot be caught, so the cutover could not stop ``pg_dump`` or ``pg_restore`` itself)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def open_engine(url: str, timeout_seconds: float) -> CutoverEngine:
    """The engine for ``url`` (``sqlite:///PATH`` or ``postgresql[+psycopg]://…``)."""
    try:
        parsed = sa.engine.make_url(url)
    except sa.exc.ArgumentError:
        raise CutoverRefusedError(f"{url!r} is not a database URL: expected sqlite:///PATH or "
                                  "postgresql://USER@HOST/DB") from None
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        file = sqlite_file(parsed)
        if file is None:
            raise CutoverRefusedError(f"no SQLite database at {parsed.database or ''!r}: the cutover needs an "
                                      "existing database file")
        return SqliteEngine(str(file), timeout_seconds)
    if backend == "postgresql":
        return PostgresEngine(parsed, timeout_seconds)
    raise CutoverRefusedError(f"unsupported database URL {parsed.render_as_string(hide_password=True)!r}: expected "
                              "sqlite:///PATH or postgresql://USER@HOST/DB")


def keyset_pages(engine: CutoverEngine, table: str, key: str, columns: str, *, where: str = "",
                 params: tuple[Any, ...] = (), page_size: int, joins: str = "") -> Iterator[list[tuple[Any, ...]]]:
    """Rows of ``table`` (with ``joins`` appended to its FROM) in pages ordered by its single-column key, each
    page a fresh query (so the caller may update the rows between pages, and memory holds one page)."""
    condition = f" AND ({where})" if where else ""
    first = (f"SELECT {quote(key)}, {columns} FROM {quote(table)}{joins} WHERE TRUE{condition} "
             f"ORDER BY {quote(key)} LIMIT {int(page_size)}")
    statement = (f"SELECT {quote(key)}, {columns} FROM {quote(table)}{joins} WHERE {quote(key)} > ?{condition} "
                 f"ORDER BY {quote(key)} LIMIT {int(page_size)}")
    page = engine.query(first, params)
    while page:
        yield page
        page = engine.query(statement, (page[-1][0], *params))
