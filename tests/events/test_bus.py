"""The durable bus: wire format, transactional publish, dedup, publish-time validation, claim/ack/retry/
dead-letter, lease expiry (both engines)."""

from __future__ import annotations

import logging
import time

import pytest

from agentfy.events import admin
from agentfy.events.admin import dead_letters, status_of
from agentfy.events.event import DomainEvent, WireFormatError
from agentfy.events.handlers import DeterministicEventError
from agentfy.events.outbox import Claim, LeaseLostError, claim, complete, publish
from agentfy.events.settings import BusSettings
from agentfy.events.validation import drift_counts, reset_drift_counts
from agentfy.events.worker import Worker
from agentfy.identity import InvalidIdError, Scope
from agentfy.ids import NIL_UUID, format_id
from agentfy.store.db import Database, Tx
from agentfy.store.repos import audit
from tests.helpers.tenants import make_tenant
from tests.store.helpers import count, new_agent

FAST = BusSettings(backoff_base_seconds=0.0, backoff_max_seconds=0.0, max_attempts=3, lease_seconds=30)


def test_wire_format_round_trips_field_for_field() -> None:
    event = DomainEvent(id=format_id("domain-event"), type="session.completed", tenant_id=format_id("org"),
                        source_id="s-1:0", occurred_at="2026-11-29T22:06:16.123456Z", agent_id=format_id("agent"),
                        user_id="group:telegram:-100", payload={"session_key": "s-1", "n": [1, 2]})
    assert DomainEvent.from_wire(event.to_wire()) == event
    assert '"v":1' in event.to_wire()


@pytest.mark.parametrize("bad", ['{"v": 2}', "[]", "nope", '{"v": 1, "id": 3}'])
def test_unknown_or_broken_wire_data_is_refused(bad: str) -> None:
    with pytest.raises(WireFormatError):
        DomainEvent.from_wire(bad)


def _publish(db: Database, scope: Scope, source: str, **kwargs: object) -> DomainEvent | None:
    with db.transaction() as tx:
        return publish(tx, type="test.happened", tenant_id=scope.tenant_id, source_id=source, **kwargs)  # type: ignore[arg-type]


