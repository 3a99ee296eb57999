"""The terminal channel (``agentfy chat``): one line in, the agent's reply out.

Who is talking: the person at the terminal, ``terminal:<login>`` — the SCOPE and the ACTOR, like an HTTP user —
with the ``owner`` role, because whoever can run this command holds the database itself.  The conversation is
``terminal:<name>`` (``default`` unless named), so it is a session of its own, resumed on the next start.

Lines: anything is sent to the agent; ``/end`` completes the conversation (``session.completed`` is published,
and the consolidation workers make it episodic memory) and starts a new one; ``/quit`` or end of input stops.

The reply is printed as the model streams it.  A run that fails prints the failure note of
:mod:`agentfy.runtime.failures` (what failed and what to do) and the conversation goes on; a terminal cannot
take back what it printed, so a reply cut short is followed by the note on its own line, saying it is cut.
"""

from __future__ import annotations

import asyncio
import getpass
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from agentfy.agents.router import Router
from agentfy.identity import AgentKey, OrgId, Scope
from agentfy.permissions.channels import http_context
from agentfy.runtime.failures import failure_note, failure_reference
from agentfy.runtime.inbound import Inbound
from agentfy.runtime.mcp.offer import McpTools
from agentfy.runtime.providers import Providers
from agentfy.runtime.runner import Runtime
from agentfy.runtime.settings import RuntimeSettings
from agentfy.store.db import Database
from agentfy.store.errors import NotFoundError
from agentfy.store.repos import agents, orgs

logger: Final = logging.getLogger("agentfy.runtime")

CHANNEL: Final = "terminal"
#: Said before the failure note when part of the reply was already printed.
CUT_SHORT: Final = "(the reply above is cut short)"
END: Final = "/end"
QUIT: Final = "/quit"


class ChatSetupError(LookupError):
    """The organization or agent to talk to cannot be found (the message says how to create them)."""


@dataclass(frozen=True, slots=True)
class Target:
    tenant_id: OrgId
    slug: str
    agent_key: AgentKey


def find_target(db: Database, agent_key: str, org_slug: str | None, *, create: bool) -> Target:
    """The organization (by slug, or the only one besides the platform's) and its agent; with ``create``,
    a missing organization or agent is created."""
    with db.transaction() as tx:
        if org_slug is None:
            found = [o for o in orgs.list_organizations(tx) if o.slug != orgs.PLATFORM_ORG_SLUG]
            if len(found) != 1:
                names = ", ".join(o.slug for o in found) or "none yet"
                raise ChatSetupError(f"name the organization with --org SLUG (organizations: {names}); add "
                                     "--create to create it")
            org = found[0]
        else:
            try:
                org = orgs.get_organization_by_slug(tx, org_slug)
            except NotFoundError:
                if not create:
                    raise ChatSetupError(f"there is no organization {org_slug!r}; add --create to create it") from None
                org = orgs.create_organization(tx, slug=org_slug, name=org_slug)
        scope = Scope(org.id)
        try:
            agent = agents.get_agent_by_key(tx, scope, agent_key)
        except NotFoundError:
            if not create:
                raise ChatSetupError(f"organization {org.slug!r} has no agent {agent_key!r}; add --create to create "
                                     "it") from None
            agent = agents.create_agent(tx, scope, agent_key=agent_key)
    return Target(org.id, org.slug, agent.agent_key)


def terminal_user() -> str:
    return f"terminal:{getpass.getuser()}"


async def chat(db: Database, target: Target, *, workspace_root: Path, conversation: str,
               read: Callable[[], str | None], write: Callable[[str], None],
               providers: Providers | None = None, write_piece: Callable[[str], None] | None = None,
               settings: RuntimeSettings | None = None, mcp: McpTools | None = None) -> int:
    """Talk until ``read`` returns ``None`` or ``/quit``; returns the number of replies.  ``write`` prints a
    line; ``write_piece``, when given, prints the reply's pieces as they stream (no line end: the reply's end
    gets one), else the reply is printed whole.  ``providers``: the models, with the credentials key when the
    agent's model needs a stored credential (default: none); ``settings``: the process's ``runtime`` section;
    ``mcp``: the agents' MCP tools with the process's ``mcp`` section (closed at the end)."""
    runtime = Runtime(db, Router(db), workspace_root=workspace_root, providers=providers, settings=settings,
                      mcp=mcp)
    context = http_context(terminal_user(), tenant_id=target.tenant_id, role="owner")
    replies = 0
    while True:
        line = await asyncio.to_thread(read)
        if line is None or line.strip() == QUIT:
            break
        text = line.strip()
        if not text:
            continue
        inbound = Inbound(target.tenant_id, target.agent_key, context, CHANNEL, f"{CHANNEL}:{conversation}", text)
        if text == END:
            ended = await runtime.end_conversation(inbound)
            write(f"(conversation ended: {ended.session_key})" if ended else "(nothing to end)")
            continue
        streamed = False

        async def show(piece: str) -> None:
            nonlocal streamed
            streamed = True
            assert write_piece is not None
            write_piece(piece)

        try:
            reply = await runtime(inbound, on_text=show if write_piece is not None else None)
        except Exception as error:
            reference = failure_reference()
            logger.exception("terminal.run_failed", extra={"reference": reference,
                                                           "agent_key": target.agent_key})
            if streamed and write_piece is not None:
                write_piece("\n")
                write(CUT_SHORT)
            write(failure_note(error, agent=target.agent_key, reference=reference))
            continue
        if streamed and write_piece is not None:
            write_piece("\n")  # the pieces were the reply
        else:
            write(reply.text if reply.text is not None else "(no reply)")
        await runtime.wait_idle()
        replies += 1
    await runtime.mcp.aclose()
    return replies
