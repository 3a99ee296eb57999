"""Tool use stored as structures: an assistant message's ``tool_calls`` and a tool result's ``tool_call_id``
are validated by field, round-trip through ``list_messages``, and the database refuses them on other roles
(both engines)."""

from __future__ import annotations

from typing import Any

import pytest

from agentfy.store.db import Database
from agentfy.store.errors import InvalidInputError
from agentfy.store.repos import sessions
from agentfy.store.repos.sessions import MessageToolCall
from tests.helpers.tenants import make_tenant
from tests.store.helpers import count, new_agent

KEY = "agent:bot:http:chat"


def _open(db: Database) -> Any:
    scope = make_tenant(db, "acme").scope
    agent = new_agent(db, scope, "bot")
    with db.transaction() as tx:
        sessions.open_session(tx, scope, KEY, agent.id, "u")
    return scope


def test_tool_calls_and_results_round_trip(db: Database) -> None:
    scope = _open(db)
    arguments = {"path": "a.txt", "lines": [1, 2], "deep": {"ok": True, "ratio": 0.5, "none": None}}
    with db.transaction() as tx:
        called = sessions.append_message(tx, scope, KEY, "assistant", "", tool_calls=[
            MessageToolCall("call-1", "write_file", arguments), {"id": "call-2", "name": "read_file",
                                                                 "arguments": {"path": "a.txt"}}])
        result = sessions.append_message(tx, scope, KEY, "tool", "wrote a.txt", tool_call_id="call-1")
        plain = sessions.append_message(tx, scope, KEY, "assistant", "done", tool_calls=[])
    with db.transaction(write=False) as tx:
        stored = sessions.list_messages(tx, scope, KEY)
    assert stored == [called, result, plain]
    assert stored[0].tool_calls == (MessageToolCall("call-1", "write_file", arguments),
                                    MessageToolCall("call-2", "read_file", {"path": "a.txt"}))
    assert (stored[1].tool_call_id, stored[1].tool_calls) == ("call-1", ())
    assert (stored[2].tool_calls, stored[2].tool_call_id) == ((), None)  # an empty list is no calls
    with db.transaction(write=False) as tx:
        raw = tx.scalar("SELECT tool_calls FROM session_messages WHERE seq = 1")
    assert raw.startswith('[{"id":"call-1","name":"write_file","arguments":{')


@pytest.mark.parametrize(("role", "kwargs", "field", "says"), [
    ("user", {"tool_calls": [{"id": "c", "name": "n", "arguments": {}}]}, "tool_calls", "only an assistant"),
    ("assistant", {"tool_call_id": "c"}, "tool_call_id", "only a tool result"),
    ("tool", {"tool_call_id": ""}, "tool_call_id", "empty"),
    ("tool", {"tool_call_id": 5}, "tool_call_id", "expected a string"),
    ("assistant", {"tool_calls": "write_file"}, "tool_calls", "expected a list"),
    ("assistant", {"tool_calls": [["c", "n", {}]]}, "tool_calls[0]", "expected {id, name, arguments}"),
    ("assistant", {"tool_calls": [{"name": "n", "arguments": {}}]}, "tool_calls[0].id", "expected a string"),
    ("assistant", {"tool_calls": [{"id": "c", "name": "", "arguments": {}}]}, "tool_calls[0].name", "empty"),
    ("assistant", {"tool_calls": [{"id": "c", "name": "n", "arguments": "x=1"}]}, "tool_calls[0].arguments",
     "expected a JSON object"),
    ("assistant", {"tool_calls": [{"id": "c", "name": "n", "arguments": {"x": float("nan")}}]},
     "tool_calls[0].arguments", "finite"),
    ("assistant", {"tool_calls": [{"id": "c", "name": "n", "arguments": {"x": object()}}]},
     "tool_calls[0].arguments", "not a JSON value"),
    ("assistant", {"tool_calls": [{"id": "c", "name": "n", "arguments": {}},
                                  {"id": "c", "name": "m", "arguments": {}}]}, "tool_calls[1].id", "its own id"),
])
def test_bad_tool_fields_are_refused_by_name_and_nothing_is_stored(db: Database, role: str, kwargs: dict[str, Any],
                                                                   field: str, says: str) -> None:
    scope = _open(db)
    with pytest.raises(InvalidInputError, match=says) as raised, db.transaction() as tx:
        sessions.append_message(tx, scope, KEY, role, "x", **kwargs)
    assert raised.value.field == field
    assert count(db, "session_messages") == 0


@pytest.mark.parametrize(("role", "column", "value", "constraint"), [
    ("user", "tool_call_id", "c", "tool_call_id_on_tool"),
    ("tool", "tool_call_id", "", "tool_call_id_on_tool"),
    ("tool", "tool_calls", "[]", "tool_calls_on_assistant"),
])
def test_the_database_refuses_tool_fields_on_other_roles(db: Database, role: str, column: str, value: str,
                                                         constraint: str) -> None:
    scope = _open(db)
    with pytest.raises(InvalidInputError, match=constraint), db.transaction() as tx:
        tx.execute(f"INSERT INTO session_messages (tenant_id, session_key, seq, role, content, created_at, {column}) "
                   "VALUES (:tenant, :key, 1, :role, 'x', 'now', :value)",
                   {"tenant": scope.tenant_id, "key": KEY, "role": role, "value": value})
    assert count(db, "session_messages") == 0


def test_an_old_text_tool_row_reads_without_a_call_id(db: Database) -> None:
    scope = _open(db)
    with db.transaction() as tx:
        sessions.append_message(tx, scope, KEY, "tool", "write_file(path='a.txt') -> wrote a.txt")
        tx.execute("UPDATE session_messages SET role = 'assistant', tool_calls = 'not json' WHERE seq = 1")
    with db.transaction(write=False) as tx:
        (message,) = sessions.list_messages(tx, scope, KEY)
    assert (message.tool_calls, message.tool_call_id) == ((), None)  # unreadable calls are left out, not an error
