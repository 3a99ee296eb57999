"""``agentfy config show``: every setting in effect and where it came from (docs/configuration.md)."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from agentfy.cli.common import given_settings, global_options, out, resolve_settings
from agentfy.settings import effective

group = typer.Typer(help="The settings: what is in effect and where each value came from. See "
                         "docs/configuration.md.", no_args_is_help=True)


@group.command("show")
def config_show(
    json_output: Annotated[bool, typer.Option("--json", help="One JSON object per setting, one per line.")] = False,
) -> None:
    """Print every setting in effect, secrets masked, with the environment variable that sets it and where
    its value came from (cli, file, env or default)."""
    settings = resolve_settings()
    rows = list(effective(settings, given_settings(), config_file=global_options.config))
    if json_output:
        for row in rows:
            out.print(json.dumps({"name": row.name, "env": row.environment_variable, "value": row.value,
                                  "source": row.source}), highlight=False, soft_wrap=True)
        return
    widths = [max(len(text) for text in column) for column in
              zip(*(("setting", "value", "environment variable"),
                    *((row.name, row.value, row.environment_variable) for row in rows)), strict=True)]
    for cells in (("setting", "value", "environment variable", "source"),
                  *((row.name, row.value, row.environment_variable, row.source) for row in rows)):
        line = "  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=False))
        print(f"{line}  {cells[3]}")
