"""Every operation of the OpenAPI document, and every WebSocket method, by every kind of caller, in every kind of
memory scope: each answer is what the access policy's table says (both engines).

Callers: owner, admin, operator (each acting as a person), a member acting as a person, a member acting as
nobody, a team key, and a signed context (of the owner's key).  Scopes: the caller's own person, another
person, a group chat, the agent's own.  The expectation below is computed from the declared table
(``RULES`` and the scope table of ``agentfy.permissions.access``), not by calling the policy code; every
request is otherwise valid, so the policy is the only reason for a refusal.
"""

from __future__ import annotations

import base64
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from agentfy.gateway.app import create_app
from agentfy.gateway.auth import Principal, sign_context
from agentfy.identity import OrgId, Scope
from agentfy.identity.roles import role_rank
from agentfy.ids import format_id
from agentfy.permissions.access import RULES
from agentfy.settings import Settings
from agentfy.store.db import Database
from agentfy.store.repos import (
    agents,
    api_keys,
    channel_access,
    channels,
    credentials,
    cron,
    invitations,
    knowledge,
    links,
    memory,
    orgs,
    permissions,
    prices,
    sessions,
    skills,
    tasks,
    teams,
    vault,
)
from agentfy.store.repos.credentials import CredentialCipher
from agentfy.store.repos.memory import MemoryDocumentInput
from agentfy.store.repos.vault import VaultUpload
from tests.helpers.dead_letters import dead_letter
from tests.helpers.mcp_server import closed_port_url

pytestmark = pytest.mark.slow
SECRET = b"s" * 32
GROUP = "group:telegram:-1001"
AGENT_SCOPE = ""
WS_METHODS = ("agents.list", "agents.get", "agents.create", "agents.update", "agents.delete", "agents.heartbeat",
              "agents.send",
              "context.sign", "subscribe", "unsubscribe")
_counter = itertools.count()


@pytest.fixture
def client(db: Database) -> Iterator[TestClient]:
    """Binding a bot stores its token encrypted: the gateway is given the credentials key."""
    settings = Settings(credentials_key=SecretStr(base64.b64encode(b"k" * 32).decode()))
    with TestClient(create_app(db, signing_secret=b"s" * 32, settings=settings)) as test_client:
        yield test_client


def unique(stem: str) -> str:
    return f"{stem}-{next(_counter)}"


@dataclass
class Caller:
    name: str
    role: str
    token: str
    user: str | None = None
    team: str | None = None
    signed: bool = False
    platform_admin: bool = False

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@dataclass
class World:
    db: Database
    scope: Scope
    other_org: Scope
    agent_id: str
    callers: dict[str, Caller]
    other_person: str  # a member none of the callers acts as
    sessions: dict[str, str] = field(default_factory=dict)  # scope -> session key
    jobs: dict[str, str] = field(default_factory=dict)  # scope -> cron job ID
    entities: dict[str, str] = field(default_factory=dict)  # scope -> entity ID
    relations: dict[str, str] = field(default_factory=dict)  # scope -> relation ID (both ends in the scope)
    documents: dict[str, str] = field(default_factory=dict)  # scope -> memory document ID
    summaries: dict[str, str] = field(default_factory=dict)  # scope -> episodic summary ID
    vault_document: str = ""
    skill_of: dict[str | None, str] = field(default_factory=dict)  # owner -> skill

    def tx(self) -> Any:
        return self.db.transaction()


