"""The scaling benchmark's printed figures: one table per curve, aligned columns, one row per measured point.

A curve module returns a :class:`Table`; :mod:`bench.scaling` prints it.  Cells are text, formatted by the
curve (it knows its units); the table only aligns them.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Table:
    """A titled table: ``columns`` names, ``rows`` of as many cells each, and notes printed under it."""

    title: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, *cells: str) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"{self.title}: a row of {len(cells)} cells for {len(self.columns)} columns")
        self.rows.append(list(cells))

    def lines(self) -> list[str]:
        """The table as text: a header, a rule, the rows (first column left-aligned, the others right)."""
        widths = [max(len(cell) for cell in column) for column in zip(self.columns, *self.rows, strict=True)]

        def row(cells: list[str]) -> str:
            return "  ".join(cell.ljust(width) if i == 0 else cell.rjust(width)
                             for i, (cell, width) in enumerate(zip(cells, widths, strict=True))).rstrip()

        return [f"## {self.title}", row(self.columns), "  ".join("-" * width for width in widths),
                *(row(cells) for cells in self.rows), *(f"# {note}" for note in self.notes)]


def ms(value: float) -> str:
    return f"{value:,.2f}" if value < 100 else f"{value:,.0f}"


def per_second(value: float) -> str:
    return f"{value:,.0f}"


def ratio(value: float) -> str:
    return f"{value:.2f}x"
