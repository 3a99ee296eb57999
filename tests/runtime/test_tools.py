"""Tools behind the permission policy, with the ACTOR of the run: group writes, cron, skills, memory,
subagents and delegates that keep the original sender."""

from __future__ import annotations

import asyncio

from agentfy.permissions.channels import telegram_context
from agentfy.runtime.runner import Runtime
from agentfy.store.db import Database
from agentfy.store.repos import agents, audit, cron, links, memory, permissions, sessions, skills
from tests.helpers.tenants import Tenant
from tests.runtime.helpers import inbound, run, send

GROUP = "telegram:-100123"


def group_ctx(org: Tenant, sender: int, **extra: str):  # type: ignore[no-untyped-def]
    return telegram_context(-100123, sender, is_group=True, tenant_id=org.id, **extra)


def grant(db: Database, org: Tenant, sender: str, config_type: str = "file_writer", *, agent_id: str | None = None,
          allow: bool = True) -> None:
    with db.transaction() as tx:
        permissions.grant(tx, org.scope, agent_id or org.bot.id, chat_scope="group:telegram:-100123",
                          config_type=config_type, sender_id=sender, allow=allow, granted_by="admin")


def files(runtime: Runtime) -> dict[str, str]:
    return {str(p.relative_to(runtime.workspace_root)): p.read_text()
            for p in sorted(runtime.workspace_root.rglob("*")) if p.is_file()}


def test_a_group_write_without_a_grant_is_refused_and_nothing_is_written(db: Database, runtime: Runtime,
                                                                         acme: Tenant) -> None:
    reply = send(runtime, inbound(acme, group_ctx(acme, 1001), "/tool write_file path=notes.txt content=hi",
                                       conversation=GROUP))
    assert reply.text is not None and reply.text.startswith("write_file: denied (no_grant)")
    assert "grant you file_writer for group:telegram:-100123" in reply.text and "sender ID 1001" in reply.text
    assert files(runtime) == {}
    with db.transaction(write=False) as tx:
        assert audit.list_audit(tx, acme.scope, action="workspace.file.written") == []


def test_a_group_write_with_the_senders_grant_goes_to_the_group_workspace_attributed_to_the_sender(
        db: Database, runtime: Runtime, acme: Tenant) -> None:
    grant(db, acme, "1001")
    reply = send(runtime, inbound(acme, group_ctx(acme, 1001), '/tool write_file path=notes/today.txt content="hi all"',
                                       conversation=GROUP))
    assert reply.text == "write_file: wrote notes/today.txt (6 bytes) for 1001"
    assert files(runtime) == {
        "tenants/acme/agents/bot/scopes/group%3atelegram%3a-100123/notes/today%2etxt": "hi all"}
    with db.transaction(write=False) as tx:
        (entry,) = audit.list_audit(tx, acme.scope, action="workspace.file.written")
    assert entry.actor_id == "1001" and entry.target_id == "group:telegram:-100123/notes/today.txt"
    # another member of the same group has no grant: refused, the file stays as it was
    other = send(runtime, inbound(acme, group_ctx(acme, 1002), "/tool write_file path=notes/today.txt content=x",
                                       conversation=GROUP))
    assert other.text is not None and "denied (no_grant)" in other.text
    assert list(files(runtime).values()) == ["hi all"]
    # but every member reads the group's files (the SCOPE picks the directory)
    read = send(runtime, inbound(acme, group_ctx(acme, 1002), "/tool read_file path=notes/today.txt",
                                      conversation=GROUP))
    assert read.text == "read_file: hi all"


def test_a_dm_write_needs_no_grant_and_stays_in_the_senders_scope(runtime: Runtime, acme: Tenant) -> None:
    ctx = telegram_context(1001, 1001, is_group=False, tenant_id=acme.id)
    assert send(runtime, inbound(acme, ctx, "/tool write_file path=../../escape content=x")).text == \
        "write_file: wrote ../../escape (1 bytes) for 1001"
    assert list(files(runtime)) == ["tenants/acme/agents/bot/scopes/1001/%2e%2e/%2e%2e/escape"]
    bad = send(runtime, inbound(acme, ctx, "/tool write_file path=a//b content=x"))
    assert bad.text is not None and "has an empty part" in bad.text
    unknown = send(runtime, inbound(acme, ctx, "/tool format_disk"))
    assert unknown.text is not None and "there is no tool 'format_disk'" in unknown.text


def test_cron_and_skills_are_gated_and_owned_by_the_actor(db: Database, runtime: Runtime, acme: Tenant) -> None:
    refused = send(runtime, inbound(acme, group_ctx(acme, 1001), '/tool create_cron schedule="0 9 * * 1" message=hi',
                                         conversation=GROUP))
    assert refused.text is not None and "denied (no_grant)" in refused.text
    grant(db, acme, "1001")  # file_writer: cron and context files fall back to it
    made = send(runtime, inbound(acme, group_ctx(acme, 1001), '/tool create_cron schedule="0 9 * * 1" message=hi',
                                      conversation=GROUP))
    skill = send(runtime, inbound(acme, group_ctx(acme, 1001), "/tool publish_skill name=greet content=Wave",
                                       conversation=GROUP))
    assert made.text is not None and "for 1001" in made.text
    assert skill.text is not None and "owned by 1001" in skill.text
    with db.transaction(write=False) as tx:
        (job,) = cron.list_cron_jobs(tx, acme.scope, acme.bot.id)
        published = skills.get_skill_by_name(tx, acme.scope, "greet")
    assert (job.created_by, job.user_id, job.payload) == ("1001", "group:telegram:-100123", {"message": "hi"})
    assert published.owner_id == "1001"  # the person, never the group