def build(db: Database) -> World:
    with db.transaction() as tx:
        platform, _ = orgs.ensure_platform_organization(tx)
        admin_key = api_keys.create_api_key(tx, Scope(platform.id), name="platform", role="owner",
                                            platform_admin=True).key
        acme = Scope(orgs.create_organization(tx, slug="acme", name="Acme").id)
        globex = Scope(orgs.create_organization(tx, slug="globex", name="Globex").id)
        bot = agents.create_agent(tx, acme, agent_key="bot")
        callers: dict[str, Caller] = {}
        for role, name in (("owner", "owner"), ("admin", "admin"), ("operator", "operator"),
                           ("member", "member-person")):
            person = orgs.create_user(tx, display_name=name).id
            orgs.add_member(tx, acme, person, role)
            key = api_keys.create_api_key(tx, acme, name=name, role=role, user_id=person).key
            callers[name] = Caller(name, role, key, user=person)
        callers["member-nobody"] = Caller("member-nobody", "member",
                                          api_keys.create_api_key(tx, acme, name="nobody", role="member").key)
        team = teams.create_team(tx, acme, name="core")
        team_key = teams.create_team_api_key(tx, acme, team.id, name="ci")
        callers["team-key"] = Caller("team-key", "member", team_key.key, team=team.id)
        other_person = orgs.create_user(tx, display_name="Vera").id
        orgs.add_member(tx, acme, other_person, "member")
        owner = callers["owner"]
        owner_key = api_keys.key_chain(tx, owner.token)
        assert owner_key is not None
        token = sign_context(tx, SECRET, Principal(OrgId(acme.tenant_id), "owner", owner.user,
                                                   key_id=owner_key.key.id))
        callers["signed-context"] = Caller("signed-context", "owner", token, user=owner.user, signed=True)
        callers["platform"] = Caller("platform", "owner", admin_key, platform_admin=True)
    world = World(db, acme, globex, bot.id, callers, other_person)
    scopes = {c.user for c in callers.values() if c.user} | {other_person, GROUP, AGENT_SCOPE}
    with db.transaction() as tx:
        for scope in scopes:
            world.sessions[scope] = key = unique("session")
            sessions.open_session(tx, acme, key, bot.id, scope)
            world.jobs[scope] = cron.create_cron_job(tx, acme, bot.id, created_by="setup", schedule="@daily",
                                                     user_id_scope=scope).id
            first, second = knowledge.ingest_entities(tx, acme, bot.id, [unique("e"), unique("e")], user_id=scope)
            world.entities[scope] = first
            world.relations[scope] = knowledge.ingest_graph(tx, acme, entities=[], relations=[
                knowledge.RelationInput(agent_id=bot.id, source_entity_id=first, target_entity_id=second,
                                        relation="knows")]).relation_ids[0]
            (world.documents[scope],) = memory.upsert_memory_documents(
                tx, acme, bot.id, [MemoryDocumentInput(user_id=scope, path=unique("doc"), content="x")])
            world.summaries[scope] = memory.create_episodic_summary(
                tx, acme, agent_id=bot.id, user_id=scope, session_key=unique("episode"), compaction_count=0,
                summary="x")[0].id
        (world.vault_document,) = vault.upload_documents(tx, acme, [VaultUpload(agent_id=bot.id, path="a.txt",
                                                                                content_type="text/plain",
                                                                                content=b"a")])
    return world


# -- what the table says ----------------------------------------------------------------------------------------
def expected(caller: Caller, operation: str, scope: str | None, *, hidden: bool) -> int | None:
    """``None`` when the call is allowed, else the status the table gives (403, or 404 for a row it hides)."""
    rule = RULES[operation]
    if rule.platform_admin and not caller.platform_admin:
        return 403
    if rule.api_key_only and caller.signed:
        return 403
    if not rule.team_keys and caller.team:
        return 403
    if rule.person and caller.user is None:
        return 403
    if role_rank(caller.role) < role_rank(rule.role):
        return 403
    if scope is not None:
        own = caller.team is None and caller.user is not None and scope == caller.user
        if not (role_rank(caller.role) >= role_rank("operator") or own):
            return 404 if hidden else 403
    return None


# -- one valid request per operation --------------------------------------------------------------------------
@dataclass
class Request:
    method: str
    path: str
    json: Any = None
    params: dict[str, str] | None = None
    files: Any = None
    data: Any = None
    hidden: bool = False  # the scope is reached through a row the caller named (a refusal is 404)
    present: Callable[[list[dict[str, Any]]], bool] | None = None  # a list: is the scope's row in it?


Build = Callable[[World, Caller, str | None], Request]


def fresh_agent(world: World) -> str:
    with world.tx() as tx:
        return agents.create_agent(tx, world.scope, agent_key=unique("fresh")).id


def _fresh_embedded_agent(world: World) -> str:
    with world.tx() as tx:
        return agents.create_agent(tx, world.scope, agent_key=unique("fresh"), config={
            "embeddings": {"base_url": "http://127.0.0.1:9/v1", "model": "m"}}).id


def fresh_member(world: World, role: str = "member") -> str:
    with world.tx() as tx:
        person = orgs.create_user(tx, display_name="fresh").id
        orgs.add_member(tx, world.scope, person, role)
    return person


def fresh_team(world: World) -> str:
    with world.tx() as tx:
        return teams.create_team(tx, world.scope, name=unique("team")).id


def fresh_task(world: World, status: str = "open") -> str:
    """A task of a new team the bot is on, brought to ``status`` (open, claimed or failed)."""
    with world.tx() as tx:
        team = teams.create_team(tx, world.scope, name=unique("team"), lead_agent_id=world.agent_id)
        task = tasks.create_task(tx, world.scope, team.id, title="t")
        if status in ("claimed", "failed"):
            tasks.claim_task(tx, world.scope, task.id, world.agent_id)
        if status == "failed":
            tasks.fail_task(tx, world.scope, task.id, "broke")
        return task.id


