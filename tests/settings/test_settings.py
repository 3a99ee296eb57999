"""The one settings object: precedence (defaults < environment < file < command line), validation that names
the setting, masking of secrets, and `agentfy config show`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from agentfy.gateway import app as gateway_app
from agentfy.gateway.app import create_app
from agentfy.runtime.scheduler import Scheduler
from agentfy.settings import (
    RESOLVED_SETTINGS_ENV,
    Settings,
    SettingsError,
    effective,
    inherited_settings,
    load_settings,
    serialized,
)
from agentfy.store.db import Database
from agentfy.store.migrate import upgrade


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in [n for n in os.environ if n.startswith("AGENTFY_") and not n.startswith("AGENTFY_TEST_")]:
        monkeypatch.delenv(name)


def test_defaults() -> None:
    settings = load_settings()
    assert settings.database_url == "sqlite:///var/agentfy.db"
    assert settings.db.pool_size == 8 and settings.events.lease_seconds == 60.0 and settings.log.level == "info"


def test_environment_over_defaults_file_over_environment_cli_over_file(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTFY_DB_POOL_SIZE", "3")
    monkeypatch.setenv("AGENTFY_EVENTS_LEASE_SECONDS", "120")
    monkeypatch.setenv("AGENTFY_LOG_LEVEL", "debug")
    config = tmp_path / "agentfy.toml"
    config.write_text('[db]\npool_size = 5\n[log]\nformat = "json"\n', encoding="utf-8")

    assert load_settings().db.pool_size == 3  # environment over default
    from_file = load_settings(config_file=config)
    assert from_file.db.pool_size == 5  # file over environment
    assert from_file.events.lease_seconds == 120.0 and from_file.log.level == "debug"  # env kept where unset
    assert from_file.log.format == "json"
    cli = load_settings({"db.pool_size": 7, "log.level": None}, config_file=config)
    assert cli.db.pool_size == 7  # command line over file
    assert cli.log.level == "debug"  # an option not given (None) changes nothing

    sources = {row.name: row.source for row in effective(cli, {"db.pool_size": 7}, config_file=config)}
    assert sources["db.pool_size"] == "cli"
    assert sources["log.format"] == f"file {config}"
    assert sources["events.lease_seconds"] == "env $AGENTFY_EVENTS_LEASE_SECONDS"
    assert sources["serve.port"] == "default"


def test_the_config_file_is_found_through_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "c.toml"
    config.write_text('body_max_bytes = 2048\n', encoding="utf-8")
    monkeypatch.setenv("AGENTFY_CONFIG_FILE", str(config))
    assert load_settings().body_max_bytes == 2048


@pytest.mark.parametrize(("variable", "value", "message"), [
    ("AGENTFY_DB_POOL_SIZE", "many", r"db\.pool_size 'many': Input should be a valid integer"),
    ("AGENTFY_SERVE_PORT", "70000", r"serve\.port '70000': Input should be less than or equal to 65535"),
    ("AGENTFY_LOG_FORMAT", "xml", r"log\.format 'xml': Input should be 'console' or 'json'"),
    ("AGENTFY_EVENTS_LEASE_SECONDS", "0", r"events\.lease_seconds '0': Input should be greater than 0"),
    ("AGENTFY_EVENTS_LEASE_SECONDZ", "1", r"events\.lease_secondz '1': Extra inputs are not permitted"),
    ("AGENTFY_RUNTIME_MODEL_ATTEMPTS", "0", r"runtime\.model_attempts '0': Input should be greater than or equal to 1"),
    ("AGENTFY_RUNTIME_MODEL_TIMEOUT_SECONDS", "0", r"runtime\.model_timeout_seconds '0': Input should be greater "
                                                   r"than 0"),
    ("AGENTFY_SCHEDULER_POLL_SECONDS", "0", r"scheduler\.poll_seconds '0': Input should be greater than 0"),
    ("AGENTFY_SCHEDULER_POLL_SECONDS", "soon", r"scheduler\.poll_seconds 'soon': Input should be a valid number"),
    ("AGENTFY_SCHEDULER_BATCH_SIZE", "0", r"scheduler\.batch_size '0': Input should be greater than or equal to 1"),
    ("AGENTFY_SCHEDULER_BATCH_SIZE", "1001", r"scheduler\.batch_size '1001': Input should be less than or equal to "
                                             r"1000"),
    ("AGENTFY_SCHEDULER_RUN_RETENTION_DAYS", "-1", r"scheduler\.run_retention_days '-1': Input should be greater "
                                                  r"than or equal to 0"),
    ("AGENTFY_SCHEDULER_STALE_RUN_SECONDS", "5", r"scheduler\.stale_run_seconds '5': Input should be greater than "
                                                r"or equal to 60"),
])
def test_a_bad_value_names_the_setting_and_the_value(variable: str, value: str, message: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(SettingsError, match=message):
        load_settings()


def test_a_bad_config_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="does not exist"):
        load_settings(config_file=tmp_path / "missing.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("[db\n", encoding="utf-8")
    with pytest.raises(SettingsError, match="is not valid TOML"):
        load_settings(config_file=broken)
    unknown = tmp_path / "unknown.toml"
    unknown.write_text("colour = 'blue'\n", encoding="utf-8")
    with pytest.raises(SettingsError, match=r"colour 'blue': Extra inputs are not permitted"):
        load_settings(config_file=unknown)


def test_secrets_are_masked_everywhere_but_in_the_environment_handed_to_children(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTFY_SIGNING_KEY", "c2VjcmV0LXNpZ25pbmcta2V5LW9mLTMyLWJ5dGVzLi4uLg==")
    monkeypatch.setenv("AGENTFY_ADMIN_API_KEY", "ak_live_secret")
    settings = load_settings()
    assert "ak_live_secret" not in repr(settings) and "c2VjcmV0" not in str(settings)
    shown = {row.name: row.value for row in effective(settings)}
    assert shown["signing_key"] == "********" and shown["admin_api_key"] == "********"
    assert shown["credentials_key"] == ""  # unset: nothing to mask
    assert json.loads(serialized(settings))["admin_api_key"] == "ak_live_secret"  # for child processes only
    monkeypatch.setenv("AGENTFY_DB_POOL_SIZE", "x")
    monkeypatch.setenv("AGENTFY_CREDENTIALS_KEY", "")
    with pytest.raises(SettingsError) as refused:
        load_settings()
    assert "ak_live_secret" not in str(refused.value)


def test_settings_handed_to_a_child_process_round_trip(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = load_settings({"db.pool_size": 4, "events.strict_ids": True, "serve.event_workers": False,
                              "signing_key": SecretStr("a" * 44), "workspace_root": "/srv/ws",
                              "events.renew_seconds": 5.0})
    assert inherited_settings() is None  # not started by `agentfy serve`
    monkeypatch.setenv(RESOLVED_SETTINGS_ENV, serialized(settings))
    monkeypatch.setenv("AGENTFY_DB_POOL_SIZE", "9")  # the parent resolved the settings: not read again
    assert inherited_settings() == settings
    monkeypatch.setenv(RESOLVED_SETTINGS_ENV, '{"db": {"pool_size": 0}}')
    with pytest.raises(SettingsError, match=r"db\.pool_size 0"):
        inherited_settings()


def test_settings_built_in_code_hold_the_defaults_never_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTFY_DB_POOL_SIZE", "3")
    monkeypatch.setenv("AGENTFY_DATABASE_URL", "sqlite:///elsewhere.db")
    assert Settings().db.pool_size == 8 and Settings().database_url == "sqlite:///var/agentfy.db"
    assert load_settings().db.pool_size == 3  # the edge reads it


def _agentfy(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None
             ) -> subprocess.CompletedProcess[str]:
    import os

    clean = {k: v for k, v in os.environ.items() if not k.startswith("AGENTFY_") or k.startswith("AGENTFY_TEST_")}
    return subprocess.run([sys.executable, "-m", "agentfy.cli", *args], capture_output=True, text=True,
                          env={**clean, **(env or {})}, cwd=cwd, timeout=60, check=False)


def test_config_show_prints_every_setting_its_variable_and_source(tmp_path: Path) -> None:
    config = tmp_path / "a.toml"
    config.write_text("[db]\npool_size = 3\n", encoding="utf-8")
    shown = _agentfy("--config", str(config), "config", "show", "--json",
                     env={"AGENTFY_ADMIN_API_KEY": "ak_secret", "AGENTFY_EVENTS_BATCH_SIZE": "7"}, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    rows = {row["name"]: row for row in map(json.loads, shown.stdout.splitlines())}
    assert rows["db.pool_size"] == {"name": "db.pool_size", "env": "AGENTFY_DB_POOL_SIZE", "value": "3",
                                    "source": f"file {config}"}
    assert rows["events.batch_size"]["source"] == "env $AGENTFY_EVENTS_BATCH_SIZE"
    assert rows["admin_api_key"]["value"] == "********" and "ak_secret" not in shown.stdout
    assert not (tmp_path / "var").exists()  # showing settings creates nothing


def test_config_show_refuses_a_bad_setting_in_one_line() -> None:
    refused = _agentfy("config", "show", env={"AGENTFY_SERVE_PORT": "zero"})
    assert refused.returncode == 2
    assert refused.stderr.strip() == ("error: invalid setting: serve.port 'zero': Input should be a valid integer, "
                                      "unable to parse string as an integer")


def test_docs_list_every_setting() -> None:
    text = (Path(__file__).parents[2] / "docs" / "configuration.md").read_text(encoding="utf-8")
    missing = [row.name for row in effective(load_settings())
               if f"| `{row.name}` | `{row.environment_variable}` |" not in text]
    assert missing == []


def test_the_runtime_section_reaches_every_model_call_of_the_server(monkeypatch: pytest.MonkeyPatch,
                                                                    tmp_path: Path) -> None:
    """The gateway's runtime and its providers are built from the ``runtime`` section: a knob set in the
    environment is the policy every model call of the process uses."""
    monkeypatch.setenv("AGENTFY_RUNTIME_MODEL_ATTEMPTS", "1")
    monkeypatch.setenv("AGENTFY_RUNTIME_MODEL_TIMEOUT_SECONDS", "2.5")
    monkeypatch.setenv("AGENTFY_RUNTIME_MAX_TOOL_ROUNDS", "2")
    settings = load_settings()
    db = Database(f"sqlite:///{tmp_path / 'a.db'}")
    try:
        upgrade(db)
        app = create_app(db, signing_secret=b"s" * 32, settings=settings, workspace_root=tmp_path / "w")
        runtime = app.state.gateway.runtime
        assert (runtime.providers.policy.attempts, runtime.providers.policy.timeout_seconds) == (1, 2.5)
        assert runtime.settings.max_tool_rounds == 2
    finally:
        db.dispose()


def test_the_scheduler_section_reaches_the_servers_cron_scheduler(monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: Path) -> None:
    """``agentfy serve``'s scheduler polls and claims as the ``scheduler`` section says (environment or file)."""
    started: list[Scheduler] = []

    class Recorded(Scheduler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            started.append(self)

    monkeypatch.setattr(gateway_app, "Scheduler", Recorded)
    monkeypatch.setenv("AGENTFY_SCHEDULER_POLL_SECONDS", "0.25")
    config = tmp_path / "agentfy.toml"
    config.write_text("[scheduler]\nbatch_size = 7\nrun_retention_days = 2\n", encoding="utf-8")
    settings = load_settings(config_file=config)
    db = Database(f"sqlite:///{tmp_path / 'a.db'}")
    try:
        upgrade(db)
        application = create_app(db, signing_secret=b"s" * 32, settings=settings, run_workers=True,
                                 workspace_root=tmp_path / "w")
        with TestClient(application):
            (scheduler,) = started
    finally:
        db.dispose()
    assert (scheduler.settings.poll_seconds, scheduler.settings.batch_size) == (0.25, 7)
    assert scheduler.housekeeping.settings.run_retention_days == 2


def test_the_mcp_section_reaches_the_servers_runtime(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The allowed stdio commands and the MCP timeouts come from the platform's settings (here the
    environment, a JSON list for the commands), never from an organization."""
    monkeypatch.setenv("AGENTFY_MCP_ALLOWED_COMMANDS", '["mcp-server-time --local-timezone UTC"]')
    monkeypatch.setenv("AGENTFY_MCP_CALL_TIMEOUT_SECONDS", "12")
    settings = load_settings()
    assert settings.mcp.allowed_commands == ("mcp-server-time --local-timezone UTC",)
    db = Database(f"sqlite:///{tmp_path / 'a.db'}")
    try:
        upgrade(db)
        app = create_app(db, signing_secret=b"s" * 32, settings=settings, workspace_root=tmp_path / "w")
        assert app.state.gateway.runtime.mcp.settings == settings.mcp
        assert app.state.gateway.runtime.mcp.settings.call_timeout_seconds == 12
    finally:
        db.dispose()
    monkeypatch.setenv("AGENTFY_MCP_CALL_TIMEOUT_SECONDS", "0")
    with pytest.raises(SettingsError, match=r"mcp\.call_timeout_seconds"):
        load_settings()
