"""Operating the bus (both engines): durable counters, stats, dead letters paged and filtered, requeue by
filter, pruning, and log records that carry the event's fields."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentfy.events import admin, counters
from agentfy.events.admin import DeadLetterFilter, dead_letters, parse_age, prune, requeue, stats, status_of
from agentfy.events.event import DomainEvent
from agentfy.events.handlers import DeterministicEventError
from agentfy.events.outbox import publish
from agentfy.events.settings import BusSettings
from agentfy.events.validation import NON_ID_AGENT_ID
from agentfy.events.worker import Worker
from agentfy.identity import InvalidIdError, Scope
from agentfy.store.db import Database, Tx
from agentfy.store.errors import InvalidInputError
from tests.helpers.tenants import make_tenant
from tests.store.helpers import new_agent

FAST = BusSettings(backoff_base_seconds=0, backoff_max_seconds=0, max_attempts=2, batch_size=50)


def refuse(tx: Tx, scope: Scope, event: DomainEvent) -> None:
    if event.source_id.startswith("bad"):
        raise DeterministicEventError(f"cannot handle {event.source_id}")
    if event.source_id.startswith("flaky"):
        raise ConnectionError("model unavailable")


def publish_in(db: Database, scope: Scope, source: str, type_: str = "test.happened", **kwargs: object) -> str:
    with db.transaction() as tx:
        event = publish(tx, type=type_, tenant_id=scope.tenant_id, source_id=source, **kwargs)  # type: ignore[arg-type]
    assert event is not None
    return event.id


def set_finished(db: Database, event_id: str, stamp: str) -> None:
    with db.transaction() as tx:
        tx.execute("UPDATE event_outbox SET finished_at = :at, available_at = :at WHERE id = :id",
                   {"at": stamp, "id": event_id})


def test_observer_warnings_are_counted_durably_with_the_publish_and_only_if_it_commits(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    publish_in(db, acme, "s1", agent_id="goctech-leader")
    with pytest.raises(RuntimeError), db.transaction() as tx:  # a rolled-back publish counts nothing
        publish(tx, type="test.happened", tenant_id=acme.tenant_id, source_id="s2", agent_id="goctech-leader")
        raise RuntimeError("the change failed")
    publish_in(db, acme, "s3", agent_id="goctech-leader")
    publish_in(db, acme, "fine")
    assert counters.daily(db) == {counters.today(): {NON_ID_AGENT_ID: 2}}


def test_stats_count_the_outbox_and_the_days(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    for source in ("ok-1", "ok-2", "bad-1", "flaky-1", "waiting"):
        publish_in(db, acme, source)
    with db.transaction() as tx:
        tx.execute("UPDATE event_outbox SET available_at = '2099-01-01T00:00:00.000000Z' WHERE source_id = 'waiting'")
    Worker(db, {"test.happened": refuse}, settings=FAST.model_copy(update={"backoff_base_seconds": 3600,
                                                                           "backoff_max_seconds": 3600})).run_once()
    publish_in(db, acme, "new")
    with db.transaction() as tx:
        tx.execute("UPDATE event_outbox SET available_at = '2000-01-01T00:00:00.000000Z' WHERE source_id = 'new'")
    now = stats(db)
    assert (now.lag, now.pending, now.processing, now.dead, now.done) == (1, 3, 0, 1, 2)
    assert now.oldest_pending_age_seconds is not None and now.oldest_pending_age_seconds > 86400 * 365 * 20
    assert now.daily == {counters.today(): {counters.DEAD_LETTER: 1}}
    assert set(now.as_dict()) == {"lag", "pending", "processing", "dead", "done", "oldest_pending_age_seconds",
                                  "daily"}


def _dead(db: Database, scope: Scope, sources: list[str], type_: str = "test.happened") -> list[str]:
    ids = [publish_in(db, scope, s, type_) for s in sources]
    Worker(db, {type_: refuse}, settings=FAST).run_once()
    return ids


def test_dead_letters_page_oldest_first_with_a_cursor(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    ids = _dead(db, acme, [f"bad-{n}" for n in range(5)])
    for n, event_id in enumerate(ids):
        set_finished(db, event_id, f"2026-01-0{n + 1}T00:00:00.000000Z")
    first = dead_letters(db, limit=2)
    second = dead_letters(db, limit=2, cursor=first.next_cursor)
    third = dead_letters(db, limit=2, cursor=second.next_cursor)
    assert [[d.event.id for d in page.letters] for page in (first, second, third)] == [ids[:2], ids[2:4], ids[4:]]
    assert third.next_cursor is None and first.next_cursor == f"2026-01-02T00:00:00.000000Z~{ids[1]}"
    with pytest.raises(InvalidInputError, match="cursor 'nope'"):
        dead_letters(db, cursor="nope")
    with pytest.raises(InvalidInputError, match="limit 0"):
        dead_letters(db, limit=0)


def test_dead_letters_filter_by_type_reason_tenant_and_age(db: Database) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    [a_bad] = _dead(db, acme, ["bad-a"])
    [g_bad] = _dead(db, globex, ["bad-g"])
    [other] = _dead(db, acme, ["bad-o"], type_="other.happened")
    [flaky] = _dead(db, acme, ["flaky-1"])
    Worker(db, {"test.happened": refuse}, settings=FAST).run_once()  # flaky's second and last attempt
    set_finished(db, g_bad, "2020-01-01T00:00:00.000000Z")

    def ids(**kwargs: object) -> set[str]:
        return {d.event.id for d in dead_letters(db, DeadLetterFilter(**kwargs)).letters}  # type: ignore[arg-type]

    assert ids() == {a_bad, g_bad, other, flaky}
    assert ids(event_type="other.happened") == {other}
    assert ids(reason="MODEL UNAVAILABLE") == {flaky}  # any case
    assert ids(reason="100%_") == set()  # LIKE wildcards are literal
    assert ids(tenant_id=globex.tenant_id) == {g_bad}
    assert ids(older_than=timedelta(days=30)) == {g_bad}
    assert ids(newer_than=timedelta(hours=1), tenant_id=acme.tenant_id, event_type="test.happened") == {a_bad, flaky}


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"tenant_id": "acme"}, "invalid tenant_id 'acme'"),
    ({"event_id": "goctech-leader"}, "invalid event_id 'goctech-leader'"),
    ({"event_type": " "}, "event_type ' ' must be a non-empty string"),
    ({"older_than": timedelta(seconds=-1)}, "older_than .* must not be negative"),
])
def test_a_bad_filter_names_the_value(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises((InvalidInputError, InvalidIdError), match=message):
        DeadLetterFilter(**kwargs)  # type: ignore[arg-type]


def test_requeue_by_filter_gives_fresh_attempts_to_the_matching_letters_only(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    first, second = _dead(db, acme, ["bad-1", "bad-2"])
    [other] = _dead(db, acme, ["bad-3"], type_="other.happened")
    assert requeue(db, DeadLetterFilter(event_type="test.happened")) == 2
    assert [status_of(db, i) for i in (first, second)] == [("pending", 0, None)] * 2
    assert status_of(db, other) is not None and status_of(db, other)[0] == "dead"  # type: ignore[index]
    assert requeue(db, DeadLetterFilter(event_type="test.happened")) == 0
    assert admin.requeue_dead_letter(db, other) and not admin.requeue_dead_letter(db, other)


def test_one_organizations_stats_and_requeue_never_count_or_touch_another_organizations_events(
        db: Database) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    [mine] = _dead(db, acme, ["bad-a"])
    theirs = _dead(db, globex, ["bad-g1", "bad-g2"])
    publish_in(db, globex, "waiting-g")
    ours, everyone = stats(db, tenant_id=acme.tenant_id), stats(db)
    assert (ours.dead, ours.pending, ours.lag, ours.daily) == (1, 0, 0, {})
    assert (everyone.dead, everyone.pending) == (3, 1) and everyone.daily
    assert stats(db, tenant_id=globex.tenant_id).dead == 2
    assert not admin.requeue_dead_letter(db, theirs[0], tenant_id=acme.tenant_id)
    assert status_of(db, theirs[0])[0] == "dead"  # type: ignore[index]
    assert admin.requeue_dead_letter(db, mine, tenant_id=acme.tenant_id)
    with pytest.raises(InvalidIdError, match="tenant_id"):
        stats(db, tenant_id="acme")


def test_prune_deletes_only_events_handled_before_the_retention(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    old, recent = publish_in(db, acme, "old"), publish_in(db, acme, "recent")
    Worker(db, {"test.happened": refuse}, settings=FAST).run_once()
    [dead] = _dead(db, acme, ["bad-old"])
    waiting = publish_in(db, acme, "waiting")
    for event_id in (old, dead, waiting):
        set_finished(db, event_id, "2020-01-01T00:00:00.000000Z")
    assert prune(db, older_than_days=7, batch=1) == 1  # batches of one: the loop ends when a batch is short
    assert status_of(db, old) is None
    assert [status_of(db, i)[0] for i in (recent, dead, waiting)] == ["done", "dead", "pending"]  # type: ignore[index]
    with pytest.raises(InvalidInputError, match="older_than_days -1"):
        prune(db, older_than_days=-1)


@given(st.integers(min_value=0, max_value=10**6), st.sampled_from(["", "s", "m", "h", "d", "w"]))
def test_parse_age_reads_a_number_and_a_unit(amount: int, unit: str) -> None:
    factor = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}[unit]
    assert parse_age(f"{amount}{unit}") == timedelta(seconds=amount * factor)


@pytest.mark.parametrize("bad", ["", "h", "-1h", "1.5.2d", "3 days", "1y", "PT1H"])
def test_parse_age_refuses_anything_else_naming_it(bad: str) -> None:
    with pytest.raises(InvalidInputError, match=f"--older-than {bad!r} is not a duration"):
        parse_age(bad, field="--older-than")


def test_a_dead_letter_is_logged_with_the_events_fields_and_agent_key(db: Database,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    acme = make_tenant(db, "acme").scope
    bot = new_agent(db, acme, "goctech-leader")
    event_id = publish_in(db, acme, "bad-1", agent_id=bot.id)
    with caplog.at_level(logging.INFO, logger="agentfy.eventbus"):
        Worker(db, {"test.happened": refuse}, name="w-1", settings=FAST).run_once()
    [record] = [r for r in caplog.records if r.getMessage().startswith("eventbus.dead_letter ")]
    assert record.getMessage() == (
        f"eventbus.dead_letter event_id={event_id} event_type=test.happened tenant_id={acme.tenant_id} "
        f"agent_id={bot.id} agent_key=goctech-leader attempt=1 "
        'reason="DeterministicEventError: cannot handle bad-1" worker=w-1')
    assert record.levelno == logging.ERROR and record.agent_key == "goctech-leader"  # type: ignore[attr-defined]
