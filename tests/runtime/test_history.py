"""Structured history: a run's tool use is stored as an assistant message with its calls and one tool message
per result, written together; later turns replay the whole exchanges, compaction never splits one, and a
failure never leaves a call without its results (both engines)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from agentfy.agents.router import Router
from agentfy.permissions.channels import telegram_context
from agentfy.runtime import conversation
from agentfy.runtime.model import ChatMessage, ModelError, ModelRequest, ModelResponse, TextSink, ToolCall
from agentfy.runtime.offline import OfflineProvider
from agentfy.runtime.prompting import model_history
from agentfy.runtime.providers import Providers
from agentfy.runtime.runner import Runtime
from agentfy.store.db import Database, Tx
from agentfy.store.errors import InvalidInputError
from agentfy.store.repos import sessions
from agentfy.store.repos.sessions import MessageToolCall, SessionMessage
from tests.helpers.tenants import Tenant, make_tenant
from tests.runtime.helpers import inbound, send


def assert_valid_sequence(messages: Sequence[ChatMessage]) -> None:
    """The chat-completions rule: every tool message answers a call of the assistant message just before its
    run of tool messages, and every call is answered there exactly once."""
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        assert message.role != "tool", f"orphan tool message at {index - 1}: {message}"
        if message.role == "assistant" and message.tool_calls:
            answered = []
            while index < len(messages) and messages[index].role == "tool":
                answered.append(messages[index].tool_call_id)
                index += 1
            assert sorted(answered) == sorted(c.id for c in message.tool_calls), message  # type: ignore[type-var]


def stored(db: Database, tenant: Tenant, key: str) -> list[SessionMessage]:
    with db.transaction(write=False) as tx:
        return sessions.list_messages(tx, tenant.scope, key)


def _runtime(db: Database, tmp_path: Path, model: object) -> Runtime:
    return Runtime(db, Router(db), workspace_root=tmp_path, providers=Providers(offline=model))  # type: ignore[arg-type]


def test_a_second_turn_replays_the_first_turns_tool_call_and_result(db: Database, tmp_path: Path,
                                                                    acme: Tenant) -> None:
    model = OfflineProvider()
    model.keep_requests = True
    runtime = _runtime(db, tmp_path, model)
    ctx = telegram_context(1001, 1001, is_group=False, tenant_id=acme.id)
    first = send(runtime, inbound(acme, ctx, "/tool write_file path=a.txt content=hi"))
    assert first.text == "write_file: wrote a.txt (2 bytes) for 1001"
    second = send(runtime, inbound(acme, ctx, "what did you do?"))
    assert second.text == "@bot heard: what did you do?"
    replayed = model.requests[-1].messages
    assert_valid_sequence(replayed)
    assert [m.role for m in replayed] == ["user", "assistant", "tool", "assistant", "user"]
    call = replayed[1].tool_calls[0]
    assert (replayed[1].content, call.name, dict(call.arguments)) == ("", "write_file",
                                                                       {"path": "a.txt", "content": "hi"})
    assert (replayed[2].tool_call_id, replayed[2].content) == (call.id, "wrote a.txt (2 bytes) for 1001")
    # the stored rows are structures, not text
    rows = stored(db, acme, first.session_key)
    assert [(m.role, m.content, m.tool_calls, m.tool_call_id) for m in rows[:4]] == [
        ("user", "/tool write_file path=a.txt content=hi", (), None),
        ("assistant", "", (MessageToolCall(call.id, "write_file", {"path": "a.txt", "content": "hi"}),), None),
        ("tool", "wrote a.txt (2 bytes) for 1001", (), call.id),
        ("assistant", "write_file: wrote a.txt (2 bytes) for 1001", (), None)]
    # a tool call on the second turn is answered from its own result, not the replayed one
    third = send(runtime, inbound(acme, ctx, "/tool read_file path=a.txt"))
    assert third.text == "read_file: hi"
    assert_valid_sequence(model.requests[-1].messages)
    ids = [c.id for m in stored(db, acme, first.session_key) for c in m.tool_calls]
    assert len(ids) == len(set(ids)) == 2


class _FailsInRound2:
    """Round 1 calls two tools; round 2 fails (the model is unreachable)."""

    def __init__(self) -> None:
        self.calls = 0

    async def complete(self, request: ModelRequest, *, on_text: TextSink | None = None) -> ModelResponse:
        self.calls += 1
        if self.calls == 1:
            return ModelResponse(text="Let me write it.", tool_calls=(
                ToolCall("c1", "write_file", {"path": "a.txt", "content": "x"}),
                ToolCall("c2", "read_file", {"path": "a.txt"})))
        raise ModelError("the model is unreachable")


def test_a_failing_model_in_round_2_leaves_only_complete_pairs(db: Database, tmp_path: Path, acme: Tenant) -> None:
    runtime = _runtime(db, tmp_path, _FailsInRound2())
    ctx = telegram_context(1001, 1001, is_group=False, tenant_id=acme.id)
    with pytest.raises(ModelError):
        send(runtime, inbound(acme, ctx, "write a.txt"))
    (session,) = {s for s in _session_keys(db, acme)}
    rows = stored(db, acme, session)
    assert [(m.role, m.tool_call_id) for m in rows] == [("user", None), ("assistant", None), ("tool", "c1"),
                                                        ("tool", "c2")]
    assert rows[1].content == "Let me write it." and [c.id for c in rows[1].tool_calls] == ["c1", "c2"]
    assert rows[3].content == "x"
    assert_valid_sequence(model_history(rows))


def test_a_round_whose_results_cannot_be_stored_stores_nothing_of_it(db: Database, tmp_path: Path,
                                                                     acme: Tenant) -> None:
    runtime = _runtime(db, tmp_path, OfflineProvider())
    ctx = telegram_context(1001, 1001, is_group=False, tenant_id=acme.id)
    key = send(runtime, inbound(acme, ctx, "hello")).session_key
    before = stored(db, acme, key)
    called = ChatMessage("assistant", "", (ToolCall("c1", "read_file", {"path": "a"}),))
    with pytest.raises(InvalidInputError, match="content"):
        runtime._store_round(acme.bot, key, called, [ChatMessage("tool", "bad\x00", tool_call_id="c1")])
    assert stored(db, acme, key) == before  # the assistant message was rolled back with its result


def _session_keys(db: Database, tenant: Tenant) -> list[str]:
    with db.transaction(write=False) as tx:
        return [row[0] for row in tx.all("SELECT session_key FROM sessions WHERE tenant_id = :t", {"t": tenant.id})]


def test_compaction_never_splits_a_pair(db: Database, tmp_path: Path) -> None:
    org = make_tenant(db, "acme", agent_key="bot", config={"model": {"provider": "offline", "context_window": 500}})
    model = OfflineProvider()
    model.keep_requests = True
    runtime = _runtime(db, tmp_path, model)
    ctx = telegram_context(555, 1001, is_group=False, tenant_id=org.id)
    keys = set()
    for n in range(6):
        keys.add(send(runtime, inbound(org, ctx, f"/tool write_file path=n{n}.txt content={'w' * 300}")).session_key)
        keys.add(send(runtime, inbound(org, ctx, f"Message {n}: " + "words " * 30)).session_key)
    (key,) = keys
    rows = stored(db, org, key)
    markers = [i for i, m in enumerate(rows) if m.role == "system" and m.content.startswith("[compacted]")]
    assert len(markers) >= 2
    for index in markers:  # a compaction is never between a call and its results
        assert rows[index - 1].role != "assistant" or not rows[index - 1].tool_calls
        assert rows[index + 1].role != "tool"
    for request in model.requests:
        assert_valid_sequence(request.messages)
    assert any(m.tool_calls for r in model.requests for m in r.messages if m.role == "assistant")
    # the compaction's summary reads the tool exchange: the tool's name and a short result
    assert "tool write_file: wrote n0.txt (300 bytes) for 1001" in rows[markers[0]].content


def test_a_history_window_never_starts_inside_an_exchange(db: Database, acme: Tenant,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    key = "chat"
    with db.transaction() as tx:
        sessions.open_session(tx, acme.scope, key, acme.bot.id, "u")
        sessions.append_message(tx, acme.scope, key, "user", "go")
        sessions.append_message(tx, acme.scope, key, "assistant", "", tool_calls=[
            {"id": "a", "name": "read_file", "arguments": {}}, {"id": "b", "name": "read_file", "arguments": {}}])
        sessions.append_message(tx, acme.scope, key, "tool", "one", tool_call_id="a")
        sessions.append_message(tx, acme.scope, key, "tool", "two", tool_call_id="b")
        sessions.append_message(tx, acme.scope, key, "assistant", "read both")
    monkeypatch.setattr(conversation, "HISTORY_LIMIT", 3)  # the window would start at the second result
    with db.transaction(write=False) as tx:
        window = conversation.history(tx, acme.scope, key)
    assert [(m.role, m.content) for m in window] == [("assistant", "read both")]


def test_a_long_session_shows_its_newest_window_read_at_once(db: Database, acme: Tenant,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A session far longer than the window: the model sees the newest messages, oldest first, and the
    history costs one read of the window, not a read of everything the session ever stored."""
    key = "long"
    with db.transaction() as tx:
        sessions.open_session(tx, acme.scope, key, acme.bot.id, "u")
        for n in range(1, 41):
            sessions.append_message(tx, acme.scope, key, "user" if n % 2 else "assistant", f"m{n}")
    monkeypatch.setattr(conversation, "HISTORY_LIMIT", 6)
    executed: list[object] = []
    execute = Tx.execute

    def counted(self: Tx, statement: object, params: object = None) -> object:
        executed.append(statement)
        return execute(self, statement, params)  # type: ignore[arg-type]

    with db.transaction(write=False) as tx:
        session = sessions.get_session(tx, acme.scope, key)
        monkeypatch.setattr(Tx, "execute", counted)
        window = conversation.history(tx, acme.scope, session)
        monkeypatch.setattr(Tx, "execute", execute)
        assert [m.content for m in window] == [f"m{n}" for n in range(35, 41)]
        assert len(executed) == 1
        assert [m.content for m in conversation.history(tx, acme.scope, key)] == [f"m{n}" for n in range(35, 41)]


