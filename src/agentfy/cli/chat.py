"""``agentfy chat``: talk to an agent from the terminal."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from agentfy.cli.common import err, fail_usage, open_database, out, resolve_settings
from agentfy.cli.options import DatabaseUrlOption


def chat(
    agent_key: Annotated[str, typer.Argument(help="The agent's agent_key.")],
    org: Annotated[str | None, typer.Option("--org", help="The organization's slug (default: the only one).")] = None,
    conversation: Annotated[str, typer.Option(help="Which conversation (one session each).")] = "default",
    create: Annotated[bool, typer.Option("--create", help="Create the organization and agent if missing.")] = False,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Talk to an agent from the terminal: one line in, the reply out as it streams (/end completes the
    conversation, /quit or Ctrl-D stops).  Uses the agent's model (the offline model unless configured); a
    model that fails is said in a line, and the conversation goes on."""
    # Imported here, not for every command: the gateway app loads FastAPI and every route, the runtime its
    # model providers (about 270 modules between them), which would slow down `agentfy --help` and the rest.
    from agentfy.gateway.app import default_workspace_root  # noqa: PLC0415
    from agentfy.keys import credentials_cipher  # noqa: PLC0415
    from agentfy.runtime import terminal  # noqa: PLC0415
    from agentfy.runtime.mcp.offer import McpTools  # noqa: PLC0415
    from agentfy.runtime.providers import Providers  # noqa: PLC0415

    settings = resolve_settings(database_url=database_url)
    db = open_database(None, settings=settings)
    try:
        try:
            target = terminal.find_target(db, agent_key, org, create=create)
        except (terminal.ChatSetupError, ValueError) as error:
            raise fail_usage(str(error)) from None
        err.print(f"talking to @{target.agent_key} of {target.slug} as {terminal.terminal_user()} "
                  "(/end, /quit)", highlight=False)

        def read() -> str | None:
            try:
                return input()
            except EOFError:
                return None

        # The key `agentfy serve` decrypts credentials with (a model's API key), when there is one.
        cipher = credentials_cipher(settings, db.url, create=False, required=False)
        providers = Providers(cipher=cipher, policy=settings.runtime.call_policy())
        asyncio.run(terminal.chat(db, target, workspace_root=settings.workspace_root or default_workspace_root(db),
                                  conversation=conversation, providers=providers, read=read,
                                  write=lambda text: out.print(text, highlight=False, markup=False, soft_wrap=True),
                                  write_piece=lambda piece: out.print(piece, highlight=False, markup=False,
                                                                      soft_wrap=True, end=""),
                                  settings=settings.runtime, mcp=McpTools(settings.mcp, cipher=cipher)))
    finally:
        db.dispose()
