"""Operational failures of the command line: one clear line on stderr and a documented exit status, never a
traceback (``--debug`` adds it); read-only commands create no files."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from agentfy.cli import EXIT_OUTDATED, EXIT_UNAVAILABLE, EXIT_USAGE
from tests.helpers.databases import IN_CI


def _agentfy(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("AGENTFY_") or k.startswith("AGENTFY_TEST_")}
    return subprocess.run([sys.executable, "-m", "agentfy.cli", *args], capture_output=True, text=True,
                          env={**clean, **(env or {})}, cwd=cwd, timeout=120, check=False)


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize("command", [["db", "current"], ["db", "upgrade"], ["events", "stats"],
                                     ["serve", "--port", "1"]])
def test_an_unreachable_postgresql_is_one_line_and_exit_3(command: list[str], tmp_path: Path) -> None:
    url = f"postgresql+psycopg://postgres@127.0.0.1:{_closed_port()}/nowhere"
    failed = _agentfy(*command, "--database-url", url, cwd=tmp_path)
    assert failed.returncode == EXIT_UNAVAILABLE, failed.stderr
    lines = failed.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot reach postgresql+psycopg://postgres@127.0.0.1:")
    assert "Traceback" not in failed.stderr and "refused" in lines[0].lower()


def test_debug_adds_the_traceback(tmp_path: Path) -> None:
    url = f"postgresql+psycopg://postgres@127.0.0.1:{_closed_port()}/nowhere"
    failed = _agentfy("--debug", "db", "current", "--database-url", url, cwd=tmp_path)
    assert failed.returncode == EXIT_UNAVAILABLE
    assert "Traceback" in failed.stderr and failed.stderr.strip().splitlines()[-1].startswith("error: cannot reach")


def test_read_only_commands_never_create_a_database_file(tmp_path: Path) -> None:
    for command in (["db", "current"], ["events", "stats"], ["db", "scan-orphans"]):
        failed = _agentfy(*command, cwd=tmp_path)
        assert failed.returncode == EXIT_UNAVAILABLE, (command, failed.stderr)
        assert failed.stderr.strip() == "error: no database at var/agentfy.db (`agentfy db upgrade` creates it)"
    assert list(tmp_path.iterdir()) == []


def test_an_outdated_schema_says_what_to_do_and_exits_4(tmp_path: Path) -> None:
    (tmp_path / "old.db").touch()  # an empty SQLite file: no migrations applied
    failed = _agentfy("events", "stats", "--database-url", "sqlite:///old.db", cwd=tmp_path)
    assert failed.returncode == EXIT_OUTDATED
    assert failed.stderr.strip() == ("error: sqlite:///old.db is at schema revision (none), the newest is "
                                     f"{_head()}: run `agentfy db upgrade` first")


def test_version_and_a_bad_url(tmp_path: Path) -> None:
    from agentfy import __version__

    shown = _agentfy("--version", cwd=tmp_path)
    assert shown.returncode == 0 and shown.stdout.strip() == f"agentfy {__version__}"
    bad = _agentfy("db", "current", "--database-url", "not a url", cwd=tmp_path)
    assert bad.returncode == EXIT_USAGE
    assert bad.stderr.strip().startswith("error: database URL 'not a url' is not a URL")


def _head() -> str:
    from agentfy.store.db import Database
    from agentfy.store.migrate import head_revision

    db = Database("sqlite://")
    try:
        return str(head_revision(db))
    finally:
        db.dispose()


@pytest.mark.slow  # waits out SQLite's busy timeout (5 s)
def test_a_database_locked_by_another_writer_is_one_line_exit_3_and_nothing_written(tmp_path: Path) -> None:
    upgraded = _agentfy("db", "upgrade", "--database-url", "sqlite:///agentfy.db", cwd=tmp_path)
    assert upgraded.returncode == 0, upgraded.stderr
    holder = sqlite3.connect(tmp_path / "agentfy.db", isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")  # another writer, holding the write lock for the whole command
        failed = _agentfy("db", "seed", "--database-url", "sqlite:///agentfy.db", cwd=tmp_path)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert failed.returncode == EXIT_UNAVAILABLE, failed.stderr
    assert failed.stderr.strip().splitlines() == [
        "error: the database could not begin a transaction (it is locked by another writer)"]
    with sqlite3.connect(tmp_path / "agentfy.db") as reader:
        assert reader.execute("SELECT count(*) FROM organizations WHERE slug = 'demo'").fetchone() == (0,)


def test_a_database_path_that_may_not_be_created_is_permission_denied_and_exit_3(tmp_path: Path) -> None:
    # sysfs refuses a new directory even to root (CI runs as root, for whom a chmod-ed directory is no barrier).
    if not Path("/sys/kernel").is_dir():
        reason = "needs Linux's sysfs, where no one may make a directory"
        if IN_CI:
            pytest.fail(f"{reason}; under CI=true this test must run")
        pytest.skip(reason)
    failed = _agentfy("db", "upgrade", "--database-url", "sqlite:////sys/agentfy-test/agentfy.db", cwd=tmp_path)
    assert failed.returncode == EXIT_UNAVAILABLE, failed.stderr
    assert failed.stderr.strip().splitlines() == ["error: permission denied: /sys/agentfy-test"]
    assert not Path("/sys/agentfy-test").exists()