def _message(seq: int, role: str, content: str, *, calls: tuple[str, ...] = (),
             answers: str | None = None) -> SessionMessage:
    return SessionMessage("s", seq, role, None, content, "t", tuple(MessageToolCall(c, "read_file", {"path": c})
                                                                    for c in calls), answers)


def test_replay_drops_orphans_old_text_rows_and_unanswered_calls() -> None:
    messages = [
        _message(1, "user", "old turn"),
        _message(2, "tool", "write_file(path='a.txt') -> wrote a.txt"),  # stored as text before the change
        _message(3, "assistant", "wrote it"),
        _message(4, "tool", "orphan", answers="x"),
        _message(5, "system", "[compacted] summary"),
        _message(6, "user", "read"),
        _message(7, "assistant", "reading", calls=("a", "b")),
        _message(8, "tool", "only a", answers="a"),  # b has no result: the calls are not replayed
        _message(9, "assistant", "", calls=("c",)),  # no text and no result: nothing to replay
        _message(10, "user", "again"),
        _message(11, "assistant", "", calls=("d", "e")),
        _message(12, "tool", "e result", answers="e"),  # answered out of order, with a stray duplicate
        _message(13, "tool", "d result", answers="d"),
        _message(14, "tool", "stray", answers="zz"),
        _message(15, "assistant", "done"),
    ]
    shown = model_history(messages)
    assert_valid_sequence(shown)
    assert [(m.role, m.content, tuple(c.id for c in m.tool_calls), m.tool_call_id) for m in shown] == [
        ("user", "old turn", (), None), ("assistant", "wrote it", (), None),
        ("system", "[compacted] summary", (), None), ("user", "read", (), None),
        ("assistant", "reading", (), None), ("user", "again", (), None),
        ("assistant", "", ("d", "e"), None), ("tool", "d result", (), "d"), ("tool", "e result", (), "e"),
        ("assistant", "done", (), None)]
