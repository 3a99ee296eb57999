"""One run per conversation across gateway processes on PostgreSQL: two runtimes on two ``Database`` objects
(two processes as far as the server can tell: separate pools, separate lock connections) on one database."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from agentfy.agents.router import Router
from agentfy.permissions.channels import telegram_context
from agentfy.runtime.inbound import Reply
from agentfy.runtime.model import ModelRequest, ModelResponse, TextSink
from agentfy.runtime.providers import Providers
from agentfy.runtime.runner import Runtime
from agentfy.store.db import Database
from agentfy.store.repos import sessions
from tests.helpers.tenants import Tenant, make_tenant
from tests.runtime.helpers import inbound, run

MODEL_SECONDS = 0.3


class TimedModel:
    """Takes ``MODEL_SECONDS`` to answer; records when each run's model call started and ended, what it saw,
    and how many pooled connections its process had checked out meanwhile."""

    def __init__(self, pools: dict[str, Database]) -> None:
        self.pools = pools
        self.calls: list[tuple[str, float, float, list[str]]] = []
        self.checked_out: list[int] = []
        self.release = asyncio.Event()
        self.release.set()

    async def complete(self, request: ModelRequest, *, on_text: TextSink | None = None) -> ModelResponse:
        started = time.monotonic()
        text = request.messages[-1].content
        self.checked_out.extend(db.pool.checked_out for db in self.pools.values())
        await asyncio.sleep(MODEL_SECONDS)
        await self.release.wait()
        self.calls.append((text, started, time.monotonic(), [m.content for m in request.messages]))
        return ModelResponse(text=f"done: {text}")


@pytest.fixture
def second_db(pg_db: Database) -> Iterator[Database]:
    """Another process's view of the same database."""
    other = Database(pg_db.url)
    yield other
    other.dispose()


@pytest.fixture
def acme(pg_db: Database) -> Tenant:
    return make_tenant(pg_db, "acme", agent_key="bot")


def runtimes(pg_db: Database, second_db: Database, tmp_path: Path, model: TimedModel) -> tuple[Runtime, Runtime]:
    def one(db: Database) -> Runtime:
        return Runtime(db, Router(db), workspace_root=tmp_path, providers=Providers(offline=model))

    return one(pg_db), one(second_db)


def overlapping(a: tuple[str, float, float, list[str]], b: tuple[str, float, float, list[str]]) -> bool:
    return a[1] < b[2] and b[1] < a[2]


def test_two_processes_run_one_conversation_one_after_the_other(pg_db: Database, second_db: Database,
                                                                 tmp_path: Path, acme: Tenant) -> None:
    model = TimedModel({"first": pg_db, "second": second_db})
    one, two = runtimes(pg_db, second_db, tmp_path, model)
    group = telegram_context(-100123, 1001, is_group=True, tenant_id=acme.id)
    other = telegram_context(-100123, 1002, is_group=True, tenant_id=acme.id)

    async def scenario() -> list[Reply]:
        return list(await asyncio.gather(one(inbound(acme, group, "via one")), two(inbound(acme, other, "via two"))))

    try:
        replies = run(scenario())
    finally:
        one.close()
        two.close()
    assert [reply.text for reply in replies] == ["done: via one", "done: via two"]
    assert replies[0].session_key == replies[1].session_key  # one group chat: one session
    first, second = sorted(model.calls, key=lambda call: call[1])
    assert not overlapping(first, second), model.calls
    # The later run read the history after the earlier one's reply was stored: nothing crossed.
    assert second[3] == [first[0], f"done: {first[0]}", second[0]]
    # While a run holds its conversation no pooled connection is taken (the lock has a connection of its own).
    assert set(model.checked_out) == {0}
    with pg_db.transaction(write=False) as tx:
        stored = [m.content for m in sessions.list_messages(tx, acme.scope, replies[0].session_key)]
    assert stored == [first[0], f"done: {first[0]}", second[0], f"done: {second[0]}"]


def test_two_processes_still_run_different_conversations_at_once(pg_db: Database, second_db: Database,
                                                                  tmp_path: Path, acme: Tenant) -> None:
    model = TimedModel({"first": pg_db, "second": second_db})
    one, two = runtimes(pg_db, second_db, tmp_path, model)

    async def scenario() -> None:
        await asyncio.gather(
            one(inbound(acme, telegram_context(555, 1001, is_group=False, tenant_id=acme.id), "alice")),
            two(inbound(acme, telegram_context(556, 1002, is_group=False, tenant_id=acme.id), "bob")))

    try:
        run(scenario())
    finally:
        one.close()
        two.close()
    first, second = model.calls
    assert overlapping(first, second), model.calls


def test_a_dead_process_does_not_keep_the_conversation(pg_db: Database, second_db: Database, tmp_path: Path,
                                                       acme: Tenant) -> None:
    """The server drops a dead process's locks with its connection: the other process goes on."""
    model = TimedModel({"first": pg_db, "second": second_db})
    model.release.clear()  # the first run never finishes on its own
    one, two = runtimes(pg_db, second_db, tmp_path, model)
    dm = telegram_context(555, 1001, is_group=False, tenant_id=acme.id)

    async def scenario() -> str | None:
        stuck = asyncio.create_task(one(inbound(acme, dm, "stuck")))
        await asyncio.sleep(MODEL_SECONDS / 2)  # the first run holds the conversation, inside its model call
        waiting = asyncio.create_task(two(inbound(acme, dm, "next")))
        await asyncio.sleep(MODEL_SECONDS)
        assert not waiting.done()  # held by the other process
        one.close()  # the first process dies: its lock connection is gone, its run is not finished
        stuck.cancel()
        model.release.set()
        reply = await asyncio.wait_for(waiting, 5)
        return reply.text

    try:
        assert run(scenario()) == "done: next"
    finally:
        one.close()
        two.close()


def test_a_cancelled_run_gives_the_conversation_back(pg_db: Database, second_db: Database, tmp_path: Path,
                                                     acme: Tenant) -> None:
    model = TimedModel({"first": pg_db, "second": second_db})
    model.release.clear()
    one, two = runtimes(pg_db, second_db, tmp_path, model)
    dm = telegram_context(555, 1001, is_group=False, tenant_id=acme.id)

    async def scenario() -> str | None:
        stuck = asyncio.create_task(one(inbound(acme, dm, "stuck")))
        await asyncio.sleep(MODEL_SECONDS / 2)
        stuck.cancel()  # e.g. the client went away; the process lives on
        await asyncio.gather(stuck, return_exceptions=True)
        model.release.set()
        reply = await asyncio.wait_for(two(inbound(acme, dm, "next")), 5)
        return reply.text

    try:
        assert run(scenario()) == "done: next"
    finally:
        one.close()
        two.close()


def test_a_lock_connection_closed_by_the_server_while_idle_is_replaced(pg_db: Database, tmp_path: Path,
                                                                        acme: Tenant) -> None:
    model = TimedModel({"first": pg_db})
    runtime = Runtime(pg_db, Router(pg_db), workspace_root=tmp_path, providers=Providers(offline=model))
    dm = telegram_context(555, 1001, is_group=False, tenant_id=acme.id)

    async def scenario() -> str | None:
        await runtime(inbound(acme, dm, "before"))
        with psycopg.connect(pg_db.conninfo, autocommit=True) as admin:  # e.g. idle_session_timeout, a restart
            killed = admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name "
                                   "= 'agentfy run locks' AND datname = current_database()").fetchall()
        assert killed
        return (await runtime(inbound(acme, dm, "after"))).text

    try:
        assert run(scenario()) == "done: after"
    finally:
        runtime.close()
