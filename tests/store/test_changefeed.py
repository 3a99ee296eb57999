"""The change feed: committed changes reach caches and subscribers exactly once, in commit order, on both
engines; on PostgreSQL through a listening connection that survives being killed."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator

import psycopg
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentfy.identity import Scope
from agentfy.store.changefeed import KINDS, Change, ChangeFormatError
from agentfy.store.changefeed.changes import CHANNEL, PAYLOAD_LIMIT_BYTES
from agentfy.store.changefeed.listener import APPLICATION_NAME
from agentfy.store.db import Database
from agentfy.store.repos import agents, api_keys, orgs, teams
from tests.helpers.tenants import make_tenant
from tests.store.helpers import new_agent


class Recorder:
    """Collects what a feed tells its three kinds of subscriber (bound methods: the feed holds them weakly)."""

    def __init__(self, db: Database) -> None:
        self.stale: list[Change] = []
        self.committed: list[Change] = []
        self.resets: list[str] = []
        self.arrived = threading.Condition()
        db.changes.on_stale(self.on_stale)
        db.changes.on_committed(self.on_committed)
        db.changes.on_reset(self.on_reset)

    def on_stale(self, change: Change) -> None:
        self.stale.append(change)

    def on_committed(self, change: Change) -> None:
        with self.arrived:
            self.committed.append(change)
            self.arrived.notify_all()

    def on_reset(self, reason: str) -> None:
        self.resets.append(reason)

    def wait(self, count: int, timeout: float = 10) -> list[tuple[str, str, str | None]]:
        with self.arrived:
            self.arrived.wait_for(lambda: len(self.committed) >= count, timeout)
        return [(c.kind, c.op, c.key) for c in self.committed]


# -- the wire format ----------------------------------------------------------------------------------------------
def test_a_change_round_trips_and_stays_small() -> None:
    change = Change("agent", "renamed", "org-calm-rivers-k8m4p2d7n9x3", "agent-calm-rivers-k8m4p2d7n9x3", "new",
                    "old", 1700000000.5)
    payload = change.encode()
    assert Change.decode(payload) == change and len(payload) < 300
    assert Change.decode(Change("epoch", "bumped", None, None).encode()) == Change("epoch", "bumped", None, None)


def test_encode_refuses_unknown_changes_and_payloads_over_the_limit() -> None:
    with pytest.raises(ValueError, match=r"unknown change agent\.exploded"):
        Change("agent", "exploded", None, None).encode()
    with pytest.raises(ValueError, match="exceeds the 7999-byte"):
        Change("agent", "updated", "t", "i", "k" * PAYLOAD_LIMIT_BYTES).encode()


_texts = st.none() | st.text(max_size=120)


@given(st.sampled_from(sorted((kind, op) for kind, ops in KINDS.items() for op in ops)), _texts, _texts, _texts,
       _texts, st.none() | st.floats(min_value=0, max_value=4e9))
def test_the_payload_is_the_compact_ascii_json_of_the_wire_fields(kind_op: tuple[str, str], tenant: str | None,
                                                                  subject: str | None, key: str | None,
                                                                  previous: str | None, at: float | None) -> None:
    change = Change(*kind_op, tenant, subject, key, previous, at)
    wire = {"v": 1, "k": kind_op[0], "o": kind_op[1], "t": tenant, "i": subject, "n": key, "p": previous, "a": at}
    expected = json.dumps({name: value for name, value in wire.items() if value is not None}, separators=(",", ":"),
                          ensure_ascii=True)
    assert change.encode() == expected
    assert Change.decode(expected) == change
    change.check()  # what encodes is accepted when recorded


@pytest.mark.parametrize("key", ["k" * PAYLOAD_LIMIT_BYTES, "\U0001f600" * 700, "\u00e9" * 1400])
def test_check_refuses_what_encode_refuses(key: str) -> None:
    change = Change("agent", "updated", "t", "i", key)
    with pytest.raises(ValueError, match="exceeds the 7999-byte"):
        change.encode()
    with pytest.raises(ValueError, match="exceeds the 7999-byte"):
        change.check()
    with pytest.raises(ValueError, match=r"unknown change agent\.exploded"):
        Change("agent", "exploded", None, None).check()


def test_a_transaction_refuses_an_oversized_change_when_it_is_recorded(db: Database) -> None:
    with pytest.raises(ValueError, match="exceeds the 7999-byte"), db.transaction() as tx:
        tx.record_change(Change("agent", "updated", "org-t", "i", "\U0001f600" * 700))


@given(st.text(max_size=200))
def test_decoding_anything_gives_a_change_or_a_format_error(payload: str) -> None:
    with contextlib.suppress(ChangeFormatError):
        Change.decode(payload)


@pytest.mark.parametrize("payload", ['{"v": 2, "k": "agent", "o": "updated"}', '{"v": 1, "k": "agent", "o": "x"}',
                                     '{"v": 1, "k": "agent", "o": "updated", "t": 5}', "[]", "",
                                     '{"v": 1, "k": "agent", "o": "updated", "a": "soon"}'])
def test_decode_names_what_is_wrong(payload: str) -> None:
    with pytest.raises(ChangeFormatError):
        Change.decode(payload)


# -- delivery in one process (both engines) ----------------------------------------------------------------------
def test_changes_are_told_once_after_commit_in_commit_order_never_when_rolled_back(db: Database) -> None:
    seen = Recorder(db)
    acme = make_tenant(db, "acme").scope
    bot = new_agent(db, acme, "bot")
    with db.transaction() as tx:
        agents.rename_agent(tx, acme, bot.id, "helper")
        assert seen.committed[-1:] == [] or seen.committed[-1].op == "created"  # nothing before the commit
        assert seen.stale[-1].op == "renamed"  # but caches already know
    with pytest.raises(RuntimeError), db.transaction() as tx:
        agents.update_agent(tx, acme, bot.id, display_name="never")
        raise RuntimeError("roll back")
    with db.transaction() as tx:
        with pytest.raises(RuntimeError), tx.savepoint():
            agents.update_agent(tx, acme, bot.id, display_name="undone")
            raise RuntimeError("undo the savepoint")
        agents.delete_agent(tx, acme, bot.id)
    assert seen.wait(3) == [("agent", "created", "bot"), ("agent", "renamed", "helper"),
                            ("agent", "deleted", "helper")]
    renamed = seen.committed[1]
    assert (renamed.tenant_id, renamed.id, renamed.previous_key) == (acme.tenant_id, bot.id, "bot")
    assert all(c.at is not None for c in seen.committed)


def test_every_change_that_can_stale_a_cache_is_recorded(db: Database) -> None:
    seen = Recorder(db)
    acme = make_tenant(db, "acme").scope
    bot = new_agent(db, acme, "bot")
    with db.transaction() as tx:
        team = teams.create_team(tx, acme, name="core")
        team_key = teams.create_team_api_key(tx, acme, team.id, name="ci")
        teams.revoke_team_api_key(tx, acme, team_key.api_key.id)
        teams.delete_team(tx, acme, team.id)
        user = orgs.create_user(tx, display_name="Ann")
        orgs.add_member(tx, acme, user.id, "admin")
        orgs.remove_member(tx, acme, user.id)
        key = api_keys.create_api_key(tx, acme, name="k", role="member")
        api_keys.revoke_api_key(tx, acme, key.record.id)
        orgs.set_default_agent(tx, acme, bot.id)
        agents.archive_agent(tx, acme, bot.id)
        orgs.delete_organization(tx, acme.tenant_id)
    kinds = [(kind, op) for kind, op, _ in seen.wait(10)]
    assert kinds == [("agent", "created"), ("team", "created"), ("team_key", "revoked"), ("team", "deleted"),
                     ("member", "added"), ("member", "removed"), ("api_key", "revoked"), ("org", "updated"),
                     ("agent", "archived"), ("org", "deleted")]


def test_concurrent_commits_are_told_in_commit_order(db: Database) -> None:
    seen = Recorder(db)
    acme = make_tenant(db, "acme").scope
    bot = new_agent(db, acme, "bot")
    names: list[str] = []
    order_lock = threading.Lock()

    def rename(i: int) -> None:
        for j in range(5):
            with db.transaction() as tx:
                agents.rename_agent(tx, acme, bot.id, f"bot-{i}-{j}")
                with order_lock:  # the row lock orders the writers; record in that order
                    names.append(f"bot-{i}-{j}")

    threads = [threading.Thread(target=rename, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    told = [key for _, op, key in seen.wait(21) if op == "renamed"]
    assert sorted(told) == sorted(names) and len(told) == 20
    final = told[-1]
    with db.transaction(write=False) as tx:
        assert agents.get_agent(tx, acme, bot.id).agent_key == final  # the last told is the last committed


# -- across processes (PostgreSQL) ---------------------------------------------------------------------------------
@pytest.fixture
def pg_pair(pg_db: Database) -> Iterator[tuple[Database, Database]]:
    """A PostgreSQL database and a second handle on it, listening as another process would."""
    db = pg_db
    other = Database(db.url)
    assert other.changes.start_listening(other.conninfo)
    assert other.changes.wait_listening(10)
    try:
        yield db, other
    finally:
        other.changes.stop_listening()
        other.dispose()


def test_another_process_hears_every_committed_change_in_order(pg_pair: tuple[Database, Database]) -> None:
    db, other = pg_pair
    heard = Recorder(other)
    acme = make_tenant(db, "acme").scope
    bot = new_agent(db, acme, "bot")
    with pytest.raises(RuntimeError), db.transaction() as tx:
        agents.rename_agent(tx, acme, bot.id, "never")
        raise RuntimeError("roll back")
    with db.transaction() as tx:
        agents.rename_agent(tx, acme, bot.id, "helper")
        agents.update_agent(tx, acme, bot.id, display_name="Helper")
    assert heard.wait(3) == [("agent", "created", "bot"), ("agent", "renamed", "helper"),
                             ("agent", "updated", "helper")]
    assert heard.stale == heard.committed  # caches of another process hear each change once
    assert other.changes.stats.last_lag_seconds is not None and other.changes.stats.last_lag_seconds < 5


def test_a_listening_process_hears_its_own_changes_from_the_feed_once(pg_pair: tuple[Database, Database]) -> None:
    _, other = pg_pair
    heard = Recorder(other)
    acme = make_tenant(other, "acme").scope
    new_agent(other, acme, "bot")
    assert heard.wait(1) == [("agent", "created", "bot")]
    time.sleep(0.2)
    assert len(heard.committed) == 1  # not once in process and once from the feed
    assert len(heard.stale) == 3  # inside the transaction, after its commit, and from the feed


def test_a_killed_listening_connection_flushes_stops_caching_and_comes_back(pg_pair: tuple[Database, Database]
                                                                           ) -> None:
    db, other = pg_pair
    heard = Recorder(other)
    reconnects = other.changes.stats.reconnects
    with psycopg.connect(db.conninfo, autocommit=True) as connection:
        connection.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s "
                           "AND datname = current_database()", (APPLICATION_NAME,))
    deadline = time.monotonic() + 10
    while other.changes.stats.reconnects == reconnects and time.monotonic() < deadline:
        time.sleep(0.01)
    assert other.changes.wait_listening(10) and other.changes.cacheable
    assert len(heard.resets) >= 2  # lost, then re-established: flush both times
    acme = make_tenant(db, "acme").scope
    new_agent(db, acme, "bot")
    assert heard.wait(1) == [("agent", "created", "bot")]


def test_an_unreadable_notification_flushes_instead_of_guessing(pg_pair: tuple[Database, Database]) -> None:
    db, other = pg_pair
    heard = Recorder(other)
    with psycopg.connect(db.conninfo, autocommit=True) as connection:
        connection.execute("SELECT pg_notify(%s, %s)", (CHANNEL, '{"v": 99}'))
    deadline = time.monotonic() + 10
    while not heard.resets and time.monotonic() < deadline:
        time.sleep(0.01)
    assert heard.resets and other.changes.stats.undecodable == 1 and other.changes.cacheable


def test_an_organization_deleted_elsewhere_is_heard(pg_pair: tuple[Database, Database]) -> None:
    db, other = pg_pair
    heard = Recorder(other)
    acme = make_tenant(db, "acme").scope
    with db.transaction() as tx:
        orgs.delete_organization(tx, acme.tenant_id)
    assert heard.wait(1) == [("org", "deleted", None)]
    assert heard.committed[0].tenant_id == Scope(acme.tenant_id).tenant_id


def test_another_process_on_a_sqlite_file_hears_changes_through_the_log(sqlite_db: Database) -> None:
    other = Database(sqlite_db.url)  # as a server beside a CLI command would
    try:
        assert other.changes.start_listening(other.conninfo)
        heard = Recorder(other)
        acme = make_tenant(sqlite_db, "acme").scope
        bot = new_agent(sqlite_db, acme, "bot")
        with sqlite_db.transaction() as tx:
            agents.rename_agent(tx, acme, bot.id, "helper")
        assert heard.wait(2) == [("agent", "created", "bot"), ("agent", "renamed", "helper")]
        new_agent(other, acme, "own")  # its own changes are told once, in-process, not again from the log
        time.sleep(0.3)
        assert [c.key for c in heard.committed] == ["bot", "helper", "own"]
    finally:
        other.changes.stop_listening()
        other.dispose()
