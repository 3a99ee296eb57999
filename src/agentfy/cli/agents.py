"""``agentfy agents model set | show | check``: which model an agent talks to, straight in the database.

The same validator as the runtime and ``PUT /v1/agents/{agent}/model``
(:meth:`agentfy.runtime.providers.ModelSettings.parse`), the same store update (which publishes the change to
running servers), and the same check (:func:`agentfy.runtime.model_check.check_model`: one tiny call through the
runtime's providers, with the credential decrypted by the key ``agentfy serve`` uses).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentfy.cli.common import EXIT_FAILED, fail, fail_usage, out
from agentfy.cli.credentials import OrgOption, cipher, organization
from agentfy.cli.options import DatabaseUrlOption
from agentfy.cli.usage import table
from agentfy.identity import InvalidAgentKeyError, InvalidIdError, Scope
from agentfy.settings import Settings
from agentfy.store.db import Database, Tx
from agentfy.store.errors import NotFoundError
from agentfy.store.repos import agents, credentials
from agentfy.store.repos.agents import Agent

if TYPE_CHECKING:
    from agentfy.runtime.providers import ModelSettings, Providers

# The runtime is imported inside the commands, not for every command: its model client loads the HTTP stack.

group = typer.Typer(help="Agents: their model configuration.", no_args_is_help=True)
model_group = typer.Typer(help="An agent's model: set it, show it, check it with one call.", no_args_is_help=True)
group.add_typer(model_group, name="model")

AgentArgument = Annotated[str, typer.Argument(help="The agent's agent_key or ID.", show_default=False)]


def resolved(tx: Tx, scope: Scope, ref: str, org: str) -> Agent:
    try:
        return agents.resolve_agent(tx, scope, ref)
    except NotFoundError:
        raise fail_usage(f"there is no agent {ref!r} in organization {org!r}") from None
    except (InvalidIdError, InvalidAgentKeyError) as error:
        raise fail_usage(str(error)) from None


def settings_of(agent: Agent) -> ModelSettings:
    from agentfy.runtime.providers import ModelConfigError, ModelSettings  # noqa: PLC0415

    try:
        return ModelSettings.of(agent)
    except ModelConfigError as error:
        raise fail_usage(str(error)) from None


def show(settings: ModelSettings) -> None:
    rows = [(name, "-" if value is None else str(value)) for name, value in (
        ("provider", settings.provider), ("base_url", settings.base_url), ("model", settings.model),
        ("credential", settings.credential), ("context_window", settings.context_window),
        ("max_tokens", settings.max_tokens))]
    out.print(table(("setting", "value"), rows), highlight=False, markup=False, soft_wrap=True)


@model_group.command("set")
def set_model(
    agent: AgentArgument, org: OrgOption,
    provider: Annotated[str, typer.Option("--provider", help="offline (the built-in model), openai (any "
                                          "OpenAI-compatible server) or anthropic (Anthropic's Messages API)."
                                          )] = "offline",
    base_url: Annotated[str | None, typer.Option("--base-url", show_default=False, help=(
        "The server's API root, e.g. https://api.openai.com/v1 (required for openai; for anthropic "
        "https://api.anthropic.com unless given)."))] = None,
    model: Annotated[str | None, typer.Option("--model", show_default=False, help=(
        "The model's name on that server (required for openai and anthropic)."))] = None,
    credential: Annotated[str | None, typer.Option("--credential", show_default=False, help=(
        "The organization's credential holding the API key (`agentfy credentials set NAME` first)."))] = None,
    context_window: Annotated[int | None, typer.Option("--context-window", show_default=False, help=(
        "The model's context window in tokens \\[default: 8000]."))] = None,
    max_tokens: Annotated[int | None, typer.Option("--max-tokens", show_default=False, help=(
        "The longest answer in tokens, anthropic only \\[default: 4096]."))] = None,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Set AGENT's model (its config.model; the rest of its configuration is kept), checked as a run checks
    it. The credential must be stored in the organization."""
    from agentfy.runtime.providers import ModelConfigError, ModelSettings  # noqa: PLC0415

    raw: dict[str, Any] = {name: value for name, value in (
        ("provider", provider), ("base_url", base_url), ("model", model), ("credential", credential),
        ("context_window", context_window), ("max_tokens", max_tokens)) if value is not None}
    try:
        settings = ModelSettings.parse(raw, field="")
    except ModelConfigError as error:
        raise fail_usage(f"invalid model: {error}") from None
    with organization(database_url, org) as (_, db, scope), db.transaction() as tx:
        found = resolved(tx, scope, agent, org)
        if settings.credential is not None and settings.credential not in credentials.list_credential_names(tx,
                                                                                                             scope):
            raise fail_usage(f"credential {settings.credential!r} is not stored in organization {org!r}: "
                             f"`agentfy credentials set {settings.credential} --org {org}` first")
        config = {**(found.config if isinstance(found.config, dict) else {}), "model": settings.as_config()}
        agents.update_agent(tx, scope, found.id, config=config)
    show(settings)


@model_group.command("show")
def show_model(agent: AgentArgument, org: OrgOption, database_url: DatabaseUrlOption = None) -> None:
    """Show AGENT's model as a run reads it (the offline model when none is set)."""
    with organization(database_url, org) as (_, db, scope), db.transaction(write=False) as tx:
        found = resolved(tx, scope, agent, org)
    show(settings_of(found))


def providers_for(settings: Settings, db: Database, agent: Agent) -> Providers:
    """The runtime's providers, with the credentials key when the agent's model needs a credential."""
    from agentfy.runtime.providers import Providers  # noqa: PLC0415

    needs_key = settings_of(agent).credential is not None
    return Providers(cipher=cipher(settings, db) if needs_key else None, policy=settings.runtime.call_policy())


@model_group.command("check")
def check(agent: AgentArgument, org: OrgOption, database_url: DatabaseUrlOption = None) -> None:
    """Call AGENT's model once with a tiny prompt, as a run would: prints the model and the latency, or fails
    (exit 1) with the model's error. Nothing is stored."""
    from agentfy.runtime.model import ModelError  # noqa: PLC0415
    from agentfy.runtime.model_check import check_model  # noqa: PLC0415
    from agentfy.runtime.providers import ModelConfigError  # noqa: PLC0415

    with organization(database_url, org) as (settings, db, scope):
        with db.transaction(write=False) as tx:
            found = resolved(tx, scope, agent, org)
        providers = providers_for(settings, db, found)
        try:
            result = asyncio.run(check_model(db, providers, found))
        except ModelConfigError as error:
            raise fail_usage(str(error)) from None
        except ModelError as error:
            raise fail(EXIT_FAILED, f"the model did not answer: {error}") from None
    out.print(f"ok: {result.model} answered in {result.latency_ms} ms", highlight=False, markup=False)
