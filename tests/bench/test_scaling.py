"""The scaling benchmark at its smallest: each curve measured, its table printed and its PNG plot written.

Each test runs ``python -m bench.scaling``'s ``main`` in this process with the smallest sizes (1 chat and 1
gateway process; 1,000 documents; 1,000 agents), one round, the plots into a temporary directory.  The
PostgreSQL parts need the server (skipped with the reason without one, an error under ``CI=true``); the message
path needs ``wrk`` as well (``make test`` installs it as root; skipped without it, an error under ``CI=true``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bench import scaling
from tests.helpers.databases import IN_CI

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def run(capsys: pytest.CaptureFixture[str], tmp_path: Path, *options: str) -> str:
    scaling.main([*options, "--rounds", "1", "--out", str(tmp_path)])
    return capsys.readouterr().out


def assert_png(path: Path) -> None:
    assert path.is_file(), f"{path.name} was not written"
    data = path.read_bytes()
    assert data.startswith(PNG_SIGNATURE)
    assert len(data) > 10_000  # axes, labels and lines, not an empty canvas


@pytest.mark.slow
def test_router_curve_prints_its_table_and_draws_its_plot(capsys: pytest.CaptureFixture[str],
                                                         tmp_path: Path) -> None:
    out = run(capsys, tmp_path, "--curve", "router", "--max", "1000")
    assert_png(tmp_path / "scaling-router-changefeed.png")
    assert "## router and change feed" in out
    header = next(line for line in out.splitlines() if line.startswith("agents "))
    assert "get key/s" in header and "apply/s" in header and "sweep ms" in header
    row = next(line for line in out.splitlines() if line.startswith("1,000 "))
    assert len(row.split()) == 11


@pytest.mark.slow
def test_search_curve_on_both_engines(capsys: pytest.CaptureFixture[str], tmp_path: Path, pg_server: str) -> None:
    out = run(capsys, tmp_path, "--curve", "search", "--max", "1000")
    assert_png(tmp_path / "scaling-search.png")
    assert "## full-text memory search" in out
    rows = [line.split() for line in out.splitlines() if line.startswith(("sqlite ", "postgresql "))]
    assert [row[:2] for row in rows] == [["sqlite", "1,000"], ["postgresql", "1,000"]]
    assert all(float(row[2]) > 0 for row in rows)  # ours p50, ms


@pytest.mark.slow
def test_message_path_curve_through_a_real_server(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                  pg_server: str) -> None:
    if shutil.which("wrk") is None:
        reason = "wrk is not installed (`make wrk`, or apt-get install wrk): the message path is driven by it"
        if IN_CI:
            pytest.fail(f"{reason}; under CI=true this test must run")
        pytest.skip(reason)
    out = run(capsys, tmp_path, "--curve", "messages", "--processes", "1", "--chats", "1", "--seconds", "1")
    assert_png(tmp_path / "scaling-message-path.png")
    assert "## message path" in out
    row = next(line.split() for line in out.splitlines() if line.startswith("1 "))
    assert row[:2] == ["1", "1"]
    assert float(row[2].replace(",", "")) > 0  # msg/s
    assert row[-2:] == ["1.00x", "0/0"]  # vs 1 process: itself; no request failed
