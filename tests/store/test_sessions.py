"""Sessions keyed by (tenant, session_key): key rules, per-session seq, completion, compaction (both engines)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from agentfy.identity import InvalidIdError, Scope
from agentfy.ids import format_id
from agentfy.store.db import Database, Tx
from agentfy.store.errors import ConflictError, InvalidInputError, NotFoundError
from agentfy.store.repos import sessions
from tests.helpers.tenants import make_tenant
from tests.store.helpers import count, new_agent

GROUP = "group:telegram:-100123"


def test_open_get_append_list(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    agent = new_agent(db, acme, "bot")
    key = f"agent:bot:telegram:{GROUP}"
    with db.transaction() as tx:
        opened = sessions.open_session(tx, acme, key, agent.id, GROUP)
        first = sessions.append_message(tx, acme, key, "user", "hello", sender_id="42")
        second = sessions.append_message(tx, acme, key, "assistant", "hi!")
    assert (opened.status, opened.compaction_count, opened.user_id, opened.agent_id) == ("open", 0, GROUP, agent.id)
    assert (first.seq, first.sender_id, second.seq, second.sender_id) == (1, "42", 2, None)
    with db.transaction() as tx:
        assert sessions.get_session(tx, acme, key) == opened
        assert sessions.list_messages(tx, acme, key) == [first, second]
        assert sessions.list_messages(tx, acme, key, after_seq=1) == [second]
        assert sessions.list_messages(tx, acme, key, limit=1) == [first]


def test_seq_is_per_session(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    agent = new_agent(db, acme, "bot")
    with db.transaction() as tx:
        for key in ("s1", "s2"):
            sessions.open_session(tx, acme, key, agent.id, "user-1")
        seqs = [sessions.append_message(tx, acme, key, "user", "x").seq for key in ("s1", "s1", "s2", "s1", "s2")]
    assert seqs == [1, 2, 1, 3, 2]


def test_the_same_key_in_two_tenants_is_two_sessions(db: Database) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    mine, theirs = new_agent(db, acme, "bot"), new_agent(db, globex, "bot")
    with db.transaction() as tx:
        sessions.open_session(tx, acme, "main", mine.id, "u")
        sessions.open_session(tx, globex, "main", theirs.id, "u")
        sessions.append_message(tx, globex, "main", "user", "secret")
        assert sessions.list_messages(tx, acme, "main") == []
        assert sessions.get_session(tx, acme, "main").agent_id == mine.id


def test_another_tenants_session_is_not_found_like_a_missing_one(db: Database) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    theirs = new_agent(db, globex, "bot")
    with db.transaction() as tx:
        sessions.open_session(tx, globex, "theirs", theirs.id, "u")
    for key in ("theirs", "missing"):
        for call in (lambda tx, k: sessions.get_session(tx, acme, k),
                     lambda tx, k: sessions.append_message(tx, acme, k, "user", "x"),
                     lambda tx, k: sessions.list_messages(tx, acme, k),
                     lambda tx, k: sessions.complete_session(tx, acme, k),
                     lambda tx, k: sessions.increment_compaction(tx, acme, k)):
            with pytest.raises(NotFoundError) as caught, db.transaction() as tx:
                call(tx, key)
            assert str(caught.value) == f"session {key!r} not found"
    assert count(db, "session_messages") == 0
    with db.transaction() as tx:
        assert sessions.get_session(tx, globex, "theirs").status == "open"
        assert sessions.get_session(tx, globex, "theirs").compaction_count == 0


def test_open_needs_an_agent_of_the_tenant_and_a_free_key(db: Database) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    mine, theirs = new_agent(db, acme, "bot"), new_agent(db, globex, "bot")
    for ref in (theirs.id, format_id("agent")):
        with pytest.raises(NotFoundError) as caught, db.transaction() as tx:
            sessions.open_session(tx, acme, "s", ref, "u")
        assert str(caught.value) == f"agent {ref!r} not found"
    with pytest.raises(InvalidIdError), db.transaction() as tx:
        sessions.open_session(tx, acme, "s", "bot", "u")  # an agent_key where the ID belongs
    assert count(db, "sessions") == 0
    with db.transaction() as tx:
        sessions.open_session(tx, acme, "s", mine.id, "u")
    with pytest.raises(ConflictError, match="session_key 's' is already used") as conflict, db.transaction() as tx:
        sessions.open_session(tx, acme, "s", mine.id, "u")
    assert conflict.value.field == "session_key"
    assert count(db, "sessions") == 1


@pytest.mark.parametrize("bad", ["", "x" * 201, "a\nb", "a\x00b", "tab\there", "del\x7f", "sep\u2028", None, 42])
def test_bad_session_keys_are_refused_before_sql(db: Database, bad: object) -> None:
    acme = make_tenant(db, "acme").scope
    agent = new_agent(db, acme, "bot")
    with pytest.raises(InvalidInputError) as caught, db.transaction() as tx:
        sessions.open_session(tx, acme, bad, agent.id, "u")  # type: ignore[arg-type]
    assert caught.value.field == "session_key"
    with pytest.raises(InvalidInputError), db.transaction() as tx:
        sessions.append_message(tx, acme, bad, "user", "x")  # type: ignore[arg-type]
    assert count(db, "sessions") == 0 and count(db, "session_messages") == 0


def test_keys_up_to_200_characters_and_unicode_are_fine(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    agent = new_agent(db, acme, "bot")
    with db.transaction() as tx:
        assert sessions.open_session(tx, acme, "k" * 200, agent.id, "u").session_key == "k" * 200
        assert sessions.open_session(tx, acme, "chat:tiểu-hổ", agent.id, "u").session_key == "chat:tiểu-hổ"


def test_message_rules(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    agent = new_agent(db, acme, "bot")
    with db.transaction() as tx:
        sessions.open_session(tx, acme, "s", agent.id, "u")
    for role, sender, field in (("robot", None, "role"), ("user", "", "sender_id"), ("user", "4\n2", "sender_id")):
        with pytest.raises(InvalidInputError) as caught, db.transaction() as tx:
            sessions.append_message(tx, acme, "s", role, "x", sender_id=sender)
        assert caught.value.field == field
    for limit in (0, 10_001, True):
        with pytest.raises(InvalidInputError, match="limit"), db.transaction() as tx:
            sessions.list_messages(tx, acme, "s", limit=limit)
    assert count(db, "session_messages") == 0


def test_complete_changes_only_status_and_completed_at_and_stops_appends(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    agent = new_agent(db, acme, "bot")
    with db.transaction() as tx:
        opened = sessions.open_session(tx, acme, "s", agent.id, GROUP)
        sessions.append_message(tx, acme, "s", "user", "x", sender_id="42")
        assert sessions.increment_compaction(tx, acme, "s") == 1
        done = sessions.complete_session(tx, acme, "s")
    assert done.status == "completed" and done.completed_at is not None
    assert (done.agent_id, done.user_id, done.compaction_count, done.created_at) == (
        opened.agent_id, opened.user_id, 1, opened.created_at)
    with db.transaction() as tx:
        assert sessions.complete_session(tx, acme, "s") == done  # again: nothing changes
    with pytest.raises(ConflictError, match="completed"), db.transaction() as tx:
        sessions.append_message(tx, acme, "s", "user", "late")
    assert count(db, "session_messages") == 1


def test_increment_compaction_counts(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    agent = new_agent(db, acme, "bot")
    with db.transaction() as tx:
        sessions.open_session(tx, acme, "s", agent.id, "u")
        assert [sessions.increment_compaction(tx, acme, "s") for _ in range(3)] == [1, 2, 3]
        assert sessions.get_session(tx, acme, "s").compaction_count == 3


def _append_first(tx: Tx, scope: Scope) -> Callable[[], int]:
    """The session locked by appending to it (then nothing is left to do)."""
    seq = sessions.append_message(tx, scope, "s", "user", "first", sender_id="42").seq
    return lambda: seq


def _lock_as_read_then_append_first(tx: Tx, scope: Scope) -> Callable[[], int]:
    """The session locked as it is read; the message appended later, while the second writer waits."""
    locked = sessions.get_session(tx, scope, "s", lock=True)
    return lambda: sessions.append_to_locked(tx, scope, locked, "user", "first", sender_id="42").seq


@pytest.mark.parametrize("first_writer", [_append_first, _lock_as_read_then_append_first],
                         ids=["append_message", "get_session-lock-then-append_to_locked"])
def test_concurrent_appends_get_distinct_seqs(db: Database,
                                              first_writer: Callable[[Tx, Scope], Callable[[], int]]) -> None:
    # The second writer waits for the first (row lock on PostgreSQL, BEGIN IMMEDIATE on SQLite), then reads
    # the committed last seq: no duplicate-key error, no gap.  A session read with lock=True is locked as
    # append_message locks it, so append_to_locked gives the same seqs with one statement fewer.
    acme = make_tenant(db, "acme").scope
    agent = new_agent(db, acme, "bot")
    with db.transaction() as tx:
        sessions.open_session(tx, acme, "s", agent.id, "u")
    results: list[int] = []
    errors: list[BaseException] = []

    def second_writer() -> None:
        try:
            with db.transaction() as tx:
                results.append(sessions.append_message(tx, acme, "s", "user", "second").seq)
        except BaseException as error:  # surfaced below
            errors.append(error)

    with db.transaction() as tx:
        finish = first_writer(tx, acme)
        thread = threading.Thread(target=second_writer)
        thread.start()
        time.sleep(0.3)  # let the second writer block on the first
        results.append(finish())
    thread.join(timeout=10)
    assert not errors and sorted(results) == [1, 2]
    with db.transaction() as tx:
        assert [(m.seq, m.content, m.sender_id) for m in sessions.list_messages(tx, acme, "s")] == [
            (1, "first", "42"), (2, "second", None)]


def test_appending_to_a_locked_session_keeps_every_refusal(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    globex = make_tenant(db, "globex").scope
    agent = new_agent(db, acme, "bot")
    with db.transaction() as tx:
        opened = sessions.open_session(tx, acme, "s", agent.id, "u")
        sessions.append_to_locked(tx, acme, opened, "user", "in the transaction that opened it")
        sessions.complete_session(tx, acme, "s")
    with pytest.raises(ConflictError, match="completed"), db.transaction() as tx:
        sessions.append_to_locked(tx, acme, sessions.get_session(tx, acme, "s", lock=True), "user", "late")
    with pytest.raises(NotFoundError), db.transaction() as tx:  # another tenant's session is not there
        sessions.append_to_locked(tx, globex, opened, "user", "elsewhere")
    with pytest.raises(InvalidInputError), db.transaction() as tx:  # the same checks of the message
        sessions.append_to_locked(tx, acme, opened, "robot", "not a role")
    assert count(db, "session_messages") == 1
