"""Memory comes back into the run, on both engines: a fact told in one conversation and consolidated is
recalled in a later conversation of the same SCOPE — below the cache boundary, the prefix unchanged — and
never in another SCOPE or another tenant; the knowledge graph is recalled too; the budget bounds it and 0
turns it off."""

from __future__ import annotations

from pathlib import Path

from agentfy.agents.prompt import split_system_prompt
from agentfy.agents.router import Router
from agentfy.events.consolidation import handlers
from agentfy.events.worker import Worker
from agentfy.identity.context import RequestContext
from agentfy.permissions.channels import telegram_context
from agentfy.runtime import recall
from agentfy.runtime.inbound import Inbound
from agentfy.runtime.offline import OfflineProvider
from agentfy.runtime.providers import Providers
from agentfy.runtime.runner import Runtime
from agentfy.runtime.settings import RuntimeSettings
from agentfy.store.db import Database
from agentfy.store.repos import knowledge
from agentfy.store.repos.knowledge import EntityInput, EntityRef, RelationInput
from tests.helpers.tenants import Tenant
from tests.runtime.helpers import inbound, run


def _dm(org: Tenant, sender: int) -> RequestContext:
    return telegram_context(sender, sender, is_group=False, tenant_id=org.id)


def _runtime(db: Database, tmp_path: Path, **settings: int) -> tuple[Runtime, OfflineProvider]:
    model = OfflineProvider()
    model.keep_requests = True
    runtime = Runtime(db, Router(db), workspace_root=tmp_path, providers=Providers(offline=model),
                      settings=RuntimeSettings(**settings))
    return runtime, model


def _say(runtime: Runtime, org: Tenant, sender: int, text: str, conversation: str) -> None:
    run(runtime(inbound(org, _dm(org, sender), text, conversation=conversation)))


def _end(runtime: Runtime, org: Tenant, sender: int, conversation: str) -> None:
    message = inbound(org, _dm(org, sender), "x", conversation=conversation)
    run(runtime.end_conversation(Inbound(message.tenant_id, message.agent_key, message.context, message.channel,
                                         message.conversation, "")))


def _consolidate(db: Database) -> None:
    worker = Worker(db, handlers())
    while worker.run_once():
        pass


def test_a_consolidated_fact_comes_back_in_a_later_conversation_of_the_same_scope_only(
        db: Database, tmp_path: Path, acme: Tenant, globex: Tenant) -> None:
    runtime, model = _runtime(db, tmp_path)
    _say(runtime, acme, 1001, "Our invoice cutoff is the 25th of each month.", "monday")
    _end(runtime, acme, 1001, "monday")
    _consolidate(db)

    _say(runtime, acme, 1001, "When is the invoice cutoff again?", "friday")
    prefix, runtime_section = split_system_prompt(model.requests[-1].system_prompt)
    assert recall.HEADING in runtime_section and "invoice cutoff is the 25th" in runtime_section
    assert "25th" not in prefix  # below the boundary only: the cached prefix never changes with memory
    assert prefix == split_system_prompt(model.requests[0].system_prompt)[0]

    _say(runtime, acme, 2002, "When is the invoice cutoff?", "dm")  # another person's DM: another SCOPE
    assert "25th" not in model.requests[-1].system_prompt
    _say(runtime, globex, 1001, "When is the invoice cutoff?", "friday")  # another tenant, the same sender ID
    assert "25th" not in model.requests[-1].system_prompt


def test_the_knowledge_graph_of_the_scope_is_recalled(db: Database, tmp_path: Path, acme: Tenant) -> None:
    assert acme.bot is not None
    with db.transaction() as tx:
        knowledge.ingest_graph(tx, acme.scope, entities=[
            EntityInput(agent_id=acme.bot.id, user_id="1001", name="Ada Lovelace", entity_type="person"),
            EntityInput(agent_id=acme.bot.id, user_id="1001", name="Analytical Engines", entity_type="company")],
            relations=[RelationInput(agent_id=acme.bot.id, source_entity_id=EntityRef(0),
                                     target_entity_id=EntityRef(1), relation="works_at")])
    runtime, model = _runtime(db, tmp_path)
    _say(runtime, acme, 1001, "Where does Lovelace work?", "chat")
    shown = split_system_prompt(model.requests[-1].system_prompt)[1]
    assert "- [knowledge] Ada Lovelace (person)" in shown
    assert "- [knowledge] Ada Lovelace —works_at→ Analytical Engines" in shown


def test_the_budget_bounds_what_is_recalled_and_zero_turns_it_off(db: Database, tmp_path: Path,
                                                                  acme: Tenant) -> None:
    runtime, _ = _runtime(db, tmp_path)
    for day in ("monday", "tuesday", "wednesday"):
        _say(runtime, acme, 1001, f"The {day} invoice batch is ready for review by finance.", day)
        _end(runtime, acme, 1001, day)
    _consolidate(db)

    def recalled_lines(**settings: int) -> list[str]:
        recaller, model = _runtime(db, tmp_path, **settings)
        _say(recaller, acme, 1001, "Which invoice batch is ready?", "later")
        section = split_system_prompt(model.requests[-1].system_prompt)[1]
        return section.split(recall.HEADING + "\n")[1].strip().splitlines() if recall.HEADING in section else []

    everything = recalled_lines()
    assert len(everything) >= 3 and all("invoice batch" in line for line in everything)
    budget = (len(recall.HEADING) + len(everything[0]) + len(everything[1]) + 4) // 4  # room for two lines
    bounded = recalled_lines(recall_tokens=budget)
    assert bounded == everything[:len(bounded)] and 1 <= len(bounded) <= 2  # the best first, whole lines
    assert recalled_lines(recall_tokens=0) == []


def test_a_message_of_common_words_recalls_nothing() -> None:
    assert recall.words_of("Hi, can you do it? Thanks!") == []
    assert recall.words_of("When is the invoice cutoff?") == ["invoice", "cutoff"]
