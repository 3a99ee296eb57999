"""SQLite's WAL checkpoints, taken off the requests: one background thread per process checkpoints every open
SQLite database file of the process, about once a second.

In WAL mode a commit appends to the write-ahead log; a *checkpoint* copies the log back into the database file
and syncs it.  By default SQLite checkpoints automatically, inside whichever commit finds the log past 1,000
pages: that request pays the copy and the ``fsync`` (measured: ~2 ms on the p99 of a streamed message's
first token).  The store's connections switch that off (``PRAGMA wal_autocheckpoint = 0``) and this thread
runs ``PRAGMA wal_checkpoint(PASSIVE)`` instead, on a connection of its own: a passive checkpoint never waits
for readers or writers and copies what it can, so a busy database is checkpointed over the next passes.

What stays as it was: the last connection to a file that closes still checkpoints it and removes the log
(SQLite does that itself), so a process that only runs a command leaves the file whole; every other process
on the file checkpoints it too.  A checkpoint that fails is logged and tried again on the next pass (a log
that is not checkpointed only grows; nothing is lost).  After ``fork()`` the child starts its own thread when
it first needs one and never uses the parent's connections.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
import time
import weakref
from pathlib import Path
from typing import Final

logger: Final = logging.getLogger("agentfy.store")

#: Seconds between two passes of the checkpointing thread.
INTERVAL_SECONDS: Final = 1.0


class FileCheckpoints:
    """The checkpoints of one SQLite database file, on a connection opened on first use."""

    def __init__(self, file: Path) -> None:
        self._file = file
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        self._pid = os.getpid()
        self._closed = False

    def checkpoint(self) -> None:
        """One passive checkpoint (from the checkpointing thread); a failure is logged, not raised."""
        with self._lock:
            if self._closed:
                return
            if self._pid != os.getpid():  # a forked child: the parent's connection is not ours to use
                self._connection, self._pid = None, os.getpid()
            try:
                if self._connection is None:
                    # Read-write, never create: a file removed under a database still open is not made again.
                    self._connection = sqlite3.connect(f"{self._file.resolve().as_uri()}?mode=rw", uri=True,
                                                       isolation_level=None, check_same_thread=False)
                    self._connection.execute("PRAGMA busy_timeout = 0")  # never wait: the next pass will do
                self._connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            except sqlite3.Error as error:
                self._drop()
                if not self._file.exists():  # removed (a test's scratch file): nothing left to checkpoint
                    self._closed = True
                    return
                logger.warning("store.checkpoint_failed", extra={"error": type(error).__name__})

    def close(self) -> None:
        """No more checkpoints; the connection is closed (the database is being disposed of)."""
        CHECKPOINTER.discard(self)
        with self._lock:
            self._closed = True
            self._drop()

    def _drop(self) -> None:
        if self._connection is not None and self._pid == os.getpid():
            with contextlib.suppress(sqlite3.Error):  # a connection SQLite refuses to close is let go
                self._connection.close()
        self._connection = None


class _Checkpointer:
    """The process's checkpointing thread and the files it serves (held weakly: a collected database's file
    is no longer checkpointed here)."""

    def __init__(self) -> None:
        self._files: weakref.WeakSet[FileCheckpoints] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def add(self, files: FileCheckpoints) -> None:
        with self._lock:
            self._files.add(files)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="agentfy-sqlite-checkpoints", daemon=True)
                self._thread.start()

    def discard(self, files: FileCheckpoints) -> None:
        with self._lock:
            self._files.discard(files)

    def _run(self) -> None:
        while True:
            time.sleep(INTERVAL_SECONDS)
            with self._lock:
                files = list(self._files)
            for each in files:
                each.checkpoint()

    def forget_thread(self) -> None:
        """After ``fork()``: the parent's thread does not exist in the child."""
        self._lock = threading.Lock()
        self._thread = None


CHECKPOINTER: Final = _Checkpointer()
os.register_at_fork(after_in_child=CHECKPOINTER.forget_thread)


def checkpoint_in_background(file: Path) -> FileCheckpoints:
    """Checkpoint ``file`` from this process's checkpointing thread until :meth:`FileCheckpoints.close`."""
    files = FileCheckpoints(file)
    CHECKPOINTER.add(files)
    return files
