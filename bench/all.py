"""``make bench``: every benchmark with a goal, one after the other, then one table of every goal's verdict.

Run: ``make bench`` (that is, ``.venv/bin/python -m bench.all``; ``--only store,runtime`` for some modules,
``--list`` for the order).  Each module runs in its own Python process, so that one module's servers, threads
and caches never weigh on the next one's figures, with its output passed through as it comes; each records its
verdicts (:mod:`bench.verdicts`) into one file, and the summary at the end reads them.  A module that fails is
reported with its exit status and the run goes on; its goals read ``not measured``.

The exit status is 0 whether or not goals are met: a benchmark reports, the test-suite judges.  It is 1 only when
a module crashed, so that a broken benchmark is not mistaken for a slow one.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.verdicts import VERDICTS_FILE, read, summary

#: The modules ``make bench`` runs, in order: the quick ones first, the ones that load large data sets last.
MODULES: tuple[str, ...] = (
    "ids", "store", "router", "events", "gateway", "runtime", "api_mix", "model_path", "openai_rate",
    "openai_latency", "scheduler", "mcp_calls", "changefeed", "search",
)


def run_module(name: str, env: dict[str, str]) -> int:
    """Run ``bench.<name>`` in its own process, its output passed through; its exit status."""
    print(f"\n## bench.{name}", flush=True)
    started = time.perf_counter()
    status = subprocess.call([sys.executable, "-m", f"bench.{name}"], env=env)
    print(f"## bench.{name}: {'done' if status == 0 else f'FAILED (exit status {status})'} in "
          f"{time.perf_counter() - started:.0f} s", flush=True)
    return status


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.all", description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="comma-separated module names (default: all, in order)")
    parser.add_argument("--list", action="store_true", help="print the modules in order and stop")
    args = parser.parse_args()
    if args.list:
        print("\n".join(MODULES))
        return
    chosen = MODULES if args.only is None else tuple(name.strip() for name in args.only.split(","))
    unknown = [name for name in chosen if name not in MODULES]
    if unknown:
        parser.error(f"unknown module(s) {', '.join(unknown)}: expected some of {', '.join(MODULES)}")
    failed: list[str] = []
    with tempfile.TemporaryDirectory(prefix="agentfy-bench-") as scratch:
        verdicts_path = Path(scratch) / "verdicts.jsonl"
        env = {**os.environ, VERDICTS_FILE: str(verdicts_path)}
        started = time.perf_counter()
        for name in chosen:
            if run_module(name, env) != 0:
                failed.append(name)
        print()
        for line in summary(read(verdicts_path), frozenset(f"bench.{name}" for name in chosen)):
            print(line)
        print(f"# {len(chosen)} module(s) in {time.perf_counter() - started:.0f} s; load average "
              f"{os.getloadavg()[0]:.1f}" + (f"; FAILED: {', '.join(failed)}" if failed else ""))
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
