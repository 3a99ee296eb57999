"""``agentfy channels``: who may talk to an agent through its bots, from the database (the installation's
operator, who may have no API key): ``pairing approve CODE``, ``allow``, ``list``, ``policy``.

The same rules as ``/v1/agents/{agent}/channel-access`` (:mod:`agentfy.store.repos.channel_access`).  An
unknown organization or agent, a malformed value, and a pairing code that is unknown, used or expired are usage
errors (exit 2) naming the problem.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, TypeVar

import typer

from agentfy.cli.common import fail_usage, open_database, out
from agentfy.cli.options import DatabaseUrlOption
from agentfy.cli.usage import table
from agentfy.identity import InvalidAgentKeyError, InvalidIdError, Scope
from agentfy.store.db import Tx
from agentfy.store.errors import ConflictError, InvalidInputError, NotFoundError
from agentfy.store.repos import agents, channel_access, orgs

group = typer.Typer(help="Who may talk to an agent through its Telegram bot or Discord application.",
                    no_args_is_help=True)
pairing = typer.Typer(help="Pairing codes: unknown senders under the pairing DM policy get one to approve.",
                      no_args_is_help=True)
group.add_typer(pairing, name="pairing")

T = TypeVar("T")
OrgOption = Annotated[str, typer.Option("--org", help="The organization's slug.")]
AgentOption = Annotated[str, typer.Option("--agent", help="The agent (its agent_key or ID).")]
PlatformOption = Annotated[str, typer.Option("--platform", help="telegram or discord.")]


def _in_agent(org: str, agent: str, database_url: str | None, work: Callable[[Tx, Scope, str], T], *,
              write: bool) -> T:
    db = open_database(database_url)
    try:
        with db.transaction(write=write) as tx:
            try:
                scope = Scope(orgs.get_organization_by_slug(tx, org).id)
                return work(tx, scope, agents.resolve_agent(tx, scope, agent).id)
            except NotFoundError as error:
                where = f" of agent {agent!r}" if error.entity != "agent" else ""
                named = "" if error.ref is None else f" {error.ref!r}"
                raise fail_usage(f"there is no {error.entity}{named}{where} in organization {org!r}") from None
            except (ConflictError, InvalidInputError, InvalidIdError, InvalidAgentKeyError, ValueError) as error:
                raise fail_usage(str(error)) from None
    finally:
        db.dispose()


@pairing.command("approve")
def approve(code: Annotated[str, typer.Argument(help="The code the sender was given.")], org: OrgOption,
            agent: AgentOption, database_url: DatabaseUrlOption = None) -> None:
    """Allow the sender who was given CODE; the code works once, within its hour."""
    sender = _in_agent(org, agent, database_url, lambda tx, scope, agent_id: channel_access.approve(
        tx, scope, agent_id, code), write=True)
    out.print(f"allowed {sender.platform} sender {sender.sender_id}", highlight=False, markup=False)


@group.command("allow")
def allow(sender_id: Annotated[str, typer.Argument(help="The sender's numeric user ID.")], org: OrgOption,
          agent: AgentOption, platform: PlatformOption = "telegram", database_url: DatabaseUrlOption = None) -> None:
    """Allow a sender to message the agent directly (idempotent)."""
    sender = _in_agent(org, agent, database_url, lambda tx, scope, agent_id: channel_access.allow(
        tx, scope, agent_id, platform, sender_id), write=True)
    out.print(f"allowed {sender.platform} sender {sender.sender_id}", highlight=False, markup=False)


@group.command("list")
def list_senders(org: OrgOption, agent: AgentOption, database_url: DatabaseUrlOption = None) -> None:
    """Print the agent's policy, then its allowed senders and pending pairings."""

    def read(tx: Tx, scope: Scope, agent_id: str) -> tuple[channel_access.ChannelPolicy, list[channel_access.Sender]]:
        return (channel_access.get_policy(tx, scope, agent_id),
                channel_access.senders(tx, scope, agent_id, "allowed")
                + channel_access.senders(tx, scope, agent_id, "pending"))

    policy, found = _in_agent(org, agent, database_url, read, write=False)
    out.print(f"dm_policy: {policy.dm_policy}\ngroup_policy: {policy.group_policy}", highlight=False, markup=False)
    rows = [(s.platform, s.sender_id, s.status, s.expires_at or "-", s.approved_at or "-") for s in found]
    out.print(table(("platform", "sender_id", "status", "expires_at", "approved_at"), rows), highlight=False,
              markup=False, soft_wrap=True)


@group.command("policy")
def set_policy(org: OrgOption, agent: AgentOption,
               dm: Annotated[str | None, typer.Option("--dm", help="open, allowlist or pairing.")] = None,
               groups: Annotated[str | None, typer.Option("--group", help="mention or all.")] = None,
               database_url: DatabaseUrlOption = None) -> None:
    """Set the agent's DM policy, group policy or both."""
    policy = _in_agent(org, agent, database_url, lambda tx, scope, agent_id: channel_access.set_policy(
        tx, scope, agent_id, dm_policy=dm, group_policy=groups), write=True)
    out.print(f"dm_policy: {policy.dm_policy}\ngroup_policy: {policy.group_policy}", highlight=False, markup=False)