def _fresh_attachment(world: World) -> str:
    task_id = fresh_task(world)
    with world.tx() as tx:
        attachment = tasks.add_attachment(tx, world.scope, task_id, name="a")
    return f"/v1/tasks/{task_id}/attachments/{attachment.id}"


def own_skill(world: World, caller: Caller) -> str:
    with world.tx() as tx:
        return skills.create_skill(tx, world.scope, owner_id=caller.user or world.other_person, name=unique("skill"),
                                   content="c").id


def foreign_invitation(world: World, caller: Caller) -> str:
    """An invitation from a new organization to the caller's person (or to nobody, for keys without one)."""
    with world.tx() as tx:
        inviting = Scope(orgs.create_organization(tx, slug=unique("inviting"), name="Inviting").id)
        return invitations.invite(tx, inviting, caller.user or format_id("user"), "member", invited_by=None).id


def ids_in(key: str, value: str) -> Callable[[list[dict[str, Any]]], bool]:
    return lambda rows: any(row[key] == value for row in rows)


UNSCOPED: dict[str, Build] = {
    "orgs.create": lambda w, c, s: Request("POST", "/v1/orgs", {"slug": unique("org"), "name": "N"}),
    "orgs.list": lambda w, c, s: Request("GET", "/v1/orgs"),
    "orgs.delete": lambda w, c, s: Request("DELETE", f"/v1/orgs/{_fresh_org(w)}"),
    "org.get": lambda w, c, s: Request("GET", "/v1/org"),
    "org.default_agent.set": lambda w, c, s: Request("PUT", "/v1/org/default-agent", {"agent": "bot"}),
    "org.members.list": lambda w, c, s: Request("GET", "/v1/org/members"),
    "org.members.add": lambda w, c, s: Request("POST", "/v1/org/members", {"display_name": "New", "role": "member"}),
    "org.members.update": lambda w, c, s: Request("PATCH", f"/v1/org/members/{fresh_member(w)}", {"role": "member"}),
    "org.members.remove": lambda w, c, s: Request("DELETE", f"/v1/org/members/{fresh_member(w)}"),
    "org.invitations.list": lambda w, c, s: Request("GET", "/v1/org/invitations"),
    "org.invitations.revoke": lambda w, c, s: Request("DELETE", f"/v1/org/invitations/{_own_invitation(w)}"),
    "invitations.list": lambda w, c, s: Request("GET", "/v1/invitations"),
    "invitations.accept": lambda w, c, s: Request("POST", f"/v1/invitations/{foreign_invitation(w, c)}/accept"),
    "invitations.decline": lambda w, c, s: Request("POST", f"/v1/invitations/{foreign_invitation(w, c)}/decline"),
    "org.api_keys.create": lambda w, c, s: Request("POST", "/v1/org/api-keys", {"name": "k", "role": "member"}),
    "org.api_keys.list": lambda w, c, s: Request("GET", "/v1/org/api-keys"),
    "org.api_keys.revoke": lambda w, c, s: Request("DELETE", f"/v1/org/api-keys/{_fresh_key(w)}"),
    "agents.list": lambda w, c, s: Request("GET", "/v1/agents"),
    "agents.get": lambda w, c, s: Request("GET", "/v1/agents/bot"),
    "agents.create": lambda w, c, s: Request("POST", "/v1/agents", {"agent_key": unique("new")}),
    "agents.update": lambda w, c, s: Request("PATCH", f"/v1/agents/{fresh_agent(w)}", {"display_name": "x"}),
    "agents.delete": lambda w, c, s: Request("DELETE", f"/v1/agents/{fresh_agent(w)}"),
    "agents.heartbeat": lambda w, c, s: Request("POST", "/v1/agents/bot/heartbeat"),
    "agents.messages.send": lambda w, c, s: Request("POST", "/v1/agents/bot/messages", json={"text": "hi"}),
    "openai.chat.completions.create": lambda w, c, s: Request("POST", "/v1/chat/completions", json={
        "model": "bot", "messages": [{"role": "user", "content": "hi"}]}),
    "openai.models.list": lambda w, c, s: Request("GET", "/v1/models"),
    "ids.explain": lambda w, c, s: Request("GET", f"/v1/ids/{w.agent_id}"),
    "links.create": lambda w, c, s: Request("POST", "/v1/agents/bot/links", {"target": fresh_agent(w)}),
    "links.list": lambda w, c, s: Request("GET", "/v1/agents/bot/links"),
    "links.delete": lambda w, c, s: Request("DELETE", f"/v1/links/{_fresh_link(w)}"),
    "mcp_servers.add": lambda w, c, s: Request("POST", "/v1/agents/bot/mcp-servers",
                                               {"name": unique("m"), "url": closed_port_url()}),
    "mcp_servers.list": lambda w, c, s: Request("GET", "/v1/agents/bot/mcp-servers"),
    "mcp_servers.delete": lambda w, c, s: Request("DELETE", f"/v1/mcp-servers/{_fresh_server(w)}"),
    "mcp_servers.tools": lambda w, c, s: Request("GET", f"/v1/mcp-servers/{_fresh_server(w)}/tools"),
    "grants.set": lambda w, c, s: Request("POST", "/v1/agents/bot/grants", {
        "chat_scope": GROUP, "config_type": "file_writer", "sender_id": unique("s")}),
    "grants.list": lambda w, c, s: Request("GET", "/v1/agents/bot/grants"),
    "grants.delete": lambda w, c, s: Request("DELETE", f"/v1/grants/{_fresh_grant(w)}"),
    "channels.telegram.bind": lambda w, c, s: Request("PUT", "/v1/agents/bot/channels/telegram", {
        "bot_username": f"{unique('b').replace('-', '_')}_bot", "bot_token": "1:" + "a" * 30}),
    "channels.discord.bind": lambda w, c, s: Request("PUT", "/v1/agents/bot/channels/discord", {
        "application_id": str(10**17 + next(_counter)), "public_key": "ab" * 32}),
    "channels.list": lambda w, c, s: Request("GET", "/v1/agents/bot/channels"),
    "channels.unbind": lambda w, c, s: Request("DELETE", f"/v1/agents/{_fresh_bound_agent(w)}/channels/telegram"),
    "channels.access.get": lambda w, c, s: Request("GET", "/v1/agents/bot/channel-access"),
    "channels.access.set": lambda w, c, s: Request("PUT", "/v1/agents/bot/channel-access", {"group_policy": "mention"}),
    "channels.allowlist.list": lambda w, c, s: Request("GET", "/v1/agents/bot/channel-access/allowlist"),
    "channels.allowlist.add": lambda w, c, s: Request("POST", "/v1/agents/bot/channel-access/allowlist", {
        "platform": "telegram", "sender_id": str(next(_counter))}),
    "channels.allowlist.remove": lambda w, c, s: Request(
        "DELETE", f"/v1/agents/bot/channel-access/allowlist/telegram/{_fresh_allowed(w)}"),
    "channels.pairings.list": lambda w, c, s: Request("GET", "/v1/agents/bot/channel-access/pairings"),
    "channels.pairings.approve": lambda w, c, s: Request("POST", "/v1/agents/bot/channel-access/pairings/approve",
                                                         {"code": _fresh_code(w)}),
    "cron.create": lambda w, c, s: Request("POST", "/v1/agents/bot/cron-jobs", {"schedule": "@hourly"}),
    "skills.create": lambda w, c, s: Request("POST", "/v1/skills", {"name": unique("sk"), "content": "c"}),
    "skills.list": lambda w, c, s: Request("GET", "/v1/skills"),
    "skills.get": lambda w, c, s: Request("GET", f"/v1/skills/{own_skill(w, c)}"),
    "skills.update": lambda w, c, s: Request("PATCH", f"/v1/skills/{own_skill(w, c)}", {"content": "d"}),
    "skills.delete": lambda w, c, s: Request("DELETE", f"/v1/skills/{own_skill(w, c)}"),
    "teams.create": lambda w, c, s: Request("POST", "/v1/teams", {"name": unique("t")}),
    "teams.list": lambda w, c, s: Request("GET", "/v1/teams"),
    "teams.get": lambda w, c, s: Request("GET", f"/v1/teams/{fresh_team(w)}"),
    "teams.delete": lambda w, c, s: Request("DELETE", f"/v1/teams/{fresh_team(w)}"),
    "teams.lead.set": lambda w, c, s: Request("PUT", f"/v1/teams/{fresh_team(w)}/lead", {"agent": "bot"}),
    "teams.members.add": lambda w, c, s: Request("POST", f"/v1/teams/{fresh_team(w)}/members", {"agent": "bot"}),
    "teams.members.list": lambda w, c, s: Request("GET", f"/v1/teams/{fresh_team(w)}/members"),
    "teams.members.remove": lambda w, c, s: Request("DELETE", _fresh_membership(w)),
    "teams.api_keys.create": lambda w, c, s: Request("POST", f"/v1/teams/{fresh_team(w)}/api-keys", {"name": "k"}),
    "teams.api_keys.list": lambda w, c, s: Request("GET", f"/v1/teams/{fresh_team(w)}/api-keys"),
    "teams.api_keys.revoke": lambda w, c, s: Request("DELETE", _fresh_team_key(w)),
    "tasks.create": lambda w, c, s: Request("POST", f"/v1/teams/{fresh_team(w)}/tasks", {"title": "t"}),
    "tasks.list": lambda w, c, s: Request("GET", f"/v1/teams/{fresh_team(w)}/tasks", params={"status": "open"}),
    "tasks.get": lambda w, c, s: Request("GET", f"/v1/tasks/{fresh_task(w)}"),
    "tasks.delete": lambda w, c, s: Request("DELETE", f"/v1/tasks/{fresh_task(w)}"),
    "tasks.assign": lambda w, c, s: Request("POST", f"/v1/tasks/{fresh_task(w)}/assign", {"agent": "bot"}),
    "tasks.claim": lambda w, c, s: Request("POST", f"/v1/tasks/{fresh_task(w)}/claim", {"agent": "bot"}),
    "tasks.complete": lambda w, c, s: Request("POST", f"/v1/tasks/{fresh_task(w, 'claimed')}/complete",
                                              {"result": "r"}),
    "tasks.fail": lambda w, c, s: Request("POST", f"/v1/tasks/{fresh_task(w, 'claimed')}/fail", {"error": "e"}),
    "tasks.cancel": lambda w, c, s: Request("POST", f"/v1/tasks/{fresh_task(w)}/cancel"),
    "tasks.retry": lambda w, c, s: Request("POST", f"/v1/tasks/{fresh_task(w, 'failed')}/retry"),
    "tasks.dispatch": lambda w, c, s: Request("POST", f"/v1/tasks/{fresh_task(w)}/dispatch", {"agent": "bot"}),
    "tasks.attachments.add": lambda w, c, s: Request("POST", f"/v1/tasks/{fresh_task(w)}/attachments",
                                                     {"name": "n", "vault_document_id": w.vault_document}),
    "tasks.attachments.list": lambda w, c, s: Request("GET", f"/v1/tasks/{fresh_task(w)}/attachments"),
    "tasks.attachments.delete": lambda w, c, s: Request("DELETE", _fresh_attachment(w)),
    "vault.upload": lambda w, c, s: Request("POST", "/v1/vault/documents", data={"agent_id": "bot",
                                                                                 "path": unique("f") + ".txt"},
                                            files={"file": ("f.txt", b"x", "text/plain")}),
    "vault.list": lambda w, c, s: Request("GET", "/v1/agents/bot/vault"),
    "vault.download": lambda w, c, s: Request("GET", f"/v1/vault/documents/{w.vault_document}"),
    "vault.delete": lambda w, c, s: Request("DELETE", f"/v1/vault/documents/{_fresh_vault(w)}"),
    "usage.list": lambda w, c, s: Request("GET", "/v1/usage?agent=bot"),
    "prices.put": lambda w, c, s: Request("PUT", "/v1/prices", {
        "provider": "openai", "model": unique("model"), "effective_from": "2026-01-01T00:00:00Z", "currency": "USD",
        "input_per_million": "1", "output_per_million": "2"}),
    "prices.list": lambda w, c, s: Request("GET", "/v1/prices"),
    "prices.delete": lambda w, c, s: Request("DELETE", "/v1/prices", params=_fresh_price(w)),
    "credentials.put": lambda w, c, s: Request("PUT", f"/v1/credentials/{unique('cred')}", {"secret": "s3cret"}),
    "credentials.list": lambda w, c, s: Request("GET", "/v1/credentials"),
    "credentials.get": lambda w, c, s: Request("GET", f"/v1/credentials/{_fresh_credential(w)}"),
    "credentials.delete": lambda w, c, s: Request("DELETE", f"/v1/credentials/{_fresh_credential(w)}"),
    "agents.model.set": lambda w, c, s: Request("PUT", f"/v1/agents/{fresh_agent(w)}/model", {
        "provider": "offline", "context_window": 1000}),
    "agents.model.get": lambda w, c, s: Request("GET", "/v1/agents/bot/model"),
    "agents.model.check": lambda w, c, s: Request("POST", "/v1/agents/bot/model/check"),
    "agents.embeddings.set": lambda w, c, s: Request("PUT", f"/v1/agents/{fresh_agent(w)}/embeddings", {
        "base_url": "http://127.0.0.1:9/v1", "model": "m"}),
    "agents.embeddings.get": lambda w, c, s: Request("GET", "/v1/agents/bot/embeddings"),
    "agents.embeddings.delete": lambda w, c, s: Request("DELETE", f"/v1/agents/{_fresh_embedded_agent(w)}/embeddings"),
    "org.bus.get": lambda w, c, s: Request("GET", "/v1/org/bus"),
    "org.dead_letters.list": lambda w, c, s: Request("GET", "/v1/org/dead-letters"),
    "org.dead_letters.requeue": lambda w, c, s: Request(
        "POST", f"/v1/org/dead-letters/{dead_letter(w.db, w.scope, unique('doomed'))}/requeue"),
    "org.orphans.scan": lambda w, c, s: Request("GET", "/v1/org/orphans"),
}