def test_memory_search_sees_the_scope_only(db: Database, runtime: Runtime, acme: Tenant) -> None:
    with db.transaction() as tx:
        memory.upsert_memory_documents(tx, acme.scope, acme.bot.id, [
            memory.MemoryDocumentInput(user_id="group:telegram:-100123", path="plans.md", content="launch on Friday"),
            memory.MemoryDocumentInput(user_id="1001", path="private.md", content="launch secret")])
        memory.create_episodic_summary(tx, acme.scope, agent_id=acme.bot.id, user_id="group:telegram:-100123",
                                       session_key="s-1", compaction_count=0, summary="we moved the launch")
    found = send(runtime, inbound(acme, group_ctx(acme, 1002), "/tool search_memory query=launch", conversation=GROUP))
    assert found.text is not None
    assert sorted(found.text.removeprefix("search_memory: ").split("\n")) == [
        "[episodic] s-1 #0: we moved the launch", "[memory] plans.md: launch on Friday"]
    missing = send(runtime, inbound(acme, group_ctx(acme, 1002), "/tool search_memory query=secret",
                                    conversation=GROUP))
    assert missing.text == "search_memory: no memory matches 'secret'"


def messages(db: Database, org: Tenant, session_key: str) -> list[tuple[str, str | None, str]]:
    with db.transaction(write=False) as tx:
        return [(m.role, m.sender_id, m.content) for m in sessions.list_messages(tx, org.scope, session_key)]


def test_a_subagent_acts_and_announces_as_the_original_sender(db: Database, runtime: Runtime, acme: Tenant) -> None:
    grant(db, acme, "1001")

    async def scenario() -> str:
        reply = await runtime(inbound(acme, group_ctx(acme, 1001),
                                           "/tool spawn_subagent task='/tool write_file path=sub.txt content=ok'",
                                           conversation=GROUP))
        await runtime.wait_idle()
        return reply.session_key

    session_key = run(scenario())
    assert list(files(runtime).values()) == ["ok"]  # the subagent wrote with the person's grant
    stored = messages(db, acme, session_key)
    announced = stored[-2]
    assert announced == ("user", "1001", "write_file: wrote sub.txt (2 bytes) for 1001")  # the person, not subagent:
    assert stored[-1][0] == "assistant"
    with db.transaction(write=False) as tx:
        (entry,) = audit.list_audit(tx, acme.scope, action="workspace.file.written")
    assert entry.actor_id == "1001"


def test_without_the_grant_the_subagent_is_refused_too(db: Database, runtime: Runtime, acme: Tenant) -> None:
    async def scenario() -> None:
        await runtime(inbound(acme, group_ctx(acme, 1001),
                                   "/tool spawn_subagent task='/tool write_file path=sub.txt content=ok'",
                                   conversation=GROUP))
        await runtime.wait_idle()

    run(scenario())
    assert files(runtime) == {}


def test_a_delegate_runs_for_the_original_sender_and_announces_back(db: Database, runtime: Runtime,
                                                                    acme: Tenant) -> None:
    assert acme.bot is not None
    with db.transaction() as tx:
        helper = agents.create_agent(tx, acme.scope, agent_key="helper")
        links.create_link(tx, acme.scope, acme.bot.id, helper.id)  # bot may delegate to helper
    grant(db, acme, "1001", agent_id=helper.id)  # the teammate's own grant for this person

    async def scenario() -> str:
        reply = await runtime(inbound(acme, group_ctx(acme, 1001),
                                           "/tool delegate agent=helper task='/tool write_file path=d.txt content=ok'",
                                           conversation=GROUP))
        assert reply.text is not None and "to @helper" in reply.text
        await runtime.wait_idle()
        return reply.session_key

    session_key = run(scenario())
    assert list(files(runtime)) == ["tenants/acme/agents/helper/scopes/group%3atelegram%3a-100123/d%2etxt"]
    assert messages(db, acme, session_key)[-2] == ("user", "1001", "write_file: wrote d.txt (2 bytes) for 1001")
    nobody = send(runtime, inbound(acme, group_ctx(acme, 1001), "/tool delegate agent=ghost task=x",
                                        conversation=GROUP))
    assert nobody.text is not None and "there is no agent 'ghost'" in nobody.text


def test_tools_run_in_parallel_conversations_without_mixing_identities(db: Database, runtime: Runtime,
                                                                       acme: Tenant) -> None:
    grant(db, acme, "1001")

    async def scenario() -> list[str | None]:
        replies = await asyncio.gather(*(
            runtime(inbound(acme, group_ctx(acme, sender), f"/tool write_file path=f{sender}.txt content=x",
                                 conversation=f"{GROUP}:{sender}"))
            for sender in (1001, 1002)))
        return [r.text for r in replies]

    texts = run(scenario())
    assert texts[0] == "write_file: wrote f1001.txt (1 bytes) for 1001"
    assert texts[1] is not None and "denied (no_grant)" in texts[1]
