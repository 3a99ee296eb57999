"""Who may do what inside a tenant: one table of operations, one function that decides.

Every HTTP route and WebSocket method names its operation and calls :func:`authorize` (and, for data that
lives in a memory scope, :func:`may_use_scope` / :func:`visible_scopes`); nothing else decides access, so the
table below *is* the policy, and ``docs/permissions.md`` shows it.

Who a caller is (a :class:`Caller`): a role (``member`` < ``operator`` < ``admin`` < ``owner``), the person it
acts as (``user_id``, or none), whether it is a team key, a platform-admin key, or a *signed context* (a
short-lived token derived from an API key for reconnecting; it carries that key's identity but may never mint
or manage credentials: a leaked five-minute token must not become a permanent key).

Scopes — where data lives (a session's, memory document's, knowledge-graph entity's or cron job's
``user_id``): a person's own scope is their user ID; ``group:…``/``guild:…`` are group chats; the empty scope
is the agent's own.  A permission is checked against the acting person; the scope is only where the data is.

=====================================  =========  ===========  =======  =====
caller                                  own        other        group    agent
                                                   person's
=====================================  =========  ===========  =======  =====
owner, admin, operator                  yes        yes          yes      yes
member acting as a person               yes        no           no       no
member acting as nobody, team key       (none)     no           no       no
=====================================  =========  ===========  =======  =====

A signed context is whatever the key it came from is.  Denials: a row the caller cannot see (a session by
its key, a cron job by its ID) is **404**, exactly like a missing one — answering 403 would confirm that it
exists; an operation or a scope the caller named itself (a role too low, ``user_id=`` of another person)
is **403**, which reveals nothing the caller did not say.  Lists silently leave out what the caller cannot
see.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Protocol

from agentfy.identity.roles import Role, role_rank
from agentfy.store.errors import NotFoundError

#: The lowest role that sees every scope of its organization (a caller has every permission of the roles
#: below its own: :func:`~agentfy.identity.roles.role_rank`).
ALL_SCOPES_ROLE: Final[Role] = "operator"


class Caller(Protocol):
    """What :func:`authorize` needs of a request's principal."""

    @property
    def role(self) -> str: ...

    @property
    def user_id(self) -> str | None: ...

    @property
    def team_id(self) -> str | None: ...

    @property
    def platform_admin(self) -> bool: ...

    @property
    def signed_context(self) -> bool: ...


