"""Shared benchmark harness: candidate and baseline measured alternately in one process, ratios reported.

Machines here are noisy, so absolute times are not comparable between runs; a ratio against a baseline
measured in the same run, interleaved round by round, is.  Each figure is the best of ``rounds`` runs
(the least disturbed one), and the ratio divides the two bests.
"""

from __future__ import annotations

import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Comparison:
    name: str
    candidate: str
    baseline: str
    candidate_rate: float
    baseline_rate: float
    goal: float | None

    @property
    def ratio(self) -> float:
        return self.candidate_rate / self.baseline_rate

    def line(self) -> str:
        verdict = ""
        if self.goal is not None:
            verdict = f"  goal >= {self.goal:.2f}x: {'met' if self.ratio >= self.goal else 'NOT met'}"
        return (f"{self.name:<34} {self.candidate_rate:>12,.0f}/s vs {self.baseline_rate:>12,.0f}/s "
                f"({self.baseline})  = {self.ratio:5.2f}x{verdict}")


def best_rate(run: Callable[[int], object], n: int) -> float:
    """Operations per second of one ``run(n)`` call."""
    start = time.perf_counter()
    run(n)
    return n / (time.perf_counter() - start)


def compare(name: str, candidate: Callable[[int], object], baseline: Callable[[int], object], *, n: int,
            rounds: int = 7, candidate_label: str = "", baseline_label: str = "",
            goal: float | None = None) -> Comparison:
    """Run ``candidate(n)`` and ``baseline(n)`` alternately ``rounds`` times; keep each one's best rate."""
    candidate(min(n, 1000))
    baseline(min(n, 1000))  # warm-up: imports, caches, first pool batch
    best_candidate = best_baseline = 0.0
    for _ in range(rounds):
        best_candidate = max(best_candidate, best_rate(candidate, n))
        best_baseline = max(best_baseline, best_rate(baseline, n))
    return Comparison(name, candidate_label or name, baseline_label, best_candidate, best_baseline, goal)


def header(title: str) -> None:
    print(f"# {title}")
    print(f"# python {platform.python_version()} ({sys.implementation.name}), {platform.machine()}, "
          f"{platform.system()} {platform.release()}")
