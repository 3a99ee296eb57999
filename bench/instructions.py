"""Instruction counts of the store's one-per-transaction look-up, ours vs the raw driver: a figure that load
on the machine cannot move.

Run: ``make bench-instructions`` (needs ``valgrind``: ``apt-get install valgrind``).  Wall-clock ratios on a
shared 2-core machine move by ±0.05 between runs, which is the whole margin of the goal "SQLite
``resolve_agent``, one per transaction, within 1.3x of the driver's own ``BEGIN``/``SELECT``/``COMMIT``" (a
ratio of 0.77).  Callgrind counts the instructions each side executes, deterministically (a fixed hash seed),
so the ratio of the counts says which side does more work, whatever else runs.  It is a proxy for time (it
ignores cache misses and the GIL's waits), which is why ``bench.store`` still reports the wall clock.

Each side runs in its own process under callgrind with collection switched on only around the measured loop,
once with ``N`` look-ups and once with none; the difference divided by ``N`` is the count per look-up.
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from agentfy.identity import Scope
from agentfy.store.db import Database
from agentfy.store.migrate import upgrade
from agentfy.store.repos import agents, orgs
from bench.harness import header
from bench.store import SELECT_BY_ID, SELECT_BY_KEY

N = 4000
AGENTS = 2000
GOAL = 1 / 1.3
SIDES = ("ours-id", "raw-id", "ours-key", "raw-key")


def prepare(path: Path) -> None:
    """A migrated SQLite database with one tenant of ``AGENTS`` agents, analysed."""
    db = Database(f"sqlite:///{path}")
    upgrade(db)
    with db.transaction() as tx:
        scope = Scope(orgs.create_organization(tx, slug="bench", name="Bench").id)
        for i in range(AGENTS):
            agents.create_agent(tx, scope, agent_key=f"k{i}")
    with db.transaction() as tx:
        tx.execute("ANALYZE")
    db.dispose()


def look_up(path: Path, side: str, n: int) -> None:
    """The measured loop of one side (run inside callgrind by :func:`count`)."""
    db = Database(f"sqlite:///{path}")
    with db.transaction(write=False) as tx:
        scope = Scope(tx.scalar("SELECT id FROM organizations WHERE slug = 'bench'"))
        sample = agents.list_agents(tx, scope)
    every = [a.id if side.endswith("-id") else a.agent_key for a in sample]
    values = (every * (n // len(every) + 1))[:n]
    raw = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    raw.execute("PRAGMA foreign_keys = ON")
    raw.execute("PRAGMA synchronous = NORMAL")
    cursor = raw.cursor()
    sql = (SELECT_BY_ID if side.endswith("-id") else SELECT_BY_KEY).format(p="?")
    tenant, resolve = scope.tenant_id, agents.resolve_agent
    with db.transaction(write=False) as tx:  # warm both paths (compiled statements, driver caches)
        resolve(tx, scope, every[0])
    cursor.execute("BEGIN")
    cursor.execute(sql, (tenant, every[0])).fetchone()
    cursor.execute("COMMIT")
    subprocess.run(["callgrind_control", "--instr=on", str(os.getpid())], check=False, capture_output=True)
    if side.startswith("ours"):
        for value in values:
            with db.transaction(write=False) as tx:
                resolve(tx, scope, value)
    else:
        for value in values:
            cursor.execute("BEGIN")
            cursor.execute(sql, (tenant, value)).fetchone()
            cursor.execute("COMMIT")
    subprocess.run(["callgrind_control", "--instr=off", str(os.getpid())], check=False, capture_output=True)


def count(path: Path, side: str, n: int) -> int:
    """Instructions callgrind collected for ``n`` look-ups of ``side`` in a fresh process."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    result = subprocess.run(
        ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--callgrind-out-file=/dev/null",
         sys.executable, "-m", "bench.instructions", "--run", str(path), side, str(n)],
        env=env, capture_output=True, text=True, check=True)
    match = re.search(r"Collected : (\d+)", result.stderr)
    if match is None:
        raise RuntimeError(f"callgrind reported no count for {side}: {result.stderr[-500:]}")
    return int(match.group(1))


def per_look_up(path: Path, side: str) -> float:
    return (count(path, side, N) - count(path, side, 0)) / N


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--run":
        look_up(Path(sys.argv[2]), sys.argv[3], int(sys.argv[4]))
        return
    header("agentfy.store: instructions per one-per-transaction resolve_agent vs the raw driver (callgrind)")
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("# skipped: valgrind is not installed (apt-get install valgrind)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        prepare(path)
        with ThreadPoolExecutor(max_workers=2) as pool:  # one process per core; the counts do not mind
            counts = dict(zip(SIDES, pool.map(lambda side: per_look_up(path, side), SIDES), strict=True))
    for key in ("id", "key"):
        ours, raw = counts[f"ours-{key}"], counts[f"raw-{key}"]
        ratio = raw / ours
        verdict = "met" if ratio >= GOAL else "NOT met"
        print(f"sqlite: resolve_agent by {key.upper() if key == 'id' else key}, 1 per tx  {ours:>9,.0f} instr vs "
              f"{raw:>9,.0f} instr (BEGIN/SELECT/COMMIT)  = {ratio:5.2f}x  goal >= {GOAL:.2f}x: {verdict}")


if __name__ == "__main__":
    main()