def _fresh_price(world: World) -> dict[str, str]:
    key = {"provider": "openai", "model": unique("model"), "effective_from": "2026-01-01T00:00:00Z"}
    with world.tx() as tx:
        prices.put_price(tx, world.scope, **key, currency="USD", input_micros_per_million=1,
                         output_micros_per_million=1)
    return key


def _fresh_credential(world: World) -> str:
    name = unique("cred")
    with world.tx() as tx:
        credentials.put_credential(tx, world.scope, CredentialCipher(b"k" * 32), name, b"s3cret")
    return name


def _fresh_org(world: World) -> str:
    with world.tx() as tx:
        return orgs.create_organization(tx, slug=unique("gone"), name="Gone").id


def _own_invitation(world: World) -> str:
    with world.tx() as tx:
        return invitations.invite(tx, world.scope, format_id("user"), "member", invited_by=None).id


def _fresh_key(world: World) -> str:
    with world.tx() as tx:
        return api_keys.create_api_key(tx, world.scope, name="k", role="member").record.id


def _fresh_link(world: World) -> str:
    with world.tx() as tx:
        return links.create_link(tx, world.scope, world.agent_id,
                                 agents.create_agent(tx, world.scope, agent_key=unique("t")).id).id


def _fresh_server(world: World) -> str:
    with world.tx() as tx:
        return links.add_mcp_server(tx, world.scope, world.agent_id, name=unique("m"), url=closed_port_url()).id


