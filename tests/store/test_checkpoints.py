"""SQLite's WAL is checkpointed by a thread of the process, never inside a request's commit; a disposed
database leaves no connection behind (so SQLite folds the log into the file), and a forked child checkpoints
on a connection of its own."""

from __future__ import annotations

import os
import time
from pathlib import Path

from agentfy.store.checkpoints import CHECKPOINTER
from agentfy.store.db import Database, create_engine

BLOB = "x" * 3000  # about one page a row: 1,500 rows are past SQLite's automatic checkpoint of 1,000 pages


def _write_pages(db: Database, rows: int = 1500) -> None:
    with db.transaction() as tx:
        tx.execute("CREATE TABLE IF NOT EXISTS probe (body TEXT NOT NULL)")
    for start in range(0, rows, 100):
        with db.transaction() as tx:
            for _ in range(min(100, rows - start)):
                tx.execute("INSERT INTO probe (body) VALUES (:body)", {"body": BLOB})


def _file(db: Database) -> Path:
    return Path(str(db.engine.url.database))


def test_a_commit_never_checkpoints_and_the_checkpointer_does(sqlite_db: Database) -> None:
    assert sqlite_db._checkpoints is not None
    CHECKPOINTER.discard(sqlite_db._checkpoints)  # this test takes the thread's place, to see each step
    with sqlite_db.transaction(write=False) as tx:
        assert tx.scalar("PRAGMA wal_autocheckpoint") == 0
    before = _file(sqlite_db).stat().st_size
    _write_pages(sqlite_db)
    # 1,500 pages committed, still in the log (the thread may have taken a last pass at the small log it saw
    # before this test took its place)
    assert _file(sqlite_db).stat().st_size < before + 100 * 4096
    sqlite_db._checkpoints.checkpoint()
    assert _file(sqlite_db).stat().st_size > before + 1000 * 3000
    with sqlite_db.transaction(write=False) as tx:
        assert tx.scalar("SELECT count(*) FROM probe") == 1500


def test_the_process_thread_checkpoints_an_open_database(sqlite_db: Database) -> None:
    before = _file(sqlite_db).stat().st_size
    _write_pages(sqlite_db)
    deadline = time.monotonic() + 20
    while _file(sqlite_db).stat().st_size <= before + 1000 * 3000 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _file(sqlite_db).stat().st_size > before + 1000 * 3000


def test_a_disposed_database_leaves_no_connection_so_the_log_is_folded_in(sqlite_db: Database) -> None:
    _write_pages(sqlite_db, rows=200)
    assert sqlite_db._checkpoints is not None
    sqlite_db._checkpoints.checkpoint()  # its own connection is open now
    sqlite_db.dispose()
    assert not Path(f"{_file(sqlite_db)}-wal").exists()  # SQLite removes the log when its last connection closes
    again = Database(sqlite_db.url)
    try:
        with again.transaction(write=False) as tx:
            assert tx.scalar("SELECT count(*) FROM probe") == 200
    finally:
        again.dispose()


def test_an_engine_of_its_own_checkpoints_as_sqlite_does(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'own.db'}")
    try:
        with engine.connect() as connection:
            assert connection.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == 1000
    finally:
        engine.dispose()


def test_a_forked_child_checkpoints_on_a_connection_of_its_own(sqlite_db: Database) -> None:
    assert sqlite_db._checkpoints is not None
    CHECKPOINTER.discard(sqlite_db._checkpoints)
    sqlite_db._checkpoints.checkpoint()  # the parent's connection is open
    parents = sqlite_db._checkpoints._connection
    before = _file(sqlite_db).stat().st_size
    _write_pages(sqlite_db)
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports by its exit status
        try:
            checkpoints = sqlite_db._checkpoints
            checkpoints.checkpoint()
            mine = checkpoints._connection
            os._exit(0 if mine is not None and mine is not parents else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert _file(sqlite_db).stat().st_size > before + 1000 * 3000  # the child's checkpoint reached the file
    assert sqlite_db._checkpoints._connection is parents  # and the parent's connection is still its own


def test_a_removed_file_is_neither_made_again_nor_retried(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'gone.db'}")
    try:
        assert db._checkpoints is not None
        CHECKPOINTER.discard(db._checkpoints)
        db._connections.close_all()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{tmp_path / 'gone.db'}{suffix}").unlink(missing_ok=True)
        db._checkpoints.checkpoint()
        assert not (tmp_path / "gone.db").exists()
        assert db._checkpoints._closed
    finally:
        db.dispose()
