"""``session_send``: an agent posts into another of its own conversations for the person who asked — the
run there acts as that person (in a group, with their grant of that group) and its reply goes to that chat —
and never into another agent's or another organization's conversation, on both engines."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentfy.agents.router import Router
from agentfy.permissions.channels import telegram_context
from agentfy.runtime.inbound import Inbound, Reply
from agentfy.runtime.runner import Runtime
from agentfy.store.db import Database
from agentfy.store.repos import agents, audit, permissions
from tests.helpers.tenants import Tenant, make_tenant
from tests.runtime.helpers import run

GROUP_CHAT = -100123
GROUP = f"telegram:{GROUP_CHAT}"
ALICE = 1001


class Delivered:
    """The runtime's outbound: what it sent to chats on its own (the posted conversation's replies)."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str, str | None]] = []

    async def __call__(self, inbound: Inbound, reply: Reply) -> None:
        self.sent.append((inbound.channel, inbound.conversation, reply.text))


@pytest.fixture
def acme(db: Database) -> Tenant:
    return make_tenant(db, "acme", agent_key="bot")


@pytest.fixture
def delivered() -> Delivered:
    return Delivered()


@pytest.fixture
def runtime(db: Database, tmp_path: Path, delivered: Delivered) -> Runtime:
    return Runtime(db, Router(db), workspace_root=tmp_path / "workspaces", outbound=delivered)


def _in_group(tenant: Tenant, text: str, *, agent_key: str = "bot") -> Inbound:
    context = telegram_context(GROUP_CHAT, ALICE, is_group=True, tenant_id=tenant.scope.tenant_id)
    return Inbound(tenant.scope.tenant_id, agent_key, context, "telegram", GROUP, text)


def _in_dm(tenant: Tenant, text: str) -> Inbound:
    context = telegram_context(ALICE, ALICE, is_group=False, tenant_id=tenant.scope.tenant_id)
    return Inbound(tenant.scope.tenant_id, "bot", context, "telegram", f"telegram:{ALICE}", text)


def _say(runtime: Runtime, message: Inbound) -> Reply:
    async def turn() -> Reply:
        reply = await runtime(message)
        await runtime.wait_idle()
        return reply

    return run(turn())


def _grant(db: Database, tenant: Tenant) -> None:
    assert tenant.bot is not None
    with db.transaction() as tx:
        permissions.grant(tx, tenant.scope, tenant.bot.id, chat_scope=f"group:telegram:{GROUP_CHAT}",
                          config_type="file_writer", sender_id=str(ALICE), allow=True, granted_by="admin")


def test_a_post_into_the_group_acts_for_the_person_and_the_reply_goes_to_the_group(
        db: Database, runtime: Runtime, delivered: Delivered, acme: Tenant) -> None:
    group_key = _say(runtime, _in_group(acme, "hello group")).session_key
    listed = _say(runtime, _in_dm(acme, "/tool sessions_list")).text or ""
    assert group_key in listed and GROUP in listed
    # without Alice's grant of the group, the post's write there is refused (the group's rule, not the DM's)
    refused = _say(runtime, _in_dm(acme, f"/tool session_send session={group_key} "
                                         "text='/tool write_file path=note.txt content=hi'"))
    assert refused.text is not None and f"sent to {GROUP}" in refused.text
    assert len(delivered.sent) == 1 and delivered.sent[0][:2] == ("telegram", GROUP)
    assert "write_file: denied (no_grant): sender 1001" in (delivered.sent[0][2] or ""), delivered.sent
    assert not any(runtime.workspace_root.rglob("note*"))
    _grant(db, acme)
    _say(runtime, _in_dm(acme, f"/tool session_send session={group_key} "
                               "text='/tool write_file path=note.txt content=hi'"))
    assert delivered.sent[-1][:2] == ("telegram", GROUP) and "wrote note.txt" in (delivered.sent[-1][2] or "")
    written = [p for p in runtime.workspace_root.rglob("*") if p.is_file()]
    assert [p.relative_to(runtime.workspace_root).as_posix() for p in written] == [
        f"tenants/acme/agents/bot/scopes/group%3atelegram%3a{GROUP_CHAT}/note%2etxt"]  # the group's workspace
    with db.transaction(write=False) as tx:
        writers = {entry.actor_id for entry in audit.list_audit(tx, acme.scope, action="workspace.file.written")}
    assert writers == {str(ALICE)}  # the person, not session_send_tool


def test_only_the_agents_own_other_conversations_can_be_posted_into(db: Database, runtime: Runtime,
                                                                   delivered: Delivered, acme: Tenant) -> None:
    with db.transaction() as tx:
        agents.create_agent(tx, acme.scope, agent_key="helper")
    helpers_key = _say(runtime, _in_group(acme, "hello helper", agent_key="helper")).session_key
    globex = make_tenant(db, "globex", agent_key="bot")
    theirs = _say(runtime, _in_group(globex, "hello globex")).session_key
    own_dm = _say(runtime, _in_dm(acme, "hi")).session_key
    delivered.sent.clear()
    for key, problem in ((helpers_key, "is not a conversation of @bot"),
                         (theirs, "is not a conversation of @bot"),  # another organization's: as if missing
                         ("no-such-session", "is not a conversation of @bot"),
                         (own_dm, "that is this conversation")):
        reply = _say(runtime, _in_dm(acme, f"/tool session_send session={key} text=hello"))
        assert reply.text is not None and problem in reply.text, (key, reply.text)
    assert delivered.sent == []  # nothing was posted anywhere