def _fresh_bound_agent(world: World) -> str:
    agent_id = fresh_agent(world)
    with world.tx() as tx:
        address = unique("b").replace("-", "_") + "_bot"
        channels.bind(tx, world.scope, CredentialCipher(b"k" * 32), agent_id, "telegram", address=address,
                      name=address, verifier="0" * 64, token=None)
    return agent_id


def _fresh_allowed(world: World) -> str:
    sender = str(next(_counter))
    with world.tx() as tx:
        channel_access.allow(tx, world.scope, world.agent_id, "telegram", sender)
    return sender


def _fresh_code(world: World) -> str:
    with world.tx() as tx:
        code = channel_access.request_pairing(tx, world.scope, world.agent_id, "telegram", str(next(_counter)))
    assert code is not None
    return code


def _fresh_grant(world: World) -> str:
    with world.tx() as tx:
        return permissions.grant(tx, world.scope, world.agent_id, chat_scope=GROUP, config_type="file_writer",
                                 sender_id=unique("s"), allow=True).id


def _fresh_membership(world: World) -> str:
    team = fresh_team(world)
    with world.tx() as tx:
        teams.add_member(tx, world.scope, team, world.agent_id)
    return f"/v1/teams/{team}/members/bot"


def _fresh_team_key(world: World) -> str:
    team = fresh_team(world)
    with world.tx() as tx:
        key = teams.create_team_api_key(tx, world.scope, team, name="k").api_key.id
    return f"/v1/teams/{team}/api-keys/{key}"


