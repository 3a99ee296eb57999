"""How cost grows with work: three curves, measured, printed as tables and drawn as PNG plots.

Run: ``make bench-scaling`` (that is, ``.venv/bin/python -m bench.scaling``).  Options: ``--curve messages``,
``search`` or ``router`` (repeat for several; default all three), ``--max N`` to leave out the sizes above
``N`` (documents, agents: ``--curve search --max 100000`` is a quicker run; a value below the smallest size is
measured alone), ``--processes 1,2`` and ``--chats 1,8`` for the message path, ``--engine sqlite`` or
``postgresql`` for the search, ``--rounds R``, ``--out DIR`` for the PNG files (default ``docs/benchmarks``).
The curves:

* **messages** (:mod:`bench.scaling_messages`): ``POST /v1/agents/{id}/messages`` on the offline model through
  ``agentfy serve --workers N`` on PostgreSQL at 1, 8, 32 concurrent chats for 1, 2, 4 processes, beside a bare
  app doing the same SQL at the same concurrency and process count -> ``scaling-message-path.png``;
* **search** (:mod:`bench.scaling_search`): full-text memory search p50/p99 at 10k, 100k, 1M documents in the
  searched SCOPE, SQLite and PostgreSQL, beside the engine's raw query -> ``scaling-search.png``;
* **router** (:mod:`bench.scaling_router`): the agent router's cached look-ups and the change feed's apply,
  re-load, tenant flush and sweep at 1k, 100k, 1M cached agents -> ``scaling-router-changefeed.png``.

PostgreSQL is the server of :mod:`bench.postgres` (``$AGENTFY_BENCH_PG_URL``, default the local one); every
curve makes its own scratch database and drops it.  Without a server the PostgreSQL parts are skipped with the
reason (the message path entirely).  The full run takes about an hour on the shared 2-core machine (most of
it loading and indexing a million documents per search engine); the figures are ratios against baselines
measured in the same run, as everywhere in ``bench/``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
from pathlib import Path

from bench.harness import header
from bench.postgres import server_problem
from bench.scaling_table import Table

CURVES = ("messages", "search", "router")
OUT = Path(__file__).resolve().parents[1] / "docs" / "benchmarks"
FILES = {"messages": "scaling-message-path.png", "search": "scaling-search.png",
         "router": "scaling-router-changefeed.png"}


def run_messages(arguments: argparse.Namespace) -> Table | None:
    from bench import scaling_messages as curve  # noqa: PLC0415 - each curve's imports only when it runs

    problem = server_problem() or (None if shutil.which("wrk") else "wrk is not installed (apt-get install wrk)")
    if problem is not None:
        print(f"# messages: skipped, {problem}")
        return None
    rounds = arguments.rounds or curve.ROUNDS
    points = curve.measure(processes=arguments.processes, chats=arguments.chats, rounds=rounds,
                           seconds=arguments.seconds or curve.ROUND_SECONDS)
    print(f"# wrote {curve.plot(points, arguments.out / FILES['messages'])}")
    return curve.table(points, rounds)


def run_search(arguments: argparse.Namespace) -> Table | None:
    from bench import scaling_search as curve  # noqa: PLC0415

    sizes = up_to(curve.SIZES, arguments.max)
    rounds = arguments.rounds or curve.ROUNDS
    points = curve.measure(engines=arguments.engine or ["sqlite", "postgresql"], sizes=sizes, rounds=rounds)
    print(f"# wrote {curve.plot(points, arguments.out / FILES['search'])}")
    return curve.table(points, rounds)


def run_router(arguments: argparse.Namespace) -> Table | None:
    from bench import scaling_router as curve  # noqa: PLC0415

    sizes = up_to(curve.SIZES, arguments.max)
    rounds = arguments.rounds or curve.ROUNDS
    points = curve.measure(sizes=sizes, rounds=rounds)
    print(f"# wrote {curve.plot(points, arguments.out / FILES['router'])}")
    return curve.table(points, rounds)


def up_to(sizes: tuple[int, ...], largest: int) -> tuple[int, ...]:
    """The sizes up to ``largest``; ``largest`` alone when it is below them all (a quick trial run)."""
    return tuple(size for size in sizes if size <= largest) or (largest,)


RUNS = {"messages": run_messages, "search": run_search, "router": run_router}


def numbers(text: str) -> tuple[int, ...]:
    """``1,2,4`` -> (1, 2, 4)."""
    return tuple(int(number) for number in text.split(","))


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.scaling", description=__doc__.splitlines()[0])
    parser.add_argument("--curve", choices=CURVES, action="append", help="one curve (repeat; default all three)")
    parser.add_argument("--max", type=int, default=10**9, help="leave out the search's and the router's sizes "
                        "above this (documents, agents); below them all, this one size alone")
    parser.add_argument("--processes", type=numbers, default=(1, 2, 4),
                        help="gateway process counts of the message path (default 1,2,4)")
    parser.add_argument("--chats", type=numbers, default=(1, 8, 32),
                        help="concurrent chats of the message path (default 1,8,32)")
    parser.add_argument("--engine", choices=["sqlite", "postgresql"], action="append",
                        help="search engine (repeat; default both)")
    parser.add_argument("--rounds", type=int, help="rounds per point (default: each curve's own)")
    parser.add_argument("--seconds", type=int, help="seconds per message-path round (default 3)")
    parser.add_argument("--out", type=Path, default=OUT, help="directory of the PNG files (default docs/benchmarks)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    arguments = parse(argv)
    header("scaling: how cost grows with work (message path, search, router and change feed)")
    print(f"# load average at the start {' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    started = time.perf_counter()
    tables: list[Table] = []
    for name in arguments.curve or CURVES:
        table = RUNS[name](arguments)
        if table is not None:
            tables.append(table)
    for table in tables:
        print()
        print("\n".join(table.lines()))
    print(f"# load average at the end {' '.join(f'{v:.1f}' for v in os.getloadavg())}; "
          f"{time.perf_counter() - started:.0f} s in all")


if __name__ == "__main__":
    main()