def test_an_event_commits_with_its_change_and_never_with_a_rolled_back_one(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    with pytest.raises(RuntimeError), db.transaction() as tx:
        publish(tx, type="test.happened", tenant_id=acme.tenant_id, source_id="x")
        raise RuntimeError("the change failed")
    assert count(db, "event_outbox") == 0
    assert _publish(db, acme, "x") is not None and count(db, "event_outbox") == 1


def test_dedup_is_per_tenant_type_and_source(db: Database) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    assert _publish(db, acme, "session-1") is not None
    assert _publish(db, acme, "session-1") is None  # the same event again: swallowed
    assert _publish(db, globex, "session-1") is not None  # another tenant's session with the same key
    assert count(db, "event_outbox") == 2


@pytest.mark.parametrize("bad_agent", ["goctech-leader", NIL_UUID, "team-calm-rivers-k8m4p2d7n9x3"])
def test_observer_warns_and_counts_non_id_agent_ids(db: Database, bad_agent: str,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    acme = make_tenant(db, "acme").scope
    reset_drift_counts()
    with caplog.at_level(logging.WARNING, logger="agentfy.eventbus"):
        assert _publish(db, acme, "s", agent_id=bad_agent) is not None
    assert drift_counts() == {"eventbus.non_id_agent_id": 1}
    record = next(r for r in caplog.records if r.getMessage().startswith("eventbus.non_id_agent_id "))
    assert record.value == bad_agent and record.field == "agent_id"  # type: ignore[attr-defined]
    assert f"value={bad_agent} " in record.getMessage() and "event_id=domain-event-" in record.getMessage()


def test_strict_mode_refuses_and_writes_nothing(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    for field, value in (("agent_id", "goctech-leader"), ("agent_id", NIL_UUID), ("tenant_id", "acme")):
        with pytest.raises(InvalidIdError, match=repr(value)), db.transaction() as tx:
            kwargs = {"tenant_id": acme.tenant_id, field: value}
            publish(tx, type="test.happened", source_id="s", settings=BusSettings(strict_ids=True), **kwargs)  # type: ignore[arg-type]
    assert count(db, "event_outbox") == 0


def test_empty_agent_id_is_allowed_for_team_and_tenant_events(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    reset_drift_counts()
    with db.transaction() as tx:
        assert publish(tx, type="team.changed", tenant_id=acme.tenant_id, source_id="t", agent_id="",
                       settings=BusSettings(strict_ids=True)) is not None
    assert drift_counts() == {}


def _recorder(seen: list[str]):  # type: ignore[no-untyped-def]
    def handler(tx: Tx, scope: Scope, event: DomainEvent) -> None:
        seen.append(event.source_id)
        audit.record_audit(tx, scope, action="handled", target_id=event.source_id)
    return handler


def test_a_worker_handles_acknowledges_and_its_writes_commit_with_the_ack(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    agent = new_agent(db, acme, "bot")
    for i in range(3):
        _publish(db, acme, f"s{i}", agent_id=agent.id)
    seen: list[str] = []
    worker = Worker(db, {"test.happened": _recorder(seen)}, settings=FAST)
    assert worker.run_once() == 3 and worker.run_once() == 0
    assert seen == ["s0", "s1", "s2"] and count(db, "org_audit") == 3
    with db.transaction() as tx:
        assert {row[0] for row in tx.all("SELECT status FROM event_outbox")} == {"done"}


def test_transient_errors_retry_with_backoff_then_dead_letter(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    event = _publish(db, acme, "flaky")
    assert event is not None
    calls: list[int] = []

    def flaky(tx: Tx, scope: Scope, e: DomainEvent) -> None:
        calls.append(1)
        raise ConnectionError("database went away")

    worker = Worker(db, {"test.happened": flaky}, settings=FAST)
    for _ in range(5):
        worker.run_once()
    assert len(calls) == 3  # max_attempts
    assert status_of(db, event.id) == ("dead", 3, "ConnectionError: database went away")
    assert [d.event.id for d in dead_letters(db).letters] == [event.id]


def test_backoff_delays_the_next_attempt(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    _publish(db, acme, "slow")

    def boom(tx: Tx, scope: Scope, e: DomainEvent) -> None:
        raise ConnectionError("later")

    worker = Worker(db, {"test.happened": boom}, settings=BusSettings(backoff_base_seconds=60))
    assert worker.run_once() == 1
    assert worker.run_once() == 0  # not due for a minute


def test_deterministic_errors_dead_letter_at_once(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    event = _publish(db, acme, "bad")
    assert event is not None

    def refuses(tx: Tx, scope: Scope, e: DomainEvent) -> None:
        raise DeterministicEventError("payload has no session_key")

    Worker(db, {"test.happened": refuses}, settings=FAST).run_once()
    assert status_of(db, event.id) == ("dead", 1, "DeterministicEventError: payload has no session_key")


@pytest.mark.parametrize(("field", "value"), [("agent_id", "goctech-leader"), ("agent_id", NIL_UUID)])
def test_events_with_non_id_agent_ids_are_dead_lettered_without_reaching_the_handler(
        db: Database, field: str, value: str) -> None:
    acme = make_tenant(db, "acme").scope
    event = _publish(db, acme, "s", **{field: value})
    assert event is not None
    seen: list[str] = []
    Worker(db, {"test.happened": _recorder(seen)}, settings=FAST).run_once()
    state = status_of(db, event.id)
    assert seen == [] and state is not None and state[0] == "dead" and state[1] == 1
    assert f"invalid agent_id {value!r}" in (state[2] or "")


def test_a_crash_between_claim_and_ack_redelivers_after_the_lease(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    event = _publish(db, acme, "crash")
    assert event is not None
    short = BusSettings(lease_seconds=0.2)
    crashed = claim(db, "worker-that-dies", ["test.happened"], settings=short)
    assert [c.event.id for c in crashed] == [event.id]
    assert claim(db, "second", ["test.happened"], settings=short) == []  # still leased
    time.sleep(0.3)
    seen: list[str] = []
    assert Worker(db, {"test.happened": _recorder(seen)}, name="second", settings=short).run_once() == 1
    assert seen == ["crash"] and status_of(db, event.id) == ("done", 2, None)


def test_a_lost_lease_rolls_back_the_handlers_writes(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    event = _publish(db, acme, "late")
    assert event is not None
    held = claim(db, "slow-worker", ["test.happened"], settings=BusSettings(lease_seconds=0.1))[0]
    time.sleep(0.2)
    claim(db, "fast-worker", ["test.happened"])  # takes the event over
    with pytest.raises(LeaseLostError), db.transaction() as tx:
        audit.record_audit(tx, acme, action="should-not-stick")
        complete(tx, held)
    assert count(db, "org_audit") == 0
    assert isinstance(held, Claim) and admin.status_of(db, event.id) is not None
