"""The published wheel: `pip install agentfy` (no extras) is the ID library alone.

The wheel is built from this checkout and installed with ``--no-deps`` into a fresh virtual environment that
has nothing else: the base install declares no dependencies, so that *is* a real install.  There
``agentfy.ids`` must mint and validate IDs without importing anything heavy, and the ``agentfy`` command must
say in one line which extra it needs instead of failing with a traceback.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

from agentfy.__main__ import SERVER_EXTRA_NEEDED

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("pydantic", "pydantic_core", "pydantic_settings", "sqlalchemy", "fastapi", "starlette", "uvicorn",
         "psycopg", "cryptography", "typer", "rich", "alembic", "anyio", "opentelemetry", "prometheus_client")
CONTROL_VECTOR = "user-afraid-swans-nmkjhgfedcba"  # the reference's draw from the counting random source

# Runs inside the bare environment: what the library answers, and which heavy modules it imported.
PROBE = f"""
import json, sys
import agentfy.ids as ids

class Counting:
    read = 0
    def __call__(self, n):
        chunk = bytes((self.read + i) % 256 for i in range(n))
        self.read += n
        return chunk

minted = ids.format_id("agent")
print(json.dumps({{
    "minted_valid": ids.is_id(minted, "agent") and ids.is_canonical_id(minted),
    "control_minted": ids.format_id("user", Counting()),
    "control_valid": ids.is_id({CONTROL_VECTOR!r}, "user"),
    "control_wrong_prefix": ids.is_id({CONTROL_VECTOR!r}, "agent"),
    "heavy": sorted(m for m in sys.modules if m.split(".")[0] in {set(HEAVY)!r}),
}}))
"""


def _run(*command: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    # PYTHONPATH and a virtual environment of the caller must not leak into the bare environment.
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([str(part) for part in command], capture_output=True, text=True, timeout=600,
                          check=False, cwd=cwd, env=env)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built from a copy of what it is made of: setuptools builds in ./build, where files of
    earlier builds would linger and end up in the wheel, and the checkout is left as it was."""
    source = tmp_path_factory.mktemp("source")
    shutil.copytree(ROOT / "src", source / "src", ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    out = tmp_path_factory.mktemp("wheel")
    built = _run(sys.executable, "-m", "pip", "wheel", source, "--no-deps", "--no-build-isolation", "--no-index",
                 "--quiet", "-w", out)
    assert built.returncode == 0, built.stderr
    (path,) = out.glob("agentfy-*.whl")
    return path


@pytest.fixture(scope="module")
def bare(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with the wheel and nothing else; returns its bin directory."""
    home = tmp_path_factory.mktemp("bare")
    venv.create(home, with_pip=False)
    bin_dir = home / ("Scripts" if os.name == "nt" else "bin")
    installed = _run(sys.executable, "-m", "pip", "--python", bin_dir / "python", "install", "--quiet",
                     "--no-deps", "--no-index", wheel)
    assert installed.returncode == 0, installed.stderr
    return bin_dir


def test_the_base_install_declares_no_dependency(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        (name,) = (n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(archive.read(name).decode())
    unconditional = [r for r in metadata.get_all("Requires-Dist") or [] if "extra ==" not in r]
    assert unconditional == []
    assert {"server", "postgres", "dev"} <= set(metadata.get_all("Provides-Extra") or [])


def test_the_wheel_holds_the_package_and_its_data_not_the_tests(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    top_level = {name.split("/")[0] for name in names}
    assert top_level == {"agentfy", "agentfy-0.1.0.dist-info"}
    test_modules = [n for n in names if any(part.startswith(("test_", "conftest")) or part == "tests"
                                            for part in n.split("/"))]
    assert test_modules == []
    assert any(n.startswith("agentfy/ids/data/") and n.endswith(".json") for n in names)  # the word lists
    assert "agentfy/py.typed" in names
    for served in ("channels/web/chat.js", "gateway/console/static/htmx.min.js",  # the pages' static files
                   "gateway/console/static/console.css", "gateway/console/static/console.js",
                   "gateway/console/static/events.js",
                   "gateway/console/static/uPlot.iife.min.js", "gateway/console/static/uPlot.min.css",
                   "gateway/console/static/usage.js"):
        assert f"agentfy/{served}" in names


def test_agentfy_ids_works_in_a_bare_install_and_imports_nothing_heavy(bare: Path, tmp_path: Path) -> None:
    result = _run(bare / "python", "-I", "-c", PROBE, cwd=tmp_path)  # -I: not this checkout's src/
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer == {"minted_valid": True, "control_minted": CONTROL_VECTOR, "control_valid": True,
                      "control_wrong_prefix": False, "heavy": []}


def test_the_command_without_the_server_extra_says_so_in_one_line(bare: Path, tmp_path: Path) -> None:
    for arguments in ((), ("id", "new", "agent")):
        result = _run(bare / "agentfy", *arguments, cwd=tmp_path)
        assert result.returncode == 1
        assert result.stdout == ""
        (line,) = result.stderr.splitlines()
        assert line.startswith(f"error: {SERVER_EXTRA_NEEDED} (no module named ")  # the first one cli imports
        assert line.removeprefix(f"error: {SERVER_EXTRA_NEEDED} (no module named ").strip("')") in HEAVY