def _fresh_vault(world: World) -> str:
    with world.tx() as tx:
        return vault.upload_documents(tx, world.scope, [VaultUpload(agent_id=world.agent_id, path=unique("v"),
                                                                    content_type="text/plain", content=b"v")])[0]


def _fresh_session(world: World, scope: str) -> str:
    key = unique("s")
    with world.tx() as tx:
        sessions.open_session(tx, world.scope, key, world.agent_id, scope)
    return key


def _fresh_job(world: World, scope: str) -> str:
    with world.tx() as tx:
        return cron.create_cron_job(tx, world.scope, world.agent_id, created_by="x", schedule="@daily",
                                    user_id_scope=scope).id


SCOPED: dict[str, Build] = {
    "sessions.open": lambda w, c, s: Request("POST", "/v1/sessions", {"session_key": unique("o"), "agent": "bot",
                                                                      "user_id": s}),
    "sessions.get": lambda w, c, s: Request("GET", f"/v1/sessions/{w.sessions[s]}", hidden=True),
    "sessions.list": lambda w, c, s: Request("GET", "/v1/agents/bot/sessions", params={"user_id": s}),
    "sessions.messages.list": lambda w, c, s: Request("GET", f"/v1/sessions/{w.sessions[s]}/messages", hidden=True),
    "sessions.messages.append": lambda w, c, s: Request("POST", f"/v1/sessions/{w.sessions[s]}/messages",
                                                        {"role": "user", "content": "hi"}, hidden=True),
    "sessions.complete": lambda w, c, s: Request("POST", f"/v1/sessions/{_fresh_session(w, s)}/complete",
                                                 hidden=True),
    "sessions.delete": lambda w, c, s: Request("DELETE", f"/v1/sessions/{_fresh_session(w, s)}", hidden=True),
    "memory.documents.upsert": lambda w, c, s: Request("POST", "/v1/agents/bot/memory/documents:batch-upsert", {
        "documents": [{"user_id": s, "path": unique("p"), "content": "x"}]}),
    "memory.documents.list": lambda w, c, s: Request("GET", "/v1/agents/bot/memory/documents", params={"user_id": s}),
    "memory.search": lambda w, c, s: Request("GET", "/v1/agents/bot/memory/search", params={"query": "x", "scope": s}),
    "memory.episodes.list": lambda w, c, s: Request("GET", "/v1/agents/bot/memory/episodes", params={"user_id": s}),
    "knowledge.ingest": lambda w, c, s: Request("POST", "/v1/knowledge/ingest", {
        "entities": [{"agent": "bot", "user_id": s, "name": unique("n"), "entity_type": "concept"}]}),
    "cron.get": lambda w, c, s: Request("GET", f"/v1/cron-jobs/{w.jobs[s]}", hidden=True),
    "cron.update": lambda w, c, s: Request("PATCH", f"/v1/cron-jobs/{_fresh_job(w, s)}", {"enabled": False},
                                           hidden=True),
    "cron.delete": lambda w, c, s: Request("DELETE", f"/v1/cron-jobs/{_fresh_job(w, s)}", hidden=True),
    "cron.runs": lambda w, c, s: Request("GET", f"/v1/cron-jobs/{w.jobs[s]}/runs", hidden=True),
    "cron.run": lambda w, c, s: Request("POST", f"/v1/cron-jobs/{_fresh_job(w, s)}/run", hidden=True),
}
#: Lists that show a scope's rows only to callers who may see the scope (the answer is 200 either way).
FILTERED: dict[str, Build] = {
    "cron.list": lambda w, c, s: Request("GET", "/v1/agents/bot/cron-jobs", present=ids_in("id", w.jobs[s])),
    "sessions.list (all scopes)": lambda w, c, s: Request(
        "GET", "/v1/agents/bot/sessions", present=ids_in("session_key", w.sessions[s])),
    "knowledge.entities.list": lambda w, c, s: Request("GET", "/v1/agents/bot/knowledge/entities",
                                                       present=ids_in("id", w.entities[s])),
    "knowledge.relations.list": lambda w, c, s: Request("GET", "/v1/agents/bot/knowledge/relations",
                                                        present=ids_in("id", w.relations[s])),
    "memory.documents.list (all scopes)": lambda w, c, s: Request(
        "GET", "/v1/agents/bot/memory/documents", present=ids_in("id", w.documents[s])),
    "memory.episodes.list (all scopes)": lambda w, c, s: Request(
        "GET", "/v1/agents/bot/memory/episodes", present=ids_in("id", w.summaries[s])),
}


