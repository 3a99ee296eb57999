"""Shared benchmark harness: candidate and baseline measured alternately in one process, ratios reported.

Machines here are noisy, so absolute times are not comparable between runs; a ratio against a baseline
measured in the same run, interleaved round by round, is.  Each round times one ``candidate(n)`` and one
``baseline(n)`` call, back to back, the order swapped every round so that neither side always runs on the
warmer (or the more disturbed) half.  Each figure is the *median* rate of its side's rounds and the ratio
divides the two medians: a burst of load on the shared machine moves a median by one rank at most, whereas
a best-of figure rewards whichever side happened to get the one quiet moment.
"""

from __future__ import annotations

import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Comparison:
    """One benchmark line: the candidate's and the baseline's rates (operations per second) and a goal.

    ``goal`` is the ratio the candidate must reach (``None``: reported only).
    """

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


def rate(run: Callable[[int], object], n: int) -> float:
    """Operations per second of one ``run(n)`` call."""
    start = time.perf_counter()
    run(n)
    return n / (time.perf_counter() - start)


def alternating_rates(candidate: Callable[[int], object], baseline: Callable[[int], object], *, n: int,
                      rounds: int) -> tuple[list[float], list[float]]:
    """``rounds`` rates of each side, measured one round at a time, the order swapped every round."""
    candidate_rates: list[float] = []
    baseline_rates: list[float] = []
    for round_number in range(rounds):
        if round_number % 2 == 0:
            candidate_rates.append(rate(candidate, n))
            baseline_rates.append(rate(baseline, n))
        else:
            baseline_rates.append(rate(baseline, n))
            candidate_rates.append(rate(candidate, n))
    return candidate_rates, baseline_rates


def alternate_rounds(candidate: Callable[[], T], baseline: Callable[[], T], rounds: int) -> tuple[list[T], list[T]]:
    """``rounds`` results of each side, one round at a time, the order swapped every round (as
    :func:`alternating_rates`, for measurements that are more than a rate: percentiles, error counts)."""
    mine: list[T] = []
    theirs: list[T] = []
    for number in range(rounds):
        if number % 2 == 0:
            mine.append(candidate())
            theirs.append(baseline())
        else:
            theirs.append(baseline())
            mine.append(candidate())
    return mine, theirs


def compare(name: str, candidate: Callable[[int], object], baseline: Callable[[int], object], *, n: int,
            rounds: int = 7, candidate_label: str = "", baseline_label: str = "",
            goal: float | None = None) -> Comparison:
    """Run ``candidate(n)`` and ``baseline(n)`` in ``rounds`` alternating rounds; report each one's median rate.

    The ratio is median candidate rate / median baseline rate.  An odd ``rounds`` makes each median one
    measured round rather than the mean of two.
    """
    candidate(min(n, 1000))
    baseline(min(n, 1000))  # warm-up: imports, caches, first pool batch
    candidate_rates, baseline_rates = alternating_rates(candidate, baseline, n=n, rounds=rounds)
    return Comparison(name, candidate_label or name, baseline_label, statistics.median(candidate_rates),
                      statistics.median(baseline_rates), goal)


def header(title: str) -> None:
    print(f"# {title}")
    print(f"# python {platform.python_version()} ({sys.implementation.name}), {platform.machine()}, "
          f"{platform.system()} {platform.release()}")
