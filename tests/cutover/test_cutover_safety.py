"""The cutover's safety guarantees, on SQLite and PostgreSQL, with small legacy databases.

Covered (each on both engines unless said otherwise):

1. ``SIGKILL`` at the start of every step of :data:`agentfy.cutover.run.STEPS` (and once in the middle of the
   restore check: on PostgreSQL while the scratch database exists): the process dies by ``SIGKILL``, the
   database is exactly its starting state (every row of every table on SQLite; a per-table digest plus the
   constraints on PostgreSQL), a rerun succeeds and a third run changes nothing.  A successful run leaves no
   scratch database (``agentfy_cutover_check_%``) nor scratch file behind.
2. A concurrent writer: an open write transaction (SQLite ``BEGIN IMMEDIATE``; PostgreSQL a session in a
   transaction) makes the cutover refuse within seconds, never hang, and change nothing; once it is gone the
   cutover succeeds.  On PostgreSQL an idle session is enough to be refused (the message names it); on SQLite an
   idle connection does not get in the way.
3. A second cutover while one runs (the first blocked in a subprocess at a step) is refused within seconds
   (the maintenance lock on PostgreSQL, the database lock on SQLite); the first then completes and the second,
   rerun, changes nothing.
4. A backup damaged after it is written (bytes overwritten, truncated, or replaced by a valid backup of another
   state) makes the run fail with :class:`BackupError` before any row is rewritten; a later clean run succeeds.
5. The backup of a successful run restores to the starting state (legacy IDs included).
6. Refusals name the problem: unsupported URLs, a missing SQLite file (not created), a missing PostgreSQL
   database, a real run without a backup path, a URL that does not parse, a backup directory that does not
   exist, a file that is not a database, a database that is not migrated.

There is no pytest-timeout here: every subprocess wait has a timeout and every refusal asserts its elapsed time,
so a regression fails instead of hanging.
"""

from __future__ import annotations

import fcntl
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
import sqlalchemy as sa
from psycopg import sql as pg_sql
from typer.testing import CliRunner

from agentfy.cli import app
from agentfy.cutover.engines import scratch_database_prefix, scratch_directory_prefix
from agentfy.cutover.errors import BackupError, CutoverError, CutoverRefusedError
from agentfy.cutover.run import STEPS, CutoverOptions, CutoverReport, NullProgress, run_cutover
from agentfy.ids import is_canonical_id
from agentfy.store.db import Database
from agentfy.store.repos.credentials import CredentialCipher
from agentfy.store.repos.orgs import PLATFORM_ORG_ID
from tests.cutover.legacy_db import PLATFORM_LEGACY_UUID, LegacyManifest, LegacyShape, generate_legacy_database
from tests.helpers.databases import PG_ADMIN_URL

#: Every test here runs whole cutovers, most in child processes it kills or signals: about 7 s each.
pytestmark = pytest.mark.slow

SHAPE = LegacyShape(organizations=2)
KEY = CredentialCipher.generate_key()
CIPHER = CredentialCipher(KEY)
#: Seconds a subprocess may take before the test fails (it normally takes ~1-2 s).
CHILD_TIMEOUT = 90.0
#: A refusal must come within this many seconds (lock_timeout_seconds is 0.5).
REFUSAL_SECONDS = 10.0
SCRATCH_PREFIX = "agentfy_cutover_check_"
#: A leaf table (nothing refers to it) the "mismatched backup" loses a row of.
MISMATCHED_TABLE = "session_messages"

#: The cutover in a subprocess whose Progress kills it (``kill``: at the start of ``step``; ``kill-inside``: at
#: the first progress update inside ``step``) or blocks it at the start of ``step`` (``block``: writes the file
#: ``reached``, then waits for the file ``release``).
CHILD = r"""
import os, signal, sys, threading, time
from pathlib import Path

from agentfy.cutover.run import CutoverOptions, NullProgress, run_cutover
from agentfy.store.repos.credentials import CredentialCipher

url, step, mode, backup, key, reached, release = sys.argv[1:8]


class Interrupting(NullProgress):
    current = None
    armed = False

    def start(self, name, description, total=None):
        self.current = name
        if name != step:
            return
        if mode == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if mode == "block":
            Path(reached).write_text(str(os.getpid()))
            deadline = time.monotonic() + 60
            while not Path(release).exists():
                if time.monotonic() > deadline:
                    sys.exit("never released")
                time.sleep(0.02)

    def update(self, completed, total):
        if mode == "kill-inside" and self.current == step:
            os.kill(os.getpid(), signal.SIGKILL)
        if mode in ("term-later", "kill-later") and self.current == step and not self.armed:
            self.armed = True
            # while the restore (pg_restore, or SQLite's integrity check and checksums) runs
            number = signal.SIGTERM if mode == "term-later" else signal.SIGKILL
            threading.Timer(0.15, os.kill, (os.getpid(), number)).start()
            if url.startswith("sqlite"):  # its copy is done in milliseconds: be inside it when the signal comes
                time.sleep(5)


options = CutoverOptions(backup=Path(backup), cipher=CredentialCipher(bytes.fromhex(key)), lock_timeout_seconds=5)
report = run_cutover(url, options, Interrupting())
print(f"changed={report.changed_identities}")
"""


