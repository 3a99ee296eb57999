"""``sessions.list_agent_sessions``: newest activity first in a total order, a page at a time, by scope and
state, never counting or ordering by another tenant's messages (both engines)."""

from __future__ import annotations

import pytest

from agentfy.ids import format_id
from agentfy.store.db import Database
from agentfy.store.errors import InvalidInputError, NotFoundError
from agentfy.store.repos import sessions
from tests.helpers.tenants import make_tenant
from tests.store.helpers import new_agent


def test_pages_walk_every_session_newest_activity_first_once(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    bot = new_agent(db, acme, "bot")
    with db.transaction() as tx:
        for number in range(7):
            sessions.open_session(tx, acme, f"s{number}", bot.id, "group:g" if number % 2 else "")
        sessions.append_message(tx, acme, "s0", "user", "back again")
    with db.transaction(write=False) as tx:
        everything = sessions.list_agent_sessions(tx, acme, bot.id)
        walked, after = [], None
        while page := sessions.list_agent_sessions(tx, acme, bot.id, after=after, limit=3):
            walked += page
            after = sessions.AGENT_PAGES.key(page[-1])
    assert walked == everything and len(everything) == 7
    assert [item.session.session_key for item in everything] == ["s0", "s6", "s5", "s4", "s3", "s2", "s1"]
    stamps = [(item.last_activity_at, item.session.session_key) for item in everything]
    assert stamps == sorted(stamps, reverse=True)
    assert everything[0].message_count == 1 and everything[0].last_activity_at > everything[0].session.created_at


def test_filters_by_scope_and_state(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    bot = new_agent(db, acme, "bot")
    with db.transaction() as tx:
        for key, scope in (("dm", "user-1"), ("group", "group:g"), ("own", "")):
            sessions.open_session(tx, acme, key, bot.id, scope)
        sessions.complete_session(tx, acme, "group")
        listed = lambda **filters: [i.session.session_key  # noqa: E731
                                    for i in sessions.list_agent_sessions(tx, acme, bot.id, **filters)]
        assert listed(user_id="") == ["own"] and listed(user_id="group:g") == ["group"]
        assert listed(status="completed") == ["group"] and sorted(listed(status="open")) == ["dm", "own"]
        assert listed(user_id="group:g", status="open") == []
        with pytest.raises(InvalidInputError) as caught:
            sessions.list_agent_sessions(tx, acme, bot.id, status="closed")
        assert caught.value.field == "status"


def test_another_tenants_agent_and_messages_stay_theirs(db: Database) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    mine, theirs = new_agent(db, acme, "bot"), new_agent(db, globex, "bot")
    with db.transaction() as tx:
        sessions.open_session(tx, acme, "main", mine.id, "")
        sessions.open_session(tx, globex, "main", theirs.id, "")  # the same key, in another tenant
        for _ in range(3):
            sessions.append_message(tx, globex, "main", "user", "secret")
    with db.transaction(write=False) as tx:
        (listed,) = sessions.list_agent_sessions(tx, acme, mine.id)
        assert listed.message_count == 0 and listed.last_activity_at == listed.session.created_at
        for agent_id in (theirs.id, format_id("agent")):
            with pytest.raises(NotFoundError):
                sessions.list_agent_sessions(tx, acme, agent_id)