def scopes_of(world: World, caller: Caller) -> dict[str, str]:
    """The four kinds of scope, from this caller's point of view."""
    found = {"another person's": world.other_person, "a group's": GROUP, "the agent's own": AGENT_SCOPE}
    if caller.user is not None:
        found["its own person's"] = caller.user
    return found


def send(client: TestClient, caller: Caller, request: Request) -> Any:
    return client.request(request.method, request.path, json=request.json, params=request.params,
                          files=request.files, data=request.data, headers=caller.headers)


# -- the test ---------------------------------------------------------------------------------------------------
def test_every_operation_by_every_caller_in_every_scope_answers_as_the_table_says(db: Database,
                                                                                 client: TestClient) -> None:
    world = build(db)
    spec = client.get("/openapi.json").json()
    operations = {op["operationId"] for item in spec["paths"].values() for op in item.values()
                  if isinstance(op, dict) and "operationId" in op and not op["operationId"].startswith(("healthz",
                                                                                                          "readyz"))}
    covered = set(UNSCOPED) | set(SCOPED) | {name.split(" ")[0] for name in FILTERED}
    assert operations == covered, f"not covered: {operations - covered}; unknown: {covered - operations}"
    assert operations | set(WS_METHODS) == set(RULES), "every rule is an operation, every operation has a rule"

    mismatches: list[str] = []
    platform = world.callers["platform"]
    for operation in (op for op in UNSCOPED if RULES[op].platform_admin):  # platform administration
        answer = send(client, platform, UNSCOPED[operation](world, platform, None))
        if answer.status_code >= 300:
            mismatches.append(f"platform {operation}: {answer.status_code}: {answer.text[:200]}")
    for caller in (c for c in world.callers.values() if not c.platform_admin):  # everyone inside acme
        for operation, build_request in UNSCOPED.items():
            request = build_request(world, caller, None)
            answer = send(client, caller, request)
            want = expected(caller, operation, None, hidden=False)
            if (want is None and answer.status_code >= 300) or (want is not None and answer.status_code != want):
                mismatches.append(f"{caller.name} {operation}: {answer.status_code}, expected {want or '2xx'}: "
                                  f"{answer.text[:200]}")
        for (label, scope), (operation, build_request) in itertools.product(scopes_of(world, caller).items(),
                                                                             SCOPED.items()):
            request = build_request(world, caller, scope)
            answer = send(client, caller, request)
            want = expected(caller, operation, scope, hidden=request.hidden)
            if (want is None and answer.status_code >= 300) or (want is not None and answer.status_code != want):
                mismatches.append(f"{caller.name} {operation} in {label} scope: {answer.status_code}, expected "
                                  f"{want or '2xx'}: {answer.text[:200]}")
            if want == 404 and answer.status_code == 404:
                assert answer.json()["error"]["code"] == "not_found"
        for (label, scope), (name, build_request) in itertools.product(scopes_of(world, caller).items(),
                                                                        FILTERED.items()):
            operation = name.split(" ")[0]
            request = build_request(world, caller, scope)
            answer = send(client, caller, request)
            denied = expected(caller, operation, None, hidden=False)
            if denied is not None:
                if answer.status_code != denied:
                    mismatches.append(f"{caller.name} {name}: {answer.status_code}, expected {denied}")
                continue
            sees = expected(caller, operation, scope, hidden=False) is None
            assert request.present is not None
            shown = answer.status_code == 200 and request.present(answer.json()["items"])
            if answer.status_code != 200 or shown != sees:
                mismatches.append(f"{caller.name} {name}, the row in {label} scope: shown={shown}, expected {sees}")
    assert not mismatches, "\n".join(mismatches)


