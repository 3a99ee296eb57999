"""``agentfy credentials …`` and ``agentfy agents model …`` (both engines): the secret comes from standard input
or a variable, never the command line, and is never printed; the model is set with the runtime's validator and
checked with one call through the runtime's providers (a fake OpenAI-compatible server)."""

from __future__ import annotations

import base64

import pytest
from typer.testing import CliRunner

from agentfy.cli import app
from agentfy.runtime import providers
from agentfy.runtime.openai_compat import CallPolicy
from agentfy.runtime.providers import Providers
from agentfy.store.db import Database
from agentfy.store.repos import agents, credentials
from agentfy.store.repos.credentials import CredentialCipher
from tests.helpers.mock_openai import MockOpenAI
from tests.helpers.tenants import Tenant, make_tenant

runner = CliRunner()
KEY = b"c" * 32
SECRET = "sk-cli-0123456789abcdefWXYZ"


@pytest.fixture
def acme(db: Database, monkeypatch: pytest.MonkeyPatch) -> Tenant:
    monkeypatch.setenv("AGENTFY_CREDENTIALS_KEY", base64.b64encode(KEY).decode())
    return make_tenant(db, "acme", agent_key="bot")


def test_set_list_show_rotate_delete(db: Database, db_url: str, acme: Tenant,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    where = ["--org", "acme", "--database-url", db_url]
    stored = runner.invoke(app, ["credentials", "set", "openai", *where], input=SECRET + "\n")
    assert stored.exit_code == 0, stored.output
    assert "stored credential 'openai'" in stored.output
    with db.transaction(write=False) as tx:
        assert credentials.get_credential(tx, acme.scope, CredentialCipher(KEY), "openai") == SECRET.encode()
    monkeypatch.setenv("NEXT_KEY", "sk-next-secret")
    rotated = runner.invoke(app, ["credentials", "set", "openai", "--from-env", "NEXT_KEY", *where])
    assert rotated.exit_code == 0 and "rotated" in rotated.output
    with db.transaction(write=False) as tx:
        assert credentials.get_credential(tx, acme.scope, CredentialCipher(KEY), "openai") == b"sk-next-secret"
    listed = runner.invoke(app, ["credentials", "list", *where])
    shown = runner.invoke(app, ["credentials", "show", "openai", *where])
    assert "openai" in listed.output and "openai" in shown.output
    with db.transaction(write=False) as tx:
        rotated_at = credentials.credential_info(tx, acme.scope, "openai").rotated_at
    assert rotated_at is not None and "rotated_at" in shown.output and rotated_at in shown.output
    for result in (stored, rotated, listed, shown):
        assert SECRET not in result.output and "sk-next-secret" not in result.output
    assert runner.invoke(app, ["credentials", "delete", "openai", *where]).exit_code == 0
    missing = runner.invoke(app, ["credentials", "show", "openai", *where])
    assert missing.exit_code == 2 and "no credential 'openai'" in missing.output


@pytest.mark.parametrize(("args", "given", "message"), [
    (["credentials", "set", "Not A Slug"], SECRET, "invalid credential name"),
    (["credentials", "set", "openai"], "\n", "the secret is empty"),
    (["credentials", "set", "openai", "--from-env", "NO_SUCH_VARIABLE_SET"], None, "not set"),
    (["credentials", "list", "--org", "nowhere"], None, "no organization 'nowhere'"),
])
def test_bad_input_is_a_usage_error_that_names_it(db_url: str, acme: Tenant, args: list[str], given: str | None,
                                                  message: str) -> None:
    where = [] if "--org" in args else ["--org", "acme"]
    result = runner.invoke(app, [*args, *where, "--database-url", db_url], input=given)
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())
    assert SECRET not in result.output


def test_the_model_is_set_shown_and_checked(db: Database, db_url: str, acme: Tenant,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    fake = MockOpenAI(reply="ok")
    # The command's providers, with the credentials key it found, reach the fake server whatever the URL.
    monkeypatch.setattr(providers, "Providers", lambda cipher=None, policy=None: Providers(
        cipher=cipher, clients=fake.clients(), policy=CallPolicy(attempts=1)))
    where = ["--org", "acme", "--database-url", db_url]
    model = ["agents", "model", "set", "bot", "--provider", "openai", "--model", "gpt-test"]
    missing = runner.invoke(app, [*model, "--credential", "openai", *where])
    assert missing.exit_code == 2 and "base_url is required" in missing.output
    url = ["--base-url", "https://llm.test/v1"]
    unknown = runner.invoke(app, [*model, *url, "--credential", "openai", *where])
    assert unknown.exit_code == 2 and "not stored" in unknown.output
    assert runner.invoke(app, ["credentials", "set", "openai", *where], input=SECRET).exit_code == 0
    set_ = runner.invoke(app, [*model, *url, "--credential", "openai", "--context-window", "16000", *where])
    assert set_.exit_code == 0, set_.output
    with db.transaction(write=False) as tx:
        config = agents.resolve_agent(tx, acme.scope, "bot").config
    assert config["model"] == {"provider": "openai", "base_url": "https://llm.test/v1", "model": "gpt-test",
                               "credential": "openai", "context_window": 16000}
    assert "gpt-test" in runner.invoke(app, ["agents", "model", "show", "bot", *where]).output
    checked = runner.invoke(app, ["agents", "model", "check", "bot", *where])
    assert checked.exit_code == 0, checked.output
    assert "ok: gpt-test answered" in checked.output
    assert fake.authorizations() == [f"Bearer {SECRET}"]
    fake.status = 500
    failed = runner.invoke(app, ["agents", "model", "check", "bot", *where])
    assert failed.exit_code == 1 and "the model did not answer" in failed.output
    assert SECRET not in checked.output + failed.output


def test_help_says_the_secret_never_comes_from_the_command_line() -> None:
    result = runner.invoke(app, ["credentials", "set", "--help"])
    assert result.exit_code == 0 and "never from the command line" in " ".join(result.output.split())
