"""Progress without a terminal: plain lines (step, rows, rate, ETA) every few seconds, on both engines."""

from __future__ import annotations

import base64
import re
from pathlib import Path

from typer.testing import CliRunner

from agentfy.cli import app
from agentfy.cutover.console import LineProgress
from agentfy.store.db import Database
from tests.cutover.test_cutover_run import KEY, alone, generate

runner = CliRunner()


def test_lines_come_every_interval_with_rows_rate_and_eta() -> None:
    now = [100.0]
    lines: list[str] = []
    progress = LineProgress(lines.append, interval=5.0, clock=lambda: now[0])
    progress.start("plan", "deciding every identity's new ID", 1000)
    for _ in range(10):
        now[0] += 1.0
        progress.advance(50)  # 50 rows a second
    progress.start("scan", "searching", None)
    with progress:
        progress.advance(7)
    assert lines == [
        "cutover plan: deciding every identity's new ID (1,000)",
        "cutover plan: running 250/1,000 (25%) 50/s ETA 15 s elapsed 5.0 s",
        "cutover plan: running 500/1,000 (50%) 50/s ETA 10 s elapsed 10.0 s",
        "cutover plan: done 500/1,000 (50%) 50/s elapsed 10.0 s",
        "cutover scan: searching",
        lines[-1],
    ]
    assert lines[-1].startswith("cutover scan: done 7 ") and "ETA" not in lines[-1]


def test_the_command_prints_progress_lines_when_stderr_is_not_a_terminal(db: Database, db_url: str,
                                                                          tmp_path: Path) -> None:
    generate(db)
    key_file = tmp_path / "key"
    key_file.write_text(base64.b64encode(KEY).decode("ascii"))
    key_file.chmod(0o600)  # a key file readable by others is refused
    alone(db)
    result = runner.invoke(app, ["cutover", "run", "--database-url", db_url, "--backup", str(tmp_path / "b"),
                                 "--credentials-key-file", str(key_file), "--progress-interval", "0"])
    assert result.exit_code == 0, result.output
    for step in ("lock", "plan", "scan", "backup", "restore-check", "json", "ids", "check", "commit"):
        assert f"cutover {step}: " in result.stderr, step
    assert re.search(r"cutover plan: running [\d,]+/[\d,]+ \(\d+%\) [\d,]+/s ETA [\d,]+ s", result.stderr), \
        result.stderr
    assert re.search(r"cutover ids: done [\d,]+/[\d,]+ \(100%\)", result.stderr)
    assert "\x1b[" not in result.stderr  # plain text, no terminal control sequences