def test_every_websocket_method_by_every_caller_answers_as_the_table_says(db: Database, client: TestClient) -> None:
    world = build(db)
    params: dict[str, Callable[[], dict[str, Any]]] = {
        "agents.list": dict, "agents.get": lambda: {"agent": "bot"},
        "agents.create": lambda: {"agent_key": unique("ws")},
        "agents.update": lambda: {"agent": fresh_agent(world), "display_name": "x"},
        "agents.delete": lambda: {"agent": fresh_agent(world)}, "agents.heartbeat": lambda: {"agent": "bot"},
        "agents.send": lambda: {"agent": "bot", "text": "hi"},
        "context.sign": dict, "subscribe": dict, "unsubscribe": dict}
    assert set(params) == set(WS_METHODS)
    mismatches: list[str] = []
    for caller in world.callers.values():
        if caller.platform_admin:
            continue  # a platform key is another organization's
        with client.websocket_connect("/v1/ws", headers=caller.headers) as ws:
            for number, (method, make) in enumerate(params.items(), start=1):
                ws.send_json({"id": number, "method": method, "params": make()})
                while True:
                    reply = ws.receive_json()
                    if reply.get("id") == number:
                        break
                want = expected(caller, method, None, hidden=False)
                status = reply["error"]["status"] if "error" in reply else None
                if status != want:
                    mismatches.append(f"{caller.name} {method}: {status or 'ok'}, expected {want or 'ok'}: {reply}")
    assert not mismatches, "\n".join(mismatches)


def test_another_organizations_credentials_are_invisible_to_every_caller(db: Database, client: TestClient) -> None:
    """A credential of another organization: every caller of this one sees the same answer as for no credential
    (a 404 naming the name, or a list without it), whatever its role."""
    world = build(db)
    with world.tx() as tx:
        credentials.put_credential(tx, world.other_org, CredentialCipher(b"k" * 32), "theirs", b"their-secret")
    for caller in (c for c in world.callers.values() if not c.platform_admin):
        for method, operation in (("GET", "credentials.get"), ("DELETE", "credentials.delete")):
            allowed = expected(caller, operation, None, hidden=False) is None
            answer = client.request(method, "/v1/credentials/theirs", headers=caller.headers)
            assert answer.status_code == (404 if allowed else 403), (caller.name, method, answer.text)
            assert "their-secret" not in answer.text
        if expected(caller, "credentials.list", None, hidden=False) is None:
            listed = client.get("/v1/credentials", headers=caller.headers).json()["items"]
            assert "theirs" not in [item["name"] for item in listed]
    with world.tx() as tx:
        assert credentials.list_credential_names(tx, world.other_org) == ["theirs"]
