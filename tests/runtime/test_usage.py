"""Usage recorded by the runtime: a scripted provider's reported tokens land as they were reported; a failed
usage write never fails the run; the OpenAI-compatible answer's usage is read (cached tokens included);
``agentfy usage`` prints the sums."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from agentfy.cli import app
from agentfy.permissions.channels import telegram_context
from agentfy.runtime import usage
from agentfy.runtime.model import ModelError, ModelRequest, ModelResponse, TextSink, ToolCall, Usage
from agentfy.runtime.offline import OfflineProvider
from agentfy.runtime.openai_compat import parse_response, parse_usage
from agentfy.runtime.runner import Runtime
from agentfy.store.db import Database, Tx, now
from agentfy.store.repos import sessions, telemetry
from tests.helpers.tenants import Tenant
from tests.runtime.helpers import inbound, send

runner = CliRunner()


def _message(tenant: Tenant, text: str = "hello") -> object:
    return inbound(tenant, telegram_context(555, 1001, is_group=False, tenant_id=tenant.id), text)


def test_reported_tokens_are_recorded_as_reported(db: Database, runtime: Runtime, acme: Tenant) -> None:
    runtime.providers.offline = OfflineProvider([ModelResponse(text="hi", usage=Usage(120, 9, 100))])
    assert send(runtime, _message(acme)).text == "hi"  # type: ignore[arg-type]
    assert acme.bot is not None
    with db.transaction(write=False) as tx:
        [row] = telemetry.usage_by_agent_day(tx, acme.scope)
    assert (row.agent_id, row.agent_key, row.input_tokens, row.output_tokens, row.cached_tokens) == (
        acme.bot.id, "bot", 120, 9, 100)
    assert runtime.tokens.snapshot() == {("offline", "prompt"): 120, ("offline", "completion"): 9,
                                         ("offline", "cached"): 100}


def test_a_failed_usage_write_is_logged_and_the_run_goes_on(db: Database, runtime: Runtime, acme: Tenant,
                                                            monkeypatch: pytest.MonkeyPatch,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    def broken(tx: object, row: object) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(telemetry, "record_usage", broken)
    reply = send(runtime, _message(acme))  # type: ignore[arg-type]
    assert reply.text == "@bot heard: hello"
    assert "runtime.usage_not_recorded" in caplog.text
    with db.transaction(write=False) as tx:
        assert telemetry.usage_by_agent_day(tx, acme.scope) == []


def _session_texts(db: Database, tenant: Tenant) -> list[tuple[str, str]]:
    with db.transaction(write=False) as tx:
        [session] = tx.all("SELECT session_key FROM sessions WHERE tenant_id = :tenant_id",
                           {"tenant_id": tenant.id})
        return [(m.role, m.content) for m in sessions.list_messages(tx, tenant.scope, str(session[0]))]


def test_a_usage_write_failing_in_the_database_keeps_the_reply(db: Database, runtime: Runtime, acme: Tenant,
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    """The usage row goes in the reply's transaction: a statement that fails there (on PostgreSQL it aborts the
    whole transaction) is logged, and the reply is committed all the same, once, in a transaction of its own."""
    def failing(tx: Tx, row: object) -> None:
        tx.execute("INSERT INTO usage_snapshots (id) VALUES (NULL)")

    monkeypatch.setattr(telemetry, "record_usage", failing)
    reply = send(runtime, _message(acme))  # type: ignore[arg-type]
    assert reply.text == "@bot heard: hello"
    assert "runtime.usage_not_recorded" in caplog.text
    assert _session_texts(db, acme) == [("user", "hello"), ("assistant", "@bot heard: hello")]
    with db.transaction(write=False) as tx:
        assert telemetry.usage_by_agent_day(tx, acme.scope) == []


def test_every_call_of_a_run_with_tools_has_its_row(db: Database, runtime: Runtime, acme: Tenant) -> None:
    """One row per model call: the tool round's goes with the round's messages, the last with the reply."""
    runtime.providers.offline = OfflineProvider([
        ModelResponse(tool_calls=(ToolCall("c1", "search_memory", {"query": "notes"}),), usage=Usage(10, 1)),
        ModelResponse(text="found nothing", usage=Usage(20, 2))])
    assert send(runtime, _message(acme)).text == "found nothing"  # type: ignore[arg-type]
    with db.transaction(write=False) as tx:
        [row] = telemetry.usage_by_agent_day(tx, acme.scope)
    assert (row.input_tokens, row.output_tokens) == (30, 3)
    assert [role for role, _ in _session_texts(db, acme)] == ["user", "assistant", "tool", "assistant"]


def test_a_call_with_no_reply_and_a_call_before_a_failure_are_recorded(db: Database, runtime: Runtime,
                                                                      acme: Tenant) -> None:
    """Usage no later write takes — a run that said nothing, a run whose model failed after a tool round — is
    still written, on its own."""
    runtime.providers.offline = OfflineProvider([ModelResponse(text=None, usage=Usage(7, 0))])
    assert send(runtime, _message(acme)).text is None  # type: ignore[arg-type]

    class FailsSecond(OfflineProvider):
        async def complete(self, request: ModelRequest, *, on_text: TextSink | None = None) -> ModelResponse:
            if not self.script:
                raise ModelError("the model at http://model.test is unreachable")
            return await super().complete(request, on_text=on_text)

    runtime.providers.offline = FailsSecond([
        ModelResponse(tool_calls=(ToolCall("c1", "search_memory", {"query": "notes"}),), usage=Usage(5, 1))])
    with pytest.raises(ModelError):
        send(runtime, _message(acme, "again"))  # type: ignore[arg-type]
    with db.transaction(write=False) as tx:
        [row] = telemetry.usage_by_agent_day(tx, acme.scope)
    assert (row.input_tokens, row.output_tokens) == (12, 1)


def test_usage_is_recorded_for_the_runs_tenant_only(db: Database, runtime: Runtime, acme: Tenant,
                                                    globex: Tenant) -> None:
    send(runtime, _message(globex))  # type: ignore[arg-type]
    with db.transaction(write=False) as tx:
        assert telemetry.usage_by_agent_day(tx, acme.scope) == []
        [row] = telemetry.usage_by_agent_day(tx, globex.scope)
    assert globex.bot is not None and row.agent_id == globex.bot.id


def test_the_usage_row_refuses_a_placeholder_agent_id(db: Database, acme: Tenant) -> None:
    assert acme.bot is not None
    placeholder = acme.bot._replace(id="00000000-0000-0000-0000-000000000000")
    assert not usage.record(db, placeholder, provider="offline", model="offline", usage=Usage(1, 1), run_id="r",
                            session_key="s")
    with db.transaction(write=False) as tx:
        assert telemetry.usage_by_agent_day(tx, acme.scope) == []


def test_the_openai_answers_usage_is_read_and_a_missing_one_is_none() -> None:
    answer = {"choices": [{"message": {"content": "ok"}}],
              "usage": {"prompt_tokens": 50, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": 32}}}
    assert parse_response(answer).usage == Usage(50, 3, 32)
    assert parse_usage({"prompt_tokens": 5, "completion_tokens": 1}) == Usage(5, 1, None)
    for odd in (None, {}, {"prompt_tokens": "5", "completion_tokens": 1}, {"prompt_tokens": -1,
                                                                           "completion_tokens": 1}):
        assert parse_usage(odd) is None
    assert parse_response({"choices": [{"message": {"content": "ok"}}]}).usage is None


def test_the_cli_prints_usage_per_agent_and_day(db: Database, db_url: str, runtime: Runtime, acme: Tenant,
                                                globex: Tenant) -> None:
    send(runtime, _message(acme))  # type: ignore[arg-type]
    send(runtime, _message(globex, "not acme's"))  # type: ignore[arg-type]
    result = runner.invoke(app, ["usage", "--org", "acme", "--database-url", db_url])
    assert result.exit_code == 0, result.output
    assert acme.bot is not None and globex.bot is not None
    assert now()[:10] in result.stdout and acme.bot.id in result.stdout and globex.bot.id not in result.stdout
    one = runner.invoke(app, ["usage", "--org", "acme", "--agent", "bot", "--since", now()[:10],
                              "--database-url", db_url])
    assert one.exit_code == 0 and acme.bot.id in one.stdout
    for bad in (["--org", "nobody"], ["--org", "acme", "--agent", "ghost"], ["--org", "acme", "--since", "May"]):
        refused = runner.invoke(app, ["usage", *bad, "--database-url", db_url])
        assert refused.exit_code == 2, (bad, refused.output)