class AccessDenied(Exception):
    """The caller may not do this: ``status`` is 403 (forbidden) or 404 (as if the row did not exist)."""

    def __init__(self, status: int, message: str, *, operation: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.operation = operation


@dataclass(frozen=True, slots=True)
class Rule:
    """One operation's rule.

    ``role``: the lowest role that may call it.  ``platform_admin``: only a platform-admin key.
    ``api_key_only``: it mints, revokes or manages credentials or members, so a signed context may not.
    ``team_keys``: whether a team key (a member-role credential of a team, acting as nobody) may.
    ``person``: the caller must act as a person (it owns what it makes, or answers for itself).
    ``scoped``: the operation reads or writes data in a memory scope; access to it follows the scope table.
    """

    role: Role
    platform_admin: bool = False
    api_key_only: bool = False
    team_keys: bool = True
    person: bool = False
    scoped: bool = False
    summary: str = ""


def _r(role: Role, summary: str, **flags: bool) -> Rule:
    return Rule(role, summary=summary, **flags)


#: Every operation of the HTTP and WebSocket APIs.  The HTTP operation ID and the WebSocket method name are the
#: key.  A test fails if a route or method has no rule here.
RULES: Final[dict[str, Rule]] = {
    # platform administration
    "orgs.create": _r("member", "create an organization", platform_admin=True, api_key_only=True),
    "orgs.list": _r("member", "list organizations", platform_admin=True),
    "orgs.delete": _r("member", "delete an organization", platform_admin=True, api_key_only=True),
    # the caller's organization
    "org.get": _r("member", "read the organization"),
    "org.default_agent.set": _r("admin", "set the default agent"),
    "org.members.list": _r("member", "list members", team_keys=False),
    "org.members.add": _r("admin", "add a member (a new person) or invite an existing one", api_key_only=True,
                          team_keys=False),
    "org.members.update": _r("admin", "change a member's role", api_key_only=True, team_keys=False),
    "org.members.remove": _r("admin", "remove a member (their keys are revoked)", api_key_only=True,
                             team_keys=False),
    "org.invitations.list": _r("admin", "list the organization's pending invitations", team_keys=False),
    "org.invitations.revoke": _r("admin", "withdraw an invitation", api_key_only=True, team_keys=False),
    "invitations.list": _r("member", "list invitations addressed to the caller's person", team_keys=False,
                           person=True),
    "invitations.accept": _r("member", "accept an invitation (as the invited person)", api_key_only=True,
                             team_keys=False, person=True),
    "invitations.decline": _r("member", "decline an invitation (as the invited person)", api_key_only=True,
                              team_keys=False, person=True),
    "org.api_keys.create": _r("owner", "issue an API key", api_key_only=True, team_keys=False),
    "org.api_keys.list": _r("owner", "list API keys", team_keys=False),
    "org.api_keys.revoke": _r("owner", "revoke an API key", api_key_only=True, team_keys=False),
    "context.sign": _r("member", "sign a short-lived context for reconnecting", api_key_only=True),
    # agents
    "agents.list": _r("member", "list agents"),
    "agents.get": _r("member", "read an agent"),
    "agents.create": _r("operator", "create an agent"),
    "agents.update": _r("operator", "rename or update an agent"),
    "agents.delete": _r("admin", "delete an agent"),
    "agents.heartbeat": _r("member", "check in with an agent"),
    "agents.messages.send": _r("member", "talk to an agent (the conversation is the caller's person's)",
                               person=True),
    "agents.send": _r("member", "talk to an agent over the WebSocket (as agents.messages.send)", person=True),
    "openai.chat.completions.create": _r("member", "talk to an agent from an OpenAI client (as "
                                         "agents.messages.send)", person=True),
    "openai.models.list": _r("member", "list agents as an OpenAI client's models"),
    "subscribe": _r("member", "receive the organization's agent events"),
    "unsubscribe": _r("member", "stop receiving agent events"),
    "ids.explain": _r("member", "explain an ID"),
    # links, MCP servers, grants, cron, skills
    "links.create": _r("operator", "link two agents"),
    "links.list": _r("member", "list an agent's links"),
    "links.delete": _r("operator", "delete a link"),
    "mcp_servers.add": _r("operator", "attach an MCP server"),
    "mcp_servers.list": _r("operator", "list an agent's MCP servers"),
    "mcp_servers.delete": _r("operator", "remove an MCP server"),
    "mcp_servers.tools": _r("operator", "list an MCP server's tools and whether it is reachable"),
    "grants.set": _r("admin", "grant or deny a group-chat permission"),
    "grants.list": _r("member", "list an agent's grants"),
    "grants.delete": _r("admin", "delete a grant"),
    "cron.create": _r("operator", "schedule an agent", scoped=True),
    "cron.list": _r("member", "list an agent's cron jobs", scoped=True),
    "cron.get": _r("member", "read a cron job", scoped=True),
    "cron.update": _r("operator", "enable or disable a cron job", scoped=True),
    "cron.delete": _r("operator", "delete a cron job", scoped=True),
    "cron.runs": _r("member", "list a cron job's runs", scoped=True),
    "cron.run": _r("operator", "run a cron job now", scoped=True),
    "skills.create": _r("operator", "publish a skill (owned by the caller's person)", person=True),
    "skills.list": _r("member", "list skills"),
    "skills.get": _r("member", "read a skill"),
    # and the skill's owner, or an admin (skills.can_manage_skill: ownership is the store's rule)
    "skills.update": _r("operator", "change a skill (its owner, or admin)"),
    "skills.delete": _r("operator", "delete a skill (its owner, or admin)"),
    # teams
    "teams.create": _r("operator", "create a team"),
    "teams.list": _r("member", "list teams"),
    "teams.get": _r("member", "read a team"),
    "teams.delete": _r("admin", "delete a team"),
    "teams.lead.set": _r("operator", "set a team's lead"),
    "teams.members.add": _r("operator", "add an agent to a team"),
    "teams.members.list": _r("member", "list a team's agents"),
    "teams.members.remove": _r("operator", "remove an agent from a team"),
    "teams.api_keys.create": _r("owner", "issue a team key", api_key_only=True, team_keys=False),
    "teams.api_keys.list": _r("owner", "list a team's keys", team_keys=False),
    "teams.api_keys.revoke": _r("owner", "revoke a team key", api_key_only=True, team_keys=False),
    # team tasks
    "tasks.create": _r("operator", "create a team task"),
    "tasks.list": _r("member", "list a team's tasks"),
    "tasks.get": _r("member", "read a team task"),
    "tasks.delete": _r("admin", "delete a team task"),
    "tasks.assign": _r("operator", "assign a team task to an agent"),
    "tasks.claim": _r("operator", "claim a team task for an agent"),
    "tasks.complete": _r("operator", "complete a team task with its result"),
    "tasks.fail": _r("operator", "mark a team task failed"),
    "tasks.cancel": _r("admin", "cancel a team task"),
    "tasks.retry": _r("admin", "open a failed, timed-out or cancelled team task again"),
    "tasks.dispatch": _r("operator", "have a teammate agent run a team task now"),
    "tasks.attachments.add": _r("operator", "attach something to a team task"),
    "tasks.attachments.list": _r("member", "list a team task's attachments"),
    "tasks.attachments.delete": _r("operator", "remove a team task's attachment"),
    # sessions and memory (scoped)
    "sessions.open": _r("member", "open a session in a scope", scoped=True),
    "sessions.get": _r("member", "read a session", scoped=True),
    "sessions.list": _r("member", "list an agent's sessions", scoped=True),
    "sessions.messages.list": _r("member", "read a session's messages", scoped=True),
    "sessions.messages.append": _r("member", "append a user message (assistant, system, tool: operator)",
                                   scoped=True),
    "sessions.complete": _r("member", "complete a session", scoped=True),
    "sessions.delete": _r("operator", "delete a session and its messages", scoped=True),
    "memory.documents.upsert": _r("operator", "upsert memory documents", scoped=True),
    "memory.documents.list": _r("member", "list memory documents", scoped=True),
    "memory.search": _r("member", "search a memory scope as the agent does", scoped=True),
    "memory.episodes.list": _r("member", "list episodic summaries", scoped=True),
    "knowledge.ingest": _r("operator", "ingest knowledge-graph entities and relations", scoped=True),
    "knowledge.entities.list": _r("member", "list knowledge-graph entities", scoped=True),
    "knowledge.relations.list": _r("member", "list knowledge-graph relations", scoped=True),
    # chat-platform bindings (a bot token is a credential of the organization)
    "channels.telegram.bind": _r("admin", "bind a Telegram bot to an agent"),
    "channels.discord.bind": _r("admin", "bind a Discord application to an agent"),
    "channels.list": _r("operator", "list an agent's chat-platform bindings"),
    "channels.unbind": _r("admin", "unbind an agent's bot"),
    # who may talk to an agent through its bots (each sender reaching it spends the organization's credits)
    "channels.access.get": _r("admin", "read an agent's DM and group policy"),
    "channels.access.set": _r("admin", "set an agent's DM and group policy"),
    "channels.allowlist.list": _r("admin", "list the senders allowed to message an agent"),
    "channels.allowlist.add": _r("admin", "allow a sender to message an agent"),
    "channels.allowlist.remove": _r("admin", "take a sender off an agent's allowlist"),
    "channels.pairings.list": _r("admin", "list an agent's pending pairings"),
    "channels.pairings.approve": _r("admin", "approve a pairing code, allowing its sender"),
    # vault (agent-level files, no person's scope)
    "vault.upload": _r("member", "store files for an agent"),
    "vault.list": _r("member", "list an agent's files"),
    "vault.download": _r("member", "download a file"),
    "vault.delete": _r("operator", "delete a file"),
    # usage (what the agents cost: operators run them, admins pay for them)
    "usage.list": _r("operator", "read the organization's model token usage and its cost per agent and day"),
    "prices.put": _r("admin", "add or replace a model's price per million tokens from a given time"),
    "prices.list": _r("admin", "list the organization's model prices"),
    "prices.delete": _r("admin", "delete a model price"),
    # the organization's credentials (secrets: managed by admins with an API key, never shown) and the
    # model each agent spends them on
    "credentials.put": _r("admin", "store or rotate a credential", api_key_only=True, team_keys=False),
    "credentials.list": _r("admin", "list the organization's credentials (names only)", team_keys=False),
    "credentials.get": _r("admin", "read a credential's name and dates", team_keys=False),
    "credentials.delete": _r("admin", "delete a credential", api_key_only=True, team_keys=False),
    "agents.model.set": _r("admin", "set an agent's model and the credential it uses"),
    "agents.model.get": _r("admin", "read an agent's model configuration"),
    "agents.model.check": _r("admin", "call an agent's model once to check it"),
    "agents.embeddings.set": _r("admin", "set the embeddings model an agent's memory is searched by"),
    "agents.embeddings.get": _r("admin", "read an agent's embeddings configuration"),
    "agents.embeddings.delete": _r("admin", "remove an agent's embeddings model (full-text memory search only)"),
    # the organization's share of the operator's bus and database checks (their cross-tenant forms are the CLI's)
    "org.bus.get": _r("admin", "read the organization's event-bus counts", team_keys=False),
    "org.dead_letters.list": _r("admin", "list the organization's dead-lettered events", team_keys=False),
    "org.dead_letters.requeue": _r("admin", "requeue one of the organization's dead-lettered events",
                                   team_keys=False),
    "org.orphans.scan": _r("admin", "scan the organization's rows for IDs that cannot be right", team_keys=False),
}


def authorize(caller: Caller, operation: str, *, role: str | None = None) -> Rule:
    """Raise :class:`AccessDenied` (403) unless ``caller`` may call ``operation``; returns its rule.

    ``role`` raises the bar for one call (``sessions.messages.append`` of an ``assistant`` message needs
    operator).  Order: platform admin, credential kind, team key, person, role.
    """
    rule = RULES[operation]
    if rule.platform_admin and not caller.platform_admin:
        raise AccessDenied(403, f"to {rule.summary} needs a platform-admin key", operation=operation)
    if rule.api_key_only and caller.signed_context:
        raise AccessDenied(403, f"a signed context cannot {rule.summary}: use an API key", operation=operation)
    if not rule.team_keys and caller.team_id is not None:
        raise AccessDenied(403, f"a team key cannot {rule.summary}", operation=operation)
    if rule.person and caller.user_id is None:
        raise AccessDenied(403, f"to {rule.summary} needs a key that acts as a person", operation=operation)
    needed = role if role is not None and role_rank(role) > role_rank(rule.role) else rule.role
    if role_rank(caller.role) < role_rank(needed):
        raise AccessDenied(403, f"to {rule.summary} needs the {needed} role or higher; the key has {caller.role}",
                           operation=operation)
    return rule


def sees_every_scope(caller: Caller) -> bool:
    return role_rank(caller.role) >= role_rank(ALL_SCOPES_ROLE)


def may_use_scope(caller: Caller, scope: str) -> bool:
    """Whether ``caller`` may read and write data in ``scope`` (the table in the module docstring)."""
    if sees_every_scope(caller):
        return True
    return caller.team_id is None and caller.user_id is not None and scope == caller.user_id


def visible_scopes(caller: Caller) -> frozenset[str] | None:
    """The scopes ``caller`` may see, for filtering lists: ``None`` means all of them."""
    if sees_every_scope(caller):
        return None
    if caller.team_id is None and caller.user_id is not None:
        return frozenset({caller.user_id})
    return frozenset()


def scope_filter(caller: Caller, operation: str, requested: str | None) -> tuple[bool, str | None]:
    """For a list: ``(nothing_visible, user_id)`` — whether the caller may see no scope at all (the answer is an
    empty page), else the scope to filter on (``None``: every scope).  A scope the caller named itself and may
    not use is 403 (:func:`require_scope`)."""
    if requested is not None:
        require_scope(caller, operation, requested)
        return False, requested
    visible = visible_scopes(caller)
    if visible is None:
        return False, None
    if not visible:
        return True, None
    (only,) = visible
    return False, only


def require_scope(caller: Caller, operation: str, scope: str, *, row: tuple[str, object] | None = None) -> None:
    """Raise unless ``caller`` may use ``scope`` for ``operation``.

    When the caller reached the scope through a row it asked for by key or ID (``row`` = ``(entity, ref)``: a
    session, a cron job), the refusal is :class:`NotFoundError` for that row — the same answer as for a
    missing one, so it never confirms that someone else's row exists.  When the caller named the scope itself
    (``user_id`` in a request), it is :class:`AccessDenied` 403, which reveals nothing it did not say.
    """
    if may_use_scope(caller, scope):
        return
    if row is not None:
        raise NotFoundError(*row)
    who = "a key acting as nobody" if caller.user_id is None or caller.team_id is not None \
        else f"a {caller.role} key acting as {caller.user_id}"
    shown = "the agent's own scope" if scope == "" else f"the memory scope {scope[:100]!r}"
    raise AccessDenied(403, f"{who} cannot use {shown}: a member may use its own person's scope only "
                            "(owners, admins and operators: any scope)", operation=operation)


def rules_table() -> str:
    """The operation table as Markdown, for ``docs/permissions.md`` (a test keeps the page equal to it)."""
    lines = ["| operation | lowest role | also | scoped |", "|---|---|---|---|"]
    for name, rule in RULES.items():
        also = [text for flag, text in ((rule.platform_admin, "platform-admin key"),
                                        (rule.api_key_only, "not a signed context"),
                                        (not rule.team_keys, "not a team key"),
                                        (rule.person, "acting as a person")) if flag]
        lines.append(f"| `{name}` — {rule.summary} | {rule.role} | {', '.join(also) or '—'} | "
                     f"{'yes' if rule.scoped else '—'} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(rules_table())
