"""The `agentfy` command's guard: a missing extra is one line and exit 1; a broken agentfy still raises.

The bare install itself (no extras at all) is exercised end to end in ``tests/test_packaging.py``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import agentfy.cli
from agentfy.__main__ import POSTGRES_EXTRA_NEEDED, SERVER_EXTRA_NEEDED, main


def _raise_missing(name: str) -> None:
    raise ModuleNotFoundError(f"No module named {name!r}", name=name)


def test_a_missing_server_dependency_names_the_extra(monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "typer", None)  # `import typer` now fails as if it were not installed
    for name in [n for n in sys.modules if n == "agentfy.cli" or n.startswith("agentfy.cli.")]:
        monkeypatch.delitem(sys.modules, name)  # the package and its command modules are imported afresh
    monkeypatch.delattr(agentfy, "cli")
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == 1
    assert capsys.readouterr().err == f"error: {SERVER_EXTRA_NEEDED} (no module named 'typer')\n"


def test_a_missing_postgresql_driver_names_the_postgres_extra(monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(agentfy.cli, "main", lambda: _raise_missing("psycopg"))
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == 1
    assert capsys.readouterr().err == f"error: {POSTGRES_EXTRA_NEEDED}\n"


@pytest.mark.parametrize("name", ["agentfy.store.gone", "yaml"])
def test_any_other_missing_module_is_raised_not_explained(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setattr(agentfy.cli, "main", lambda: _raise_missing(name))
    with pytest.raises(ModuleNotFoundError, match=re.escape(name)):
        main()


def test_a_missing_agentfy_module_at_import_is_a_broken_install_not_an_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "agentfy.cli", None)
    monkeypatch.delattr(agentfy, "cli")
    with pytest.raises(ModuleNotFoundError, match=re.escape("agentfy.cli")):
        main()


def test_starting_the_gateway_imports_neither_the_anthropic_nor_the_mcp_sdk() -> None:
    """Each SDK costs seconds of CPU to import, paid by every gateway and worker process at start (and by every
    process a multi-process test starts); they are imported with the first agent that uses them instead."""
    probe = ("import sys, agentfy.gateway.server, agentfy.cli.serve, agentfy.cli.worker; "
             "print(sorted(m for m in ('anthropic', 'mcp', 'mcp_types') if m in sys.modules))")
    imported = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert imported.strip() == "[]"


def test_a_started_gateway_keeps_its_startup_heap_out_of_full_garbage_collections(tmp_path: Path) -> None:
    """What a server process builds before it serves lives as long as the process: frozen out of the cyclic
    collector's passes, a full collection no longer visits it (it took ~100 ms and set every route's p99)."""
    probe = ("import gc; from agentfy.gateway.server import app_from_env; app_from_env(); "
             "print(gc.get_freeze_count(), len(gc.get_objects()))")
    env = {"AGENTFY_DATABASE_URL": f"sqlite:///{tmp_path / 'agentfy.db'}", "AGENTFY_SIGNING_KEY": "a" * 44,
           "AGENTFY_WORKSPACE_ROOT": str(tmp_path / "workspaces"), "PATH": os.environ.get("PATH", "")}
    shown = subprocess.run([sys.executable, "-c", probe], check=False, capture_output=True, text=True, env=env)
    assert shown.returncode == 0, shown.stderr
    frozen, still_collected = map(int, shown.stdout.split())
    assert frozen > 10 * still_collected  # nearly everything the start built is frozen
