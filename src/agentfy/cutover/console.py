"""The cutover's progress — a Rich line per step on a terminal, plain lines every few seconds elsewhere (rows
done, rate, ETA) — and the final report."""

from __future__ import annotations

import time
from collections.abc import Callable
from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from agentfy.cutover.run import CutoverReport


class _Rate(ProgressColumn):
    """Rows (or bytes) per second of the step, once it has a measurable speed."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("" if speed is None else f"{speed:,.0f}/s", style="progress.data.speed")


class RichProgress:
    """:class:`agentfy.cutover.run.Progress` drawn with Rich; use as a context manager."""

    def __init__(self, console: Console) -> None:
        self._progress = Progress(
            TextColumn("[bold]{task.fields[step]:>13}[/bold]"), TextColumn("{task.description}"), BarColumn(),
            MofNCompleteColumn(), _Rate(), TimeRemainingColumn(), TimeElapsedColumn(), console=console)
        self._task: TaskID | None = None

    def __enter__(self) -> RichProgress:
        self._progress.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self._finish()
        self._progress.stop()

    def _finish(self) -> None:
        if self._task is not None:
            task = self._progress.tasks[-1]
            if task.total is None:
                self._progress.update(self._task, total=max(task.completed, 1), completed=max(task.completed, 1))
            self._progress.stop_task(self._task)

    def start(self, step: str, description: str, total: int | None = None) -> None:
        self._finish()
        self._task = self._progress.add_task(description, total=total, step=step)

    def advance(self, amount: int) -> None:
        if self._task is not None:
            self._progress.advance(self._task, amount)

    def update(self, completed: int, total: int | None) -> None:
        if self._task is not None:
            self._progress.update(self._task, completed=completed, total=total)


class LineProgress:
    """:class:`agentfy.cutover.run.Progress` as plain lines, for logs and pipes (no terminal to redraw): a
    line when a step starts, one every ``interval`` seconds while it runs (done, total, rate, ETA), and one
    when it ends — so a long run in a job's log still shows it is moving and how far it has to go."""

    def __init__(self, write: Callable[[str], None], interval: float = 5.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._write = write
        self._interval = interval
        self._clock = clock
        self._step: str | None = None
        self._total: int | None = None
        self._done = 0
        self._started = self._last = 0.0

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self._finish()

    def _line(self, state: str) -> str:
        elapsed = max(self._clock() - self._started, 1e-9)
        rate = self._done / elapsed
        of = f"/{self._total:,}" if self._total is not None else ""
        parts = [f"cutover {self._step}: {state} {self._done:,}{of}"]
        if self._total:
            parts.append(f"({100 * min(self._done, self._total) / self._total:.0f}%)")
        parts.append(f"{rate:,.0f}/s")
        if state == "running" and self._total and rate > 0:
            parts.append(f"ETA {max(self._total - self._done, 0) / rate:,.0f} s")
        parts.append(f"elapsed {elapsed:,.1f} s")
        return " ".join(parts)

    def _finish(self) -> None:
        if self._step is not None:
            self._write(self._line("done"))
            self._step = None

    def _tick(self) -> None:
        now = self._clock()
        if now - self._last >= self._interval:
            self._last = now
            self._write(self._line("running"))

    def start(self, step: str, description: str, total: int | None = None) -> None:
        self._finish()
        self._step, self._total, self._done = step, total, 0
        self._started = self._last = self._clock()
        self._write(f"cutover {step}: {description}" + (f" ({total:,})" if total is not None else ""))

    def advance(self, amount: int) -> None:
        self._done += amount
        self._tick()

    def update(self, completed: int, total: int | None) -> None:
        self._done, self._total = completed, total
        self._tick()


def print_report(report: CutoverReport, console: Console) -> None:
    """What changed (or would), per table and column, and the outcome in one line at the end."""
    for name, count in sorted(report.nil_kept.items()):
        console.print(f"note: {name} holds the nil UUID in {count:,} row(s); it is no identity and the column "
                      "cannot be NULL, so they were left as they are", highlight=False, soft_wrap=True)
    if not report.changed_anything:
        console.print("nothing to do: 0 identities changed (every ID is already canonical)", highlight=False)
        return
    table = Table(title=f"cutover {report.run_id}: rows {'that would change' if report.dry_run else 'changed'}")
    table.add_column("table.column")
    table.add_column("rows", justify="right")
    for name, count in sorted(report.changes.items()):
        if count:
            table.add_row(name, f"{count:,}")
    console.print(table)
    identities = ", ".join(f"{name} {count:,}" for name, count in sorted(report.identities.items()))
    console.print(f"identities: {identities}", highlight=False, soft_wrap=True)
    for name, count in sorted(report.nil_cleared.items()):
        console.print(f"{name}: {count:,} nil UUID(s) (no identity) set to NULL", highlight=False, soft_wrap=True)
    fixed = " (and the platform organization's fixed ID)" if report.fixed else ""
    console.print(f"{report.minted:,} minted from UUIDs{fixed}, {report.renamed:,} renamed (tail kept); "
                  f"{report.credentials:,} credentials encrypted again; signing epoch -> {report.signing_epoch}",
                  highlight=False)
    if report.dry_run:
        console.print(f"dry run: {report.changed_identities:,} identities would change; rolled back, the database "
                      "is unchanged", highlight=False)
    else:
        console.print(f"committed: {report.changed_identities:,} identities changed, {report.hops:,} hops recorded; "
                      f"backup of the starting state: {report.backup}", highlight=False, soft_wrap=True)
