"""The scaling benchmark's plots: matplotlib on the Agg backend (no display), one PNG per curve.

Every plot has log-scaled x axes (the sizes grow tenfold or more), labelled axes with units, and a subtitle
naming the engine, the date and the load average at the time it was drawn: the figures are only comparable
with others of the same run.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # before pyplot: headless, the same output everywhere
import matplotlib.pyplot as plt
from matplotlib.ticker import FuncFormatter

DPI = 110


def figure(title: str, engine: str, panels: int) -> tuple[Any, list[Any]]:
    """A figure of ``panels`` side-by-side axes, titled, with the engine/date/load subtitle."""
    fig, axes = plt.subplots(1, panels, figsize=(5.6 * panels, 4.4), squeeze=False)
    load = os.getloadavg()[0]
    fig.suptitle(f"{title}\n{engine} - {dt.date.today().isoformat()} - 2 vCPUs, load average {load:.1f}",
                 fontsize=11)
    return fig, list(axes[0])


def log_x(axis: Any, label: str, ticks: list[int]) -> None:
    """A log x axis with ticks at the measured sizes, written out (1k, 100k, 1M)."""
    axis.set_xscale("log")
    axis.set_xticks(ticks)
    axis.xaxis.set_major_formatter(FuncFormatter(lambda value, _position: short(int(value))))
    axis.xaxis.set_minor_formatter(FuncFormatter(lambda _value, _position: ""))
    axis.set_xlabel(label)
    axis.grid(True, which="major", alpha=0.3)


def log_y(axis: Any, label: str) -> None:
    """A log y axis whose ticks read as plain numbers (0.5, 20, 3,000), not powers of ten."""
    axis.set_yscale("log")
    axis.yaxis.set_major_formatter(FuncFormatter(lambda value, _position: plain(value)))
    axis.yaxis.set_minor_formatter(FuncFormatter(  # 2 and 5 of each decade only: the others would overlap
        lambda value, _position: plain(value) if f"{value:.0e}"[0] in "25" else ""))
    axis.tick_params(axis="y", which="minor", labelsize=7)
    axis.set_ylabel(label)


def plain(value: float) -> str:
    return f"{value:,.0f}" if value >= 1 else f"{value:g}"


def short(value: int) -> str:
    """10000 -> 10k, 1000000 -> 1M (plain below 1,000)."""
    for size, suffix in ((1_000_000, "M"), (1_000, "k")):
        if value >= size and value % size == 0:
            return f"{value // size}{suffix}"
    return str(value)


def save(fig: Any, path: Path) -> Path:
    """Write the figure as PNG (directories made as needed) and release it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path
