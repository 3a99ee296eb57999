"""The dreaming worker's debounce on both engines: deferral through a delayed ``dreaming.due``, the
``max_batch`` override, one timer per burst, a superseded timer, and the injectable clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agentfy.events.consolidation import (
    DREAMING_DUE,
    ConsolidationSettings,
    DreamingWorker,
    dream_path,
    dreaming_due_source,
    handlers,
    publish_at,
)
from agentfy.events.consolidation.delayed import parse_stamp
from agentfy.events.event import EPISODIC_CREATED, DomainEvent
from agentfy.events.outbox import claim
from agentfy.store.db import Database
from agentfy.store.repos import memory
from tests.events.test_consolidation import (
    GROUP,
    completed_session,
    drain,
    outbox,
    pipeline,
    rows,
    tenant_with_agent,
)

HOUR = ConsolidationSettings(debounce_seconds=3600)


def summaries(db: Database) -> list[tuple[str, str, bool]]:
    """``(id, session_key, promoted)`` of every summary, by session key."""
    return [(row[0], row[1], row[2] is not None) for row in
            rows(db, "SELECT id, session_key, promoted_at FROM episodic_summaries ORDER BY session_key")]


def timers(db: Database) -> list[tuple[str, str, str]]:
    """``(source_id, status, available_at)`` of every ``dreaming.due`` event."""
    return rows(db, "SELECT source_id, status, available_at FROM event_outbox WHERE type = :t ORDER BY source_id",
                {"t": DREAMING_DUE})


def fire(db: Database, source_id: str) -> None:
    """Let time pass for one timer: make it due now (what the clock would do in an hour)."""
    with db.transaction() as tx:
        tx.execute("UPDATE event_outbox SET available_at = '2000-01-01T00:00:00.000000Z' "
                   "WHERE type = :t AND source_id = :s", {"t": DREAMING_DUE, "s": source_id})


def dream_documents(db: Database) -> list[str]:
    return [row[0] for row in rows(db, "SELECT content FROM memory_documents")]


def test_a_young_summary_is_deferred_to_a_timer_that_later_promotes_it(db: Database) -> None:
    scope, agent = tenant_with_agent(db)
    completed_session(db, scope, agent, "s-1")
    worker = pipeline(db, handlers(settings=HOUR))
    drain(worker)
    [(summary_id, _, promoted)] = summaries(db)
    assert not promoted and dream_documents(db) == []
    [(source, status, available_at)] = timers(db)
    assert source == dreaming_due_source(summary_id) and status == "pending"
    [created_at] = [row[0] for row in rows(db, "SELECT created_at FROM episodic_summaries")]
    assert parse_stamp(available_at) - parse_stamp(created_at) == timedelta(hours=1)
    [due] = outbox(db, DREAMING_DUE)
    assert due[2] == agent.id and due[3] == GROUP

    assert drain(worker) == 0  # not due yet: the worker does not claim it
    fire(db, source)
    assert drain(worker) == 1
    assert summaries(db) == [(summary_id, "s-1", True)]
    [content] = dream_documents(db)
    assert "session s-1" in content and timers(db)[0][1] == "done"


def test_max_batch_promotes_at_once(db: Database) -> None:
    scope, agent = tenant_with_agent(db)
    worker = pipeline(db, handlers(settings=ConsolidationSettings(debounce_seconds=3600, max_batch=2)))
    completed_session(db, scope, agent, "s-1")
    drain(worker)
    assert [s[2] for s in summaries(db)] == [False]
    completed_session(db, scope, agent, "s-2")
    drain(worker)
    assert [s[2] for s in summaries(db)] == [True, True]  # two waiting = max_batch: promoted without waiting
    [content] = dream_documents(db)
    assert content.index("session s-1") < content.index("session s-2")
    # the first timer still fires later and finds nothing to do
    fire(db, dreaming_due_source(summaries(db)[0][0]))
    assert drain(worker) == 1 and dream_documents(db) == [content]


def test_a_burst_leaves_one_timer_that_promotes_everything(db: Database) -> None:
    scope, agent = tenant_with_agent(db)
    for key in ("s-1", "s-2", "s-3"):
        completed_session(db, scope, agent, key)
    worker = pipeline(db, handlers(settings=HOUR))
    drain(worker)
    newest = summaries(db)[-1][0]
    created_order = [row[0] for row in rows(db, "SELECT id FROM episodic_summaries ORDER BY created_at, session_key")]
    assert created_order[-1] == newest
    # each episodic.created asked for the same timer (the newest summary's); the outbox kept one
    assert [t[0] for t in timers(db)] == [dreaming_due_source(newest)]
    fire(db, dreaming_due_source(newest))
    drain(worker)
    assert all(s[2] for s in summaries(db))
    [content] = dream_documents(db)
    assert [content.count(f"session {key} ") for key in ("s-1", "s-2", "s-3")] == [1, 1, 1]


def test_a_superseded_timer_hands_over_to_the_newest_summarys_timer(db: Database) -> None:
    scope, agent = tenant_with_agent(db)
    worker = pipeline(db, handlers(settings=HOUR))
    completed_session(db, scope, agent, "s-1")
    drain(worker)
    completed_session(db, scope, agent, "s-2")
    drain(worker)
    first, second = (s[0] for s in summaries(db))
    assert [t[0] for t in timers(db)] == sorted([dreaming_due_source(first), dreaming_due_source(second)])
    fire(db, dreaming_due_source(first))
    assert drain(worker) == 1
    assert [s[2] for s in summaries(db)] == [False, False]  # s-2 is still young: its own timer decides
    fire(db, dreaming_due_source(second))
    assert drain(worker) == 1
    assert [s[2] for s in summaries(db)] == [True, True]


def test_the_timer_of_the_newest_summary_promotes_even_if_the_clock_says_too_early(db: Database) -> None:
    scope, agent = tenant_with_agent(db)
    completed_session(db, scope, agent, "s-1")
    drain(pipeline(db, handlers(settings=HOUR)))
    [(summary_id, _, _)] = summaries(db)
    event = DomainEvent(id=db.mint("domain-event"), type=DREAMING_DUE, tenant_id=scope.tenant_id,
                        source_id=dreaming_due_source(summary_id), occurred_at="2026-01-01T00:00:00.000000Z",
                        agent_id=agent.id, user_id=GROUP, payload={"newest_summary_id": summary_id})
    past = datetime(2000, 1, 1, tzinfo=UTC)  # a clock lagging behind the database: no timer loop
    with db.transaction() as tx:
        outcome = DreamingWorker(settings=HOUR, clock=lambda: past).dream(tx, scope, event, timer=True)
    assert outcome.status == "promoted" and outcome.summary_ids == (summary_id,)


def test_the_clock_is_injectable(db: Database) -> None:
    scope, agent = tenant_with_agent(db)
    completed_session(db, scope, agent, "s-1")
    later = datetime.now(UTC) + timedelta(hours=2)
    drain(pipeline(db, handlers(settings=HOUR, clock=lambda: later)))
    assert [s[2] for s in summaries(db)] == [True] and timers(db) == []


def test_a_second_promotion_appends_to_the_same_document(db: Database) -> None:
    scope, agent = tenant_with_agent(db)
    worker = pipeline(db)  # debounce 0
    completed_session(db, scope, agent, "s-1")
    drain(worker)
    completed_session(db, scope, agent, "s-2", [("user", "A second session about Zed.")])
    drain(worker)
    with db.transaction(write=False) as tx:
        [document] = memory.list_memory_documents(tx, scope, agent.id, user_id=GROUP)
    assert document.content.index("session s-1") < document.content.index("session s-2")
    assert document.metadata["summaries"] == 2 and document.metadata["last_summary_id"] == summaries(db)[1][0]


def test_each_user_scope_gets_its_own_dream(db: Database) -> None:
    scope, agent = tenant_with_agent(db)
    completed_session(db, scope, agent, "s-1", user=GROUP)
    completed_session(db, scope, agent, "s-2", [("user", "Direct message about Zed.")], user="")
    drain(pipeline(db))
    docs = rows(db, "SELECT user_id, path, content FROM memory_documents ORDER BY user_id")
    assert [(d[0], d[1]) for d in docs] == [("", dream_path("")), (GROUP, dream_path(GROUP))]
    assert "Zed" in docs[0][2] and "Zed" not in docs[1][2]


def test_publish_at_is_not_claimable_before_it_is_due(db: Database) -> None:
    scope, agent = tenant_with_agent(db)
    with db.transaction() as tx:
        soon = publish_at(tx, datetime.now(UTC) + timedelta(hours=1), type=DREAMING_DUE, tenant_id=scope.tenant_id,
                          source_id="x:dreaming", agent_id=agent.id)
        again = publish_at(tx, datetime.now(UTC), type=DREAMING_DUE, tenant_id=scope.tenant_id,
                           source_id="x:dreaming", agent_id=agent.id)
        past = publish_at(tx, datetime.now(UTC) - timedelta(seconds=1), type=EPISODIC_CREATED,
                          tenant_id=scope.tenant_id, source_id="y", agent_id=agent.id)
    assert soon is not None and again is None and past is not None
    assert [held.event.id for held in claim(db, "t", [DREAMING_DUE, EPISODIC_CREATED])] == [past.id]
