"""A Telegram message's whole journey through the real endpoints and the real runtime (offline model): the
webhook, the loop, the tools behind the permission policy, the session, and the reply to a fake Bot API —
on SQLite and PostgreSQL.  The identity rules are checked where a user would see them break: who may write
in a group, where the file lands and whose it is, and that two tenants sharing an agent key and a chat ID
share nothing."""

from __future__ import annotations

import pytest

from agentfy.events.consolidation import handlers
from agentfy.events.worker import Worker
from agentfy.identity import parse_agent_key
from agentfy.identity.roles import ROLES
from agentfy.permissions.channels import telegram_context
from agentfy.runtime.inbound import Inbound
from agentfy.store.db import Database
from agentfy.store.repos import agents, audit, cron, memory, permissions, sessions, teams
from tests.channels.helpers import ALICE, BOB, GROUP_CHAT, SCOPE, Live, agent_id_of, messages_of, sessions_of
from tests.helpers.tenants import Tenant, make_tenant


@pytest.fixture
def acme(db: Database) -> Tenant:
    return make_tenant(db, "acme", keys=ROLES, agent_key="support")


@pytest.fixture
def globex(db: Database) -> Tenant:
    return make_tenant(db, "globex", keys=ROLES, agent_key="support")  # the same key, another tenant


def test_a_group_write_needs_the_senders_grant_and_lands_in_the_groups_workspace(
        db: Database, live: Live, acme: Tenant) -> None:
    live.bind(acme, "SupportBot", "acme-secret-0123456789-abcdefgh")
    refused = live.say("SupportBot", "acme-secret-0123456789-abcdefgh", "/tool write_file path=plan.txt content=go")
    assert refused.startswith("write_file: denied (no_grant)") and f"sender ID {ALICE}" in refused
    assert live.files() == {}  # nothing written
    with db.transaction() as tx:
        permissions.grant(tx, acme.scope, agent_id_of(db, acme), chat_scope=SCOPE, config_type="file_writer",
                          sender_id=str(ALICE), allow=True, granted_by="admin")
    written = live.say("SupportBot", "acme-secret-0123456789-abcdefgh", "/tool write_file path=plan.txt content=go")
    assert written == f"write_file: wrote plan.txt (2 bytes) for {ALICE}"
    assert live.files() == {f"tenants/acme/agents/support/scopes/group%3atelegram%3a{GROUP_CHAT}/plan%2etxt": "go"}
    with db.transaction(write=False) as tx:
        (entry,) = audit.list_audit(tx, acme.scope, action="workspace.file.written")
    assert entry.actor_id == str(ALICE)  # the person, never the group
    # Bob, in the same group without a grant, is refused; the file is as Alice left it
    assert "denied (no_grant)" in live.say("SupportBot", "acme-secret-0123456789-abcdefgh",
                                            "/tool write_file path=plan.txt content=no", sender=BOB)
    assert list(live.files().values()) == ["go"]


def test_a_dm_is_the_senders_own_scope(db: Database, live: Live, acme: Tenant) -> None:
    live.bind(acme, "SupportBot", "acme-secret-0123456789-abcdefgh")
    reply = live.say("SupportBot", "acme-secret-0123456789-abcdefgh", "hello", chat=ALICE, chat_type="private")
    assert reply == "@support heard: hello"
    (session,) = sessions_of(db, acme)
    assert session[1] == str(ALICE)  # the DM's SCOPE is the sender


def test_two_tenants_with_the_same_agent_key_and_chat_share_nothing(db: Database, live: Live, acme: Tenant,
                                                                   globex: Tenant) -> None:
    live.bind(acme, "AcmeHelpBot", "acme-secret-0123456789-abcdefgh")
    live.bind(globex, "GlobexHelpBot", "globex-secret-0123456789-abcdefg")
    for tenant in (acme, globex):
        with db.transaction() as tx:
            permissions.grant(tx, tenant.scope, agent_id_of(db, tenant), chat_scope=SCOPE, config_type="file_writer",
                              sender_id=str(ALICE), allow=True, granted_by="admin")
    live.say("AcmeHelpBot", "acme-secret-0123456789-abcdefgh", "/tool write_file path=secret.txt content=acme")
    live.say("GlobexHelpBot", "globex-secret-0123456789-abcdefg", "/tool write_file path=secret.txt content=globex")
    assert live.files() == {
        f"tenants/acme/agents/support/scopes/group%3atelegram%3a{GROUP_CHAT}/secret%2etxt": "acme",
        f"tenants/globex/agents/support/scopes/group%3atelegram%3a{GROUP_CHAT}/secret%2etxt": "globex"}
    read = live.say("GlobexHelpBot", "globex-secret-0123456789-abcdefg", "/tool read_file path=secret.txt")
    assert read == "read_file: globex"
    (acme_session,), (globex_session,) = sessions_of(db, acme), sessions_of(db, globex)
    assert acme_session[2] == agent_id_of(db, acme) and globex_session[2] == agent_id_of(db, globex)
    assert acme_session[1] == globex_session[1] == SCOPE  # the same chat, each in its own tenant
    with db.transaction(write=False) as tx:
        texts = [m.content for m in sessions.list_messages(tx, globex.scope, globex_session[0])]
    assert texts and not any("acme" in text for text in texts)