runner = CliRunner()


# -- helpers ----------------------------------------------------------------------------------------------------
def accepts_connections(url: str) -> bool:
    try:
        psycopg.connect(libpq(url), connect_timeout=5).close()
    except psycopg.OperationalError as error:
        assert "is not currently accepting connections" in str(error), str(error)
        return False
    return True


def fence_record(url: str) -> list[Any]:
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        return admin.execute("SELECT r.setconfig FROM pg_db_role_setting AS r JOIN pg_database AS d "
                             "ON d.oid = r.setdatabase WHERE d.datname = %s", (database_name(url),)).fetchall()


def is_sqlite(url: str) -> bool:
    return sa.engine.make_url(url).get_backend_name() == "sqlite"


def sqlite_file(url: str) -> Path:
    return Path(sa.engine.make_url(url).database or "")


def libpq(url: str) -> str:
    return sa.engine.make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def database_name(url: str) -> str:
    return str(sa.engine.make_url(url).database)


def snapshot(url: str) -> dict[str, Any]:
    """Everything a run could change: every row of every table (SQLite) or a digest of every table's rows and
    the constraints and indexes (PostgreSQL).  Opens and closes its own connection."""
    if is_sqlite(url):
        connection = sqlite3.connect(sqlite_file(url))
        try:
            state: dict[str, Any] = {"schema": connection.execute(
                "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name").fetchall()}
            tables = [name for (name,) in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
            for table in tables:
                state[table] = sorted(connection.execute(f'SELECT * FROM "{table}"').fetchall(), key=repr)
            return state
        finally:
            connection.close()
    with psycopg.connect(libpq(url), autocommit=True) as connection:
        state = {
            # Parentheses and spaces aside: a CHECK restored by pg_restore deparses with other parentheses.
            "constraints": connection.execute(
                "SELECT conrelid::regclass::text, conname, translate(pg_get_constraintdef(oid), '() ', '') "
                "FROM pg_constraint WHERE connamespace = 'public'::regnamespace ORDER BY 1, 2").fetchall(),
            "indexes": connection.execute(
                "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' "
                "ORDER BY 1, 2").fetchall(),
        }
        tables = [name for (name,) in connection.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")]
        for table in tables:
            state[table] = connection.execute(pg_sql.SQL(
                "SELECT count(*), coalesce(md5(string_agg(md5(t::text), ',' ORDER BY md5(t::text))), '') "
                "FROM {} AS t").format(pg_sql.Identifier(table))).fetchone()
        return state


def organization_ids(url: str) -> set[str]:
    if is_sqlite(url):
        connection = sqlite3.connect(sqlite_file(url))
        try:
            return {str(value) for (value,) in connection.execute("SELECT id FROM organizations")}
        finally:
            connection.close()
    with psycopg.connect(libpq(url), autocommit=True) as connection:
        return {str(value) for (value,) in connection.execute("SELECT id FROM organizations")}


def platform_setting(url: str, name: str) -> str | None:
    statement = "SELECT value FROM platform_settings WHERE name = "
    if is_sqlite(url):
        connection = sqlite3.connect(sqlite_file(url))
        try:
            row = connection.execute(statement + "?", (name,)).fetchone()
        finally:
            connection.close()
    else:
        with psycopg.connect(libpq(url), autocommit=True) as pg:
            row = pg.execute(statement + "%s", (name,)).fetchone()
    return None if row is None else str(row[0])


def other_sessions(url: str) -> list[tuple[Any, ...]]:
    """Client sessions connected to ``url``'s database, seen from the admin database (not from it)."""
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        return admin.execute("SELECT pid, application_name, state FROM pg_stat_activity WHERE datname = %s "
                             "AND backend_type = 'client backend'", (database_name(url),)).fetchall()


def wait_until_alone(url: str, timeout: float = 15.0) -> None:
    """On PostgreSQL, wait until no session is connected to the database: a closed (or killed) client's backend
    leaves ``pg_stat_activity`` a moment after the client is gone, and the cutover refuses while it is listed."""
    if is_sqlite(url):
        return
    deadline = time.monotonic() + timeout
    while sessions := other_sessions(url):
        if time.monotonic() > deadline:
            pytest.fail(f"sessions still connected to {database_name(url)} after {timeout} s: {sessions}")
        time.sleep(0.05)


def scratch_directories(url: str) -> list[Path]:
    """The scratch directories of runs on the database at ``url`` (beside a SQLite file, in the temporary
    directory for PostgreSQL)."""
    if is_sqlite(url):
        return sorted(sqlite_file(url).parent.glob(scratch_directory_prefix(str(sqlite_file(url).resolve())) + "*"))
    identity = sa.engine.make_url(url).set(drivername="postgresql").render_as_string(hide_password=True)
    return sorted(Path(tempfile.gettempdir()).glob(scratch_directory_prefix(identity) + "*"))


def processes_naming(text: str) -> list[int]:
    """Processes whose command line contains ``text`` (a pg_dump or pg_restore of a given backup)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def scratch_databases(url: str) -> set[str]:
    """The scratch databases of restore checks of the database at ``url``: named after it, so other test runs
    sharing the server do not count."""
    prefix = scratch_database_prefix(database_name(url))
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        return {str(name) for (name,) in admin.execute(
            "SELECT datname FROM pg_database WHERE starts_with(datname, %s)", (prefix,))}


def options(backup: Path | None, **extra: Any) -> CutoverOptions:
    return CutoverOptions(backup=backup, cipher=CIPHER, **extra)


def cutover(url: str, backup: Path | None, progress: Any = None, **extra: Any) -> CutoverReport:
    """One in-process run, once every other session is gone."""
    wait_until_alone(url)
    return run_cutover(url, options(backup, **extra), progress)


def spawn(url: str, step: str, mode: str, backup: Path, signals: Path) -> subprocess.Popen[str]:
    wait_until_alone(url)
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, url, step, mode, str(backup), KEY.hex(), str(signals / "reached"),
         str(signals / "release")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(child: subprocess.Popen[str]) -> tuple[str, str]:
    try:
        return child.communicate(timeout=CHILD_TIMEOUT)
    except subprocess.TimeoutExpired:
        child.kill()
        _out, err = child.communicate(timeout=30)
        pytest.fail(f"the cutover subprocess did not finish in {CHILD_TIMEOUT} s; stderr:\n{err}")


def wait_for_file(path: Path, child: subprocess.Popen[str], timeout: float = CHILD_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if child.poll() is not None:
            _out, err = child.communicate(timeout=30)
            pytest.fail(f"the cutover subprocess exited ({child.returncode}) before it reached the step:\n{err}")
        if time.monotonic() > deadline:
            pytest.fail(f"the cutover subprocess did not reach the step in {timeout} s")
        time.sleep(0.02)


class Hook(NullProgress):
    """A Progress that calls ``action`` when ``step`` starts."""

    def __init__(self, step: str, action: Callable[[], None]) -> None:
        self.step = step
        self.action = action
        self.seen: list[str] = []

    def start(self, step: str, description: str, total: int | None = None) -> None:
        self.seen.append(step)
        if step == self.step:
            self.action()


@dataclass
class Legacy:
    url: str
    manifest: LegacyManifest
    start: dict[str, Any]

    @property
    def sqlite(self) -> bool:
        return is_sqlite(self.url)

    @property
    def identities(self) -> int:
        return sum(self.manifest.identity_counts.values())

    def assert_unchanged(self) -> None:
        assert snapshot(self.url) == self.start, "the database is not in its starting state"
        assert organization_ids(self.url) == set(self.manifest.identities["organizations"])
        assert PLATFORM_LEGACY_UUID in organization_ids(self.url)

    def assert_cut_over(self) -> None:
        ids = organization_ids(self.url)
        assert PLATFORM_ORG_ID in ids
        assert all(is_canonical_id(value, "org") for value in ids), ids


@pytest.fixture
def legacy(db_url: str) -> Iterator[Legacy]:
    """A small legacy database on each engine, with no session left connected to it."""
    db = Database(db_url)
    try:
        manifest = generate_legacy_database(db, SHAPE, seed=7, cipher=CIPHER)
    finally:
        db.dispose()
    wait_until_alone(db_url)
    yield Legacy(db_url, manifest, snapshot(db_url))


@pytest.fixture
def backups(tmp_path: Path) -> Path:
    path = tmp_path / "backups"
    path.mkdir()
    return path


def assert_succeeds_then_idempotent(legacy: Legacy, backups: Path, name: str = "rerun.bak") -> None:
    """A run changes every identity, leaves no scratch behind, and a run after it changes nothing."""
    scratch_before = set() if legacy.sqlite else scratch_databases(legacy.url)
    files_before = set(backups.iterdir())
    report = cutover(legacy.url, backups / name)
    assert report.changed_identities == legacy.identities > 0
    assert report.hops == report.changed_identities
    legacy.assert_cut_over()
    if legacy.sqlite:
        assert set(backups.iterdir()) - files_before == {backups / name}, "scratch files left behind"
    else:
        assert scratch_databases(legacy.url) - scratch_before == set(), "scratch databases left behind"
    after = snapshot(legacy.url)
    assert after != legacy.start
    third = cutover(legacy.url, backups / "third.bak")
    assert third.changed_identities == 0
    assert snapshot(legacy.url) == after


# -- 1. SIGKILL at each step ------------------------------------------------------------------------------------
@pytest.mark.parametrize("where", [*STEPS, "backup:inside", "restore-check:inside"])
def test_sigkill_at_any_step_leaves_the_starting_state(legacy: Legacy, backups: Path, tmp_path: Path,
                                                       where: str) -> None:
    """``where`` is a step (killed as it starts) or ``step:inside`` (killed at its first progress update: on
    SQLite while the backup is being written or checked, on PostgreSQL just before ``pg_dump`` or just
    after the scratch database was created)."""
    step, _, inside = where.partition(":")
    backup = backups / "killed.bak"
    child = spawn(legacy.url, step, "kill-inside" if inside else "kill", backup, tmp_path)
    out, err = finish(child)
    assert child.returncode == -signal.SIGKILL, f"exit {child.returncode}\nstdout: {out}\nstderr: {err}"
    assert "changed=" not in out

    wait_until_alone(legacy.url, timeout=30)  # the killed client's backend goes away on its own
    if not legacy.sqlite and STEPS.index(step) > STEPS.index("lock"):
        # Killed while new connections were refused: they stay refused until the fence is lifted (here by the
        # documented command; a rerun lifts it too, see below).
        assert not accepts_connections(legacy.url)
        lifted = runner.invoke(app, ["cutover", "unfence", "--database-url", legacy.url])
        assert lifted.exit_code == 0 and "lifted the fence" in lifted.stdout, lifted.output
        assert accepts_connections(legacy.url)
    legacy.assert_unchanged()
    # A backup has its name only once it is complete (it is written as <name>.partial, then renamed).
    assert backup.exists() == (STEPS.index(step) > STEPS.index("backup"))
    if legacy.sqlite:
        # What a kill may leave beside the backup: the backup, or its .partial (scratch goes elsewhere).
        leftovers = {path.name for path in backups.iterdir()}
        assert leftovers <= {"killed.bak", "killed.bak.partial"}, leftovers
    else:
        leaked = scratch_databases(legacy.url)
        if inside and step == "restore-check":
            # Killed between CREATE DATABASE and DROP DATABASE: the scratch copy outlives the process; the next
            # run of the cutover on this database drops it (checked below).
            assert len(leaked) == 1, leaked
        else:
            assert leaked == set(), f"a kill at {where} left scratch databases: {leaked}"
    # The next run with the same backup path cleans up what the killed one left.
    run = cutover(legacy.url, backup)
    assert run.changed_identities == legacy.identities
    legacy.assert_cut_over()
    assert {path.name for path in backups.iterdir()} == {"killed.bak"}
    assert scratch_directories(legacy.url) == []
    if not legacy.sqlite:
        assert scratch_databases(legacy.url) == set()
    assert cutover(legacy.url, backups / "again.bak").changed_identities == 0


# -- 2. a concurrent writer -------------------------------------------------------------------------------------
def test_an_open_write_transaction_makes_the_cutover_refuse(legacy: Legacy, backups: Path) -> None:
    if legacy.sqlite:
        writer: Any = sqlite3.connect(sqlite_file(legacy.url), isolation_level=None)
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("INSERT INTO platform_settings (name, value) VALUES ('concurrent-writer', 'x')")
        expected = ["locked by another writer", "waited 0.5 s"]
    else:
        writer = psycopg.connect(libpq(legacy.url), application_name="concurrent-writer")
        writer.execute("INSERT INTO platform_settings (name, value) VALUES ('concurrent-writer', 'x')")
        expected = ["1 other session(s) are connected", "concurrent-writer idle in transaction"]
    try:
        started = time.monotonic()
        with pytest.raises(CutoverRefusedError) as refused:
            run_cutover(legacy.url, options(backups / "refused.bak", lock_timeout_seconds=0.5))
        assert time.monotonic() - started < REFUSAL_SECONDS
        assert all(part in str(refused.value) for part in expected), str(refused.value)
        assert not (backups / "refused.bak").exists()
        legacy.assert_unchanged()  # the writer's row is not committed, and the cutover wrote nothing
        writer.commit()
    finally:
        writer.close()
    legacy.start = snapshot(legacy.url)  # now with the writer's row
    assert_succeeds_then_idempotent(legacy, backups)
    assert platform_setting(legacy.url, "concurrent-writer") == "x"  # the writer's committed row is kept


def test_an_idle_session_refuses_on_postgresql_not_on_sqlite(legacy: Legacy, backups: Path) -> None:
    if legacy.sqlite:
        idle: Any = sqlite3.connect(sqlite_file(legacy.url), isolation_level=None)
    else:
        idle = psycopg.connect(libpq(legacy.url), application_name="idle-bystander", autocommit=True)
    try:
        idle.execute("SELECT 1").fetchall()
        if legacy.sqlite:
            # Only writers conflict on SQLite: an idle connection does not stop the cutover.
            report = run_cutover(legacy.url, options(backups / "idle.bak", lock_timeout_seconds=0.5))
            assert report.changed_identities == legacy.identities
            legacy.assert_cut_over()
            return
        pid = idle.info.backend_pid
        started = time.monotonic()
        with pytest.raises(CutoverRefusedError) as refused:
            run_cutover(legacy.url, options(backups / "refused.bak", lock_timeout_seconds=0.5))
        assert time.monotonic() - started < REFUSAL_SECONDS
        message = str(refused.value)
        assert "1 other session(s) are connected" in message
        assert f"pid {pid} idle-bystander" in message
        assert not (backups / "refused.bak").exists()
        legacy.assert_unchanged()
    finally:
        idle.close()
    assert_succeeds_then_idempotent(legacy, backups)


# -- 3. a second cutover while one runs --------------------------------------------------------------------------
@pytest.mark.parametrize("block_at", ["plan", "check"])
def test_a_second_cutover_is_refused_while_one_runs(legacy: Legacy, backups: Path, tmp_path: Path,
                                                    block_at: str) -> None:
    signals = tmp_path / "signals"
    signals.mkdir()
    child = spawn(legacy.url, block_at, "block", backups / "first.bak", signals)
    try:
        wait_for_file(signals / "reached", child)
        started = time.monotonic()
        with pytest.raises(CutoverRefusedError) as refused:
            run_cutover(legacy.url, options(backups / "second.bak", lock_timeout_seconds=0.5))
        assert time.monotonic() - started < REFUSAL_SECONDS
        expected = "the maintenance lock of" if legacy.sqlite else "another cutover is running"
        assert expected in str(refused.value)
        assert not (backups / "second.bak").exists()
        (signals / "release").touch()
        out, err = finish(child)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=30)
    assert child.returncode == 0, f"the first cutover failed ({child.returncode}):\n{err}"
    assert f"changed={legacy.identities}" in out
    legacy.assert_cut_over()
    after = snapshot(legacy.url)
    assert cutover(legacy.url, backups / "second.bak").changed_identities == 0
    assert snapshot(legacy.url) == after


# -- 4. a damaged backup aborts before any rewrite ---------------------------------------------------------------
def _mismatched_backup(legacy: Legacy, request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """A valid backup (the engine's own format) of the database with one row of MISMATCHED_TABLE deleted."""
    if legacy.sqlite:
        other = tmp_path / "other.db"
        source, target = sqlite3.connect(sqlite_file(legacy.url)), sqlite3.connect(other)
        try:
            source.backup(target)
            target.execute(f"DELETE FROM {MISMATCHED_TABLE} WHERE rowid = (SELECT min(rowid) FROM {MISMATCHED_TABLE})")
            target.commit()
            target.execute("PRAGMA journal_mode = DELETE")
        finally:
            source.close()
            target.close()
        return other
    databases = request.getfixturevalue("pg_databases")
    name = databases.create("agentfy_test_mismatch")
    other_url = libpq(databases.url(name))
    full, dump = tmp_path / "full.dump", tmp_path / "other.dump"
    subprocess.run(["pg_dump", "--format=custom", f"--file={full}", f"--dbname={libpq(legacy.url)}"],
                   check=True, capture_output=True, timeout=CHILD_TIMEOUT)
    subprocess.run(["pg_restore", "--exit-on-error", "--no-owner", "--no-privileges",
                    f"--dbname={other_url}", str(full)], check=True, capture_output=True, timeout=CHILD_TIMEOUT)
    with psycopg.connect(other_url, autocommit=True) as connection:
        deleted = connection.execute(f"DELETE FROM {MISMATCHED_TABLE} WHERE ctid = "
                                     f"(SELECT ctid FROM {MISMATCHED_TABLE} LIMIT 1)").rowcount
        assert deleted == 1
    subprocess.run(["pg_dump", "--format=custom", f"--file={dump}", f"--dbname={other_url}"],
                   check=True, capture_output=True, timeout=CHILD_TIMEOUT)
    databases.drop(name)
    return dump


@pytest.mark.parametrize("damage", ["overwrite-middle", "truncate", "mismatched"])
def test_a_damaged_backup_aborts_before_any_rewrite(legacy: Legacy, backups: Path, tmp_path: Path,
                                                    request: pytest.FixtureRequest, damage: str) -> None:
    backup = backups / "damaged.bak"
    replacement = _mismatched_backup(legacy, request, tmp_path) if damage == "mismatched" else None
    scratch_before = set() if legacy.sqlite else scratch_databases(legacy.url)

    def spoil() -> None:
        assert backup.is_file(), "the backup step did not write the backup"
        size = backup.stat().st_size
        if damage == "overwrite-middle":
            with backup.open("r+b") as file:
                file.seek(size // 4)
                file.write(b"\xa5" * (size // 2))
        elif damage == "truncate":
            with backup.open("r+b") as file:
                file.truncate(size // 2)
        else:
            assert replacement is not None
            shutil.copyfile(replacement, backup)

    progress = Hook("restore-check", spoil)
    started = time.monotonic()
    with pytest.raises(BackupError) as failed:
        cutover(legacy.url, backup, progress)
    assert time.monotonic() - started < 60
    assert progress.seen[-1] == "restore-check"  # stopped there: no credentials, json or ids step started
    message = str(failed.value)
    assert str(backup) in message
    if damage == "mismatched":
        assert f"table {MISMATCHED_TABLE} has" in message, message
        assert "nothing was changed" in message
    wait_until_alone(legacy.url)
    legacy.assert_unchanged()
    if not legacy.sqlite:
        assert scratch_databases(legacy.url) - scratch_before == set(), "the failed check left a scratch database"
    backup.unlink()
    assert_succeeds_then_idempotent(legacy, backups)


@pytest.mark.parametrize("change", [
    "integer-as-real", "integer-as-text", "text-as-blob", "after-a-nul", "another-real", "case", "moved-rowid",
    "extra-row", "missing-row", "schema", "no-change",
])
def test_the_sqlite_restore_check_finds_any_value_that_differs(tmp_path: Path, change: str) -> None:
    """The SQLite restore check compares the backup with the database value by value: a value of another
    storage class, bytes past a NUL, the last bit of a real, letter case, a different rowid, a row more or
    less, or another schema is a difference, whatever the column's declared type."""
    from agentfy.cutover.engines import SqliteEngine

    live, backup = tmp_path / "live.db", tmp_path / "backup.db"
    with sqlite3.connect(live) as connection:
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute("CREATE TABLE t (n INTEGER, r FLOAT, s TEXT, b BLOB, any_value)")
        connection.execute("INSERT INTO t VALUES (1, 0.0, 'a' || char(0) || 'b', x'00ff', 7), "
                           "(2, 0.5, 'Same', NULL, 'x')")
    with sqlite3.connect(live) as source, sqlite3.connect(backup) as target:
        source.backup(target)
    changes = {
        "integer-as-real": "UPDATE t SET any_value = 7.0 WHERE n = 1",
        "integer-as-text": "UPDATE t SET any_value = '7' WHERE n = 1",
        "text-as-blob": "UPDATE t SET s = CAST(s AS BLOB) WHERE n = 2",
        "after-a-nul": "UPDATE t SET s = 'a' || char(0) || 'c' WHERE n = 1",
        "another-real": "UPDATE t SET r = 0.5000000000000001 WHERE n = 2",
        "case": "UPDATE t SET s = 'same' WHERE n = 2",
        "moved-rowid": "UPDATE t SET rowid = 10 WHERE n = 2",
        "extra-row": "INSERT INTO t VALUES (3, NULL, NULL, NULL, NULL)",
        "missing-row": "DELETE FROM t WHERE n = 2",
        "schema": "CREATE INDEX t_n ON t (n)",
        "no-change": "SELECT 1",
    }
    with sqlite3.connect(backup) as connection:
        connection.execute(changes[change])
    engine = SqliteEngine(str(live), 5.0)
    try:
        difference = engine.verify_backup(backup, ["t"], lambda done, total: None)
    finally:
        engine.close()
    if change == "no-change":
        assert difference is None
    elif change == "schema":
        assert difference is not None and "schema" in difference, difference
    else:
        assert difference is not None and difference.startswith("table t has "), difference


# -- 5. the backup restores the starting state -------------------------------------------------------------------
def test_the_backup_restores_the_starting_state(legacy: Legacy, backups: Path,
                                                request: pytest.FixtureRequest) -> None:
    backup = backups / "pre-cutover.bak"
    report = cutover(legacy.url, backup)
    assert report.changed_identities == legacy.identities
    assert report.backup == backup and backup.is_file()
    legacy.assert_cut_over()
    assert not list(backups.glob("*.partial"))
    if legacy.sqlite:
        restored_url = f"sqlite:///{backup}"
        assert snapshot(restored_url) == legacy.start
        assert not Path(f"{backup}-wal").exists()  # one self-contained file
    else:
        databases = request.getfixturevalue("pg_databases")
        name = databases.create("agentfy_test_restored")
        restored_url = databases.url(name)
        subprocess.run(["pg_restore", "--exit-on-error", "--no-owner", "--no-privileges",
                        f"--dbname={libpq(restored_url)}", str(backup)],
                       check=True, capture_output=True, timeout=CHILD_TIMEOUT)
        try:
            assert snapshot(restored_url) == legacy.start
            assert organization_ids(restored_url) == set(legacy.manifest.identities["organizations"])
        finally:
            databases.drop(name)
        return
    assert organization_ids(restored_url) == set(legacy.manifest.identities["organizations"])


# -- 6. refusals name the problem --------------------------------------------------------------------------------
@pytest.mark.parametrize("url", ["mysql://agentfy@127.0.0.1/agentfy", "mongodb://127.0.0.1/agentfy",
                                 "oracle+oracledb://agentfy@127.0.0.1/agentfy"])
def test_an_unsupported_url_is_refused(url: str, tmp_path: Path) -> None:
    with pytest.raises(CutoverRefusedError, match="unsupported database URL"):
        run_cutover(url, options(tmp_path / "b.bak"))
    assert not (tmp_path / "b.bak").exists()


def test_a_url_that_does_not_parse_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CutoverError, match="not a url"):
        run_cutover("not a url", options(tmp_path / "b.bak"))


@pytest.mark.parametrize("relative", ["missing.db", "missing-dir/agentfy.db"])
def test_a_missing_sqlite_file_is_refused_and_not_created(tmp_path: Path, relative: str) -> None:
    path = tmp_path / relative
    with pytest.raises(CutoverRefusedError) as refused:
        run_cutover(f"sqlite:///{path}", options(tmp_path / "b.bak"))
    assert str(path) in str(refused.value)
    assert not path.exists() and not path.parent.joinpath(path.name + "-wal").exists()
    assert not (tmp_path / "b.bak").exists()


def test_an_in_memory_sqlite_database_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CutoverRefusedError, match="needs an existing database file"):
        run_cutover("sqlite://", options(tmp_path / "b.bak"))


def test_a_missing_postgresql_database_is_refused(pg_server: str, tmp_path: Path) -> None:
    url = sa.engine.make_url(pg_server).set(database="agentfy_no_such_database").render_as_string(
        hide_password=False)
    with pytest.raises(CutoverRefusedError) as refused:
        run_cutover(url, options(tmp_path / "b.bak"))
    assert "agentfy_no_such_database" in str(refused.value)


def test_a_real_run_needs_a_backup_path(legacy: Legacy, backups: Path) -> None:
    with pytest.raises(CutoverError, match="a backup path is required"):
        cutover(legacy.url, None)
    legacy.assert_unchanged()
    dry = cutover(legacy.url, None, dry_run=True)  # a dry run backs up to a temporary file
    assert dry.dry_run and dry.changed_identities == legacy.identities and dry.backup is None
    legacy.assert_unchanged()
    assert list(backups.iterdir()) == []


def test_a_backup_path_in_a_missing_directory_is_a_backup_error(legacy: Legacy, backups: Path) -> None:
    backup = backups / "no-such-dir" / "b.bak"
    with pytest.raises(BackupError) as failed:
        try:
            cutover(legacy.url, backup)
        finally:
            legacy.assert_unchanged()
    assert str(backup) in str(failed.value)


def test_a_sqlite_file_that_is_not_a_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("not a database\n" * 400)
    try:
        with pytest.raises(CutoverError) as refused:
            run_cutover(f"sqlite:///{path}", options(tmp_path / "b.bak"))
        assert str(path) in str(refused.value)
    finally:
        assert path.read_text() == "not a database\n" * 400


def test_an_unmigrated_database_is_refused(db_url: str, backups: Path, request: pytest.FixtureRequest) -> None:
    if is_sqlite(db_url):
        path = sqlite_file(db_url).with_name("empty.db")
        sqlite3.connect(path).close()
        url = f"sqlite:///{path}"
    else:
        databases = request.getfixturevalue("pg_databases")
        url = databases.url(databases.create("agentfy_test_unmigrated"))
    with pytest.raises(CutoverError, match="agentfy db upgrade"):
        cutover(url, backups / "b.bak")


# -- 7. writers are fenced for the whole run -------------------------------------------------------------------
def test_writers_that_connect_during_the_run_are_kept_out(legacy: Legacy, backups: Path, tmp_path: Path) -> None:
    """PostgreSQL: new connections are refused from the lock to the end (and the fence cannot be lifted from
    outside while the run is alive); SQLite: the exclusive lock and the maintenance lock are held from the
    start, so a writer times out and a starting agentfy process waits.  Afterwards both accept writers."""
    signals = tmp_path / "signals"
    signals.mkdir()
    child = spawn(legacy.url, "plan", "block", backups / "fenced.bak", signals)
    try:
        wait_for_file(signals / "reached", child)
        if legacy.sqlite:
            writer = sqlite3.connect(sqlite_file(legacy.url), timeout=0.3)
            with pytest.raises(sqlite3.OperationalError, match="database is locked"):
                writer.execute("INSERT INTO platform_settings (name, value) VALUES ('late-writer', 'x')")
            writer.close()
            with sqlite_file(legacy.url).open("rb") as handle, pytest.raises(BlockingIOError):
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)  # agentfy's start-up would wait here
        else:
            assert not accepts_connections(legacy.url)
            assert fence_record(legacy.url)
            busy = runner.invoke(app, ["cutover", "unfence", "--database-url", legacy.url, "--timeout", "0.5"])
            assert busy.exit_code == 1 and "another cutover is running" in busy.stderr
        (signals / "release").touch()
        out, err = finish(child)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=30)
    assert child.returncode == 0, err
    assert f"changed={legacy.identities}" in out
    if not legacy.sqlite:
        assert accepts_connections(legacy.url) and fence_record(legacy.url) == []
    legacy.assert_cut_over()
    assert platform_setting(legacy.url, "late-writer") is None


def test_a_rerun_after_a_sigkill_lets_connections_in_again(legacy: Legacy, backups: Path, tmp_path: Path) -> None:
    """Killed while connections were refused: the next run lifts the fence itself, runs, and leaves the
    database accepting connections."""
    child = spawn(legacy.url, "json", "kill", backups / "killed.bak", tmp_path)
    finish(child)
    assert child.returncode == -signal.SIGKILL
    wait_until_alone(legacy.url, timeout=30)
    if not legacy.sqlite:
        assert not accepts_connections(legacy.url)
    assert cutover(legacy.url, backups / "rerun.bak").changed_identities == legacy.identities
    if not legacy.sqlite:
        assert accepts_connections(legacy.url) and fence_record(legacy.url) == []
    legacy.assert_cut_over()
    nothing = runner.invoke(app, ["cutover", "unfence", "--database-url", legacy.url])
    assert nothing.exit_code == 0 and "no fence" in nothing.stdout


# -- 8. signals and children --------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["term-later", "kill-later"])
def test_a_signal_during_the_restore_check_leaves_no_child_and_no_scratch(legacy: Legacy, backups: Path,
                                                                         tmp_path: Path, mode: str) -> None:
    """SIGTERM: the run rolls back, kills pg_restore, drops its scratch and lifts the fence before exiting.
    SIGKILL: pg_restore dies with it (it was started to), and the next run sweeps the scratch it left."""
    backup = backups / "signalled.bak"
    child = spawn(legacy.url, "restore-check", mode, backup, tmp_path)
    out, err = finish(child)
    assert "changed=" not in out
    deadline = time.monotonic() + 10
    while processes_naming(str(backup)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_naming(str(backup)) == [], "a pg_dump or pg_restore outlived the cutover"
    wait_until_alone(legacy.url, timeout=30)
    if mode == "term-later":
        assert child.returncode == 1 and "stopped by SIGTERM" in err, err
        assert scratch_directories(legacy.url) == []
        if not legacy.sqlite:
            assert accepts_connections(legacy.url) and scratch_databases(legacy.url) == set()
    else:
        assert child.returncode == -signal.SIGKILL
    run = cutover(legacy.url, backups / "next.bak")  # sweeps what a kill left, lifts a fence
    assert run.changed_identities == legacy.identities
    assert scratch_directories(legacy.url) == []
    if not legacy.sqlite:
        assert scratch_databases(legacy.url) == set() and accepts_connections(legacy.url)
