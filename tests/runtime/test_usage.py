"""Usage recorded by the runtime: a scripted provider's reported tokens land as they were reported; a failed
usage write never fails the run; the OpenAI-compatible answer's usage is read (cached tokens included);
``agentfy usage`` prints the sums."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from agentfy.cli import app
from agentfy.permissions.channels import telegram_context
from agentfy.runtime import usage
from agentfy.runtime.model import ModelResponse, Usage
from agentfy.runtime.offline import OfflineProvider
from agentfy.runtime.openai_compat import parse_response, parse_usage
from agentfy.runtime.runner import Runtime
from agentfy.store.db import Database, now
from agentfy.store.repos import telemetry
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