def test_a_completed_conversation_becomes_episodic_memory(db: Database, live: Live, acme: Tenant) -> None:
    live.bind(acme, "SupportBot", "acme-secret-0123456789-abcdefgh")
    live.say("SupportBot", "acme-secret-0123456789-abcdefgh", "we launch on Friday", chat=ALICE, chat_type="private")
    runtime = live.runtime
    # the conversation the channel opened: the same tenant, agent key, SCOPE/ACTOR and conversation name
    inbound = Inbound(acme.scope.tenant_id, parse_agent_key("support"),
                      telegram_context(ALICE, ALICE, is_group=False, tenant_id=acme.scope.tenant_id,
                                       agent_key="support"),
                      channel="telegram", conversation=f"telegram:{ALICE}", text="")
    completed = live.client.portal.call(runtime.end_conversation, inbound)  # type: ignore[union-attr]
    assert completed is not None and completed.status == "completed"
    worker = Worker(db, handlers())
    while worker.run_once():
        pass
    with db.transaction(write=False) as tx:
        summaries = memory.list_unpromoted_summaries(tx, acme.scope, agent_id_of(db, acme), str(ALICE))
    assert [s.session_key for s in summaries] == [completed.session_key]


def test_a_subagent_and_a_delegate_act_for_the_original_sender_and_announce_to_the_chat(
        db: Database, live: Live, acme: Tenant) -> None:
    live.bind(acme, "SupportBot", "acme-secret-0123456789-abcdefgh")
    with db.transaction() as tx:
        helper = agents.create_agent(tx, acme.scope, agent_key="helper")
        # teammates: support leads a team helper is on, so support may delegate to it
        team = teams.create_team(tx, acme.scope, name="support desk", lead_agent_id=agent_id_of(db, acme))
        teams.add_member(tx, acme.scope, team.id, helper.id)
        for agent_id in (agent_id_of(db, acme), helper.id):
            permissions.grant(tx, acme.scope, agent_id, chat_scope=SCOPE, config_type="file_writer",
                              sender_id=str(ALICE), allow=True, granted_by="admin")
    before = len(live.platforms.requests)
    # Not ``say``: the subagent runs in the background from the moment the turn starts it, so its announcement
    # may reach the chat before the webhook call returns, and the turn's reply is not the only message sent.
    for command, replied in (("/tool spawn_subagent task='/tool write_file path=sub.txt content=ok'",
                              "spawn_subagent: spawned subagent task "),
                             ("/tool delegate agent=helper task='/tool write_file path=d.txt content=ok'",
                              "delegate: delegated task ")):
        start = len(live.platforms.requests)
        live.post("SupportBot", "acme-secret-0123456789-abcdefgh", command)
        # the turn's own reply (to message 42) is delivered by the time the webhook's turn is done
        assert [body["text"] for body in live.platforms.shown(start)
                if body.get("reply_parameters", {}).get("message_id") == 42
                and body["text"].startswith(replied)], live.platforms.requests[start:]
        live.wait_idle()
    # both wrote with Alice's grant, each in its own agent's workspace of the group
    assert set(live.files()) == {
        f"tenants/acme/agents/support/scopes/group%3atelegram%3a{GROUP_CHAT}/sub%2etxt",
        f"tenants/acme/agents/helper/scopes/group%3atelegram%3a{GROUP_CHAT}/d%2etxt"}
    with db.transaction(write=False) as tx:
        writers = {entry.actor_id for entry in audit.list_audit(tx, acme.scope, action="workspace.file.written")}
    assert writers == {str(ALICE)}
    # the announcements came back into the conversation as Alice's (not the subagent's, not the group's) ...
    announced = [m for m in messages_of(db, acme) if m[0] == "user" and m[2].startswith("write_file: wrote")]
    assert [(role, sender) for role, sender, _ in announced] == [("user", str(ALICE)), ("user", str(ALICE))]
    # ... and the agent's answers to them reached the group's chat, beside the turns' own replies (in no set
    # order: an announcement's turn does not wait for the reply of the turn that started the task to be sent)
    sent = live.platforms.shown(before)
    assert len(sent) == 4 and all(body["chat_id"] == GROUP_CHAT for body in sent)
    assert {body["text"] for body in sent if "reply_parameters" not in body} == {
        f"@support heard: write_file: wrote sub.txt (2 bytes) for {ALICE}",
        f"@support heard: write_file: wrote d.txt (2 bytes) for {ALICE}"}


def test_a_cron_job_made_in_the_group_runs_as_its_creator_and_answers_in_that_chat(
        db: Database, live: Live, acme: Tenant) -> None:
    live.bind(acme, "SupportBot", "acme-secret-0123456789-abcdefgh")
    with db.transaction() as tx:
        permissions.grant(tx, acme.scope, agent_id_of(db, acme), chat_scope=SCOPE, config_type="cron",
                          sender_id=str(ALICE), allow=True, granted_by="admin")
    made = live.say("SupportBot", "acme-secret-0123456789-abcdefgh",
                    "/tool create_cron schedule='every 1h' message='daily report'")
    assert "scheduled cron-job-" in made, made
    with db.transaction(write=False) as tx:
        (job,) = cron.list_cron_jobs(tx, acme.scope)
    assert (job.created_by, job.user_id, job.origin_channel) == (str(ALICE), SCOPE, "telegram")
    before = len(live.platforms.requests)
    run = live.client.post(f"/v1/cron-jobs/{job.id}/run", headers=acme.headers()).json()
    assert run["outcome"] == "ok", run
    (sent,) = live.platforms.shown(before)  # a new message in the group, not a reply to anyone
    assert sent["chat_id"] == GROUP_CHAT and sent["text"] == "@support heard: daily report"
    said = [m for m in messages_of(db, acme) if m[2] == "daily report"]
    assert [(role, sender) for role, sender, _ in said] == [("user", str(ALICE))]  # the creator, not the ticker
