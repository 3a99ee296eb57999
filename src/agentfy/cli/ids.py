"""``agentfy id new | check | explain``: mint, check and explain IDs.

``agentfy id check`` exits 0 for a valid ID and 1 for an invalid one, so scripts can use it as a predicate.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer
from rich.table import Table

from agentfy.cli.common import fail_usage, out
from agentfy.ids import CANONICAL, ID_ENTITIES, PRODUCTS, explain_id, format_id
from agentfy.ids.explain import IdExplanation
from agentfy.ids.registry import UnknownPrefixError
from agentfy.ids.validate import UnknownProductError

group = typer.Typer(
    help=f"Mint, check and explain IDs of the form {CANONICAL.description}.",
    no_args_is_help=True,
)

_PREFIXES_HELP = ", ".join(sorted(ID_ENTITIES.values()))


@group.command("new")
def id_new(
    prefix: Annotated[str, typer.Argument(help=f"The entity's registered prefix: {_PREFIXES_HELP}.")],
    count: Annotated[int, typer.Option("--count", "-n", min=1, max=10_000_000,
                                       help="How many IDs to mint, one per line.")] = 1,
) -> None:
    """Mint new canonical IDs from the OS CSPRNG."""
    try:
        first = format_id(prefix)
    except UnknownPrefixError:
        raise fail_usage(f"{prefix!r} is not a registered prefix; expected one of: {_PREFIXES_HELP}") from None
    write = sys.stdout.write
    write(first + "\n")
    for _ in range(count - 1):
        write(format_id(prefix) + "\n")


def _explain_or_exit(value: str, prefix: str | None, product: str) -> IdExplanation:
    try:
        return explain_id(value, prefix, product=product)
    except UnknownPrefixError:
        raise fail_usage(f"--prefix {prefix!r} is not a registered prefix; expected one of: "
                         f"{_PREFIXES_HELP}") from None
    except UnknownProductError:
        raise fail_usage(f"--product {product!r} is unknown; expected one of: {', '.join(PRODUCTS)}") from None
    except ValueError as error:  # a malformed prefix for another product
        raise fail_usage(str(error)) from None


@group.command("check")
def id_check(
    value: Annotated[str, typer.Argument(help="The value to check, exactly as stored or sent (quote it).")],
    prefix: Annotated[str | None, typer.Option(help="Require this prefix (entity), e.g. 'agent'.")] = None,
    product: Annotated[str, typer.Option(help=f"Whose legacy formats count: {', '.join(PRODUCTS)}.")] = "agentfy",
    as_json: Annotated[bool, typer.Option("--json", help="Print the verdict as JSON.")] = False,
) -> None:
    """Check one value: exit 0 if it is a valid ID, 1 (with the reason) if not."""
    report = _explain_or_exit(value, prefix, product)
    if as_json:
        out.print_json(json.dumps(report.as_dict()))
    elif report.valid:
        model = f" ({report.model})" if report.model else ""
        out.print(f"[green]valid[/green]: {report.format} ID{model}", highlight=False)
    else:
        expected = f" {prefix}" if prefix else ""
        out.print(f"[red]invalid[/red]{expected} ID {value!r}:", highlight=False)
        for problem in report.problems:
            out.print(f"  - {problem}", highlight=False)
    raise typer.Exit(0 if report.valid else 1)


@group.command("explain")
def id_explain(
    value: Annotated[str, typer.Argument(help="The value to explain (quote it).")],
) -> None:
    """Explain a value: its format, prefix and model, words, suffix, and which products accept it."""
    report = _explain_or_exit(value, None, "agentfy")
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    table.add_row("value", repr(value))
    table.add_row("valid", "[green]yes[/green]" if report.valid else "[red]no[/red]")
    if report.format:
        table.add_row("format", f"{report.format}: {report.format_description}")
    if report.prefix:
        table.add_row("prefix", f"{report.prefix} (model {report.model})")
    if report.words:
        table.add_row("words", " ".join(report.words))
    if report.suffix:
        table.add_row("suffix", report.suffix)
    table.add_row("accepted by", ", ".join(report.accepted_by) or "no product")
    for problem in report.problems:
        table.add_row("problem", problem)
    out.print(table, highlight=False)
