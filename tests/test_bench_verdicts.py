"""``make bench``'s summary: every goal is printed with its verdict, and a goal nobody measured says so."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench.harness import Comparison
from bench.verdicts import GOALS, VERDICTS_FILE, read, record, record_comparison, summary


def test_recorded_verdicts_reach_the_summary_with_their_goal(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "verdicts.jsonl"
    monkeypatch.setenv(VERDICTS_FILE, str(path))
    record("store-reads", "postgresql: resolve_agent by ID, 1 per tx", "0.91x (goal 0.77x)", met=True)
    record_comparison("store-writes", Comparison("sqlite: create agent", "", "plain INSERT", 50.0, 100.0, 0.67))
    record_comparison("store-writes", Comparison("reported only", "", "x", 1.0, 1.0, None))
    verdicts = read(path)
    assert [(v.goal, v.met) for v in verdicts] == [("store-reads", True), ("store-writes", False)]
    table = "\n".join(summary(verdicts, frozenset({"bench.store"})))
    assert "met          0.91x (goal 0.77x)" in table
    assert "NOT met      0.50x (goal 0.67x)" in table and "sqlite: create agent" in table
    assert "reported only" not in table
    assert "telegram" not in table  # a module that was not run has no rows
    assert table.endswith("1 of 2 measured lines met their goal; 0 goal(s) not measured")


def test_a_goal_without_a_measured_line_reads_not_measured(tmp_path: Path) -> None:
    table = summary(read(tmp_path / "absent.jsonl"))
    for goal in GOALS:
        assert any(goal.key in line for line in table)
    assert sum("not measured" in line for line in table) == len(GOALS) + 1  # each goal, and the count line


def test_without_a_verdicts_file_recording_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(VERDICTS_FILE, raising=False)
    monkeypatch.chdir(tmp_path)
    record("mcp", "call", "0.9x", met=True)
    assert list(tmp_path.iterdir()) == []


def test_an_unknown_goal_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="unknown goal 'store-read'"):
        record("store-read", "x", "1x", met=True)
