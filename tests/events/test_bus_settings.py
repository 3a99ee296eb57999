"""The bus settings: the environment (read at the edge, by the settings), keyword arguments and defaults;
bad values refused naming them; the retry delay; and the default the library falls back to."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from agentfy.events.outbox import retry_delay
from agentfy.events.settings import DEFAULT_BUS_SETTINGS, BusSettings
from agentfy.events.worker import Worker
from agentfy.settings import SettingsError, load_settings


def test_defaults() -> None:
    settings = BusSettings()
    assert (settings.lease_seconds, settings.renew_interval, settings.max_attempts, settings.batch_size,
            settings.concurrency, settings.handler_timeout_seconds, settings.retention_days) == (60, 20, 5, 20, 1,
                                                                                                 300, 7)


def test_the_environment_sets_and_options_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTFY_EVENTS_LEASE_SECONDS", "120")
    monkeypatch.setenv("AGENTFY_EVENTS_STRICT_IDS", "true")
    monkeypatch.setenv("AGENTFY_EVENTS_BATCH_SIZE", "7")
    settings = load_settings({"events.batch_size": 3}).events
    assert (settings.lease_seconds, settings.renew_interval, settings.strict_ids, settings.batch_size) == (
        120, 40, True, 3)
    assert BusSettings() == DEFAULT_BUS_SETTINGS  # built in code: the defaults, never the environment


@pytest.mark.parametrize(("variable", "value", "message"), [
    ("AGENTFY_EVENTS_MAX_ATTEMPTS", "abc", "max_attempts"),
    ("AGENTFY_EVENTS_LEASE_SECONDS", "0", "lease_seconds"),
    ("AGENTFY_EVENTS_BACKOFF_JITTER", "1.5", "backoff_jitter"),
    ("AGENTFY_EVENTS_BATCH_SIZE", "0", "batch_size"),
    ("AGENTFY_EVENTS_RENEW_SECONDS", "60", "renew_seconds 60.0 must be shorter than lease_seconds 60.0"),
])
def test_a_bad_value_is_refused_naming_the_setting_and_the_value(monkeypatch: pytest.MonkeyPatch, variable: str,
                                                                  value: str, message: str) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(SettingsError, match=message) as caught:
        load_settings()
    assert value in str(caught.value)


def test_unknown_settings_are_refused() -> None:
    with pytest.raises(ValidationError, match="lease"):
        BusSettings(lease=5)  # type: ignore[call-arg]


def test_settings_are_frozen() -> None:
    with pytest.raises(ValidationError):
        BusSettings().lease_seconds = 5  # type: ignore[misc]


def test_keyword_arguments_are_validated_like_the_environment() -> None:
    with pytest.raises(ValidationError, match=r"renew_seconds 60\.0 must be shorter than lease_seconds 60\.0"):
        BusSettings(renew_seconds=60)


def test_the_library_default_is_the_defaults_not_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTFY_EVENTS_BATCH_SIZE", "7")
    assert Worker(object(), {}).settings is DEFAULT_BUS_SETTINGS  # type: ignore[arg-type]
    explicit = BusSettings(batch_size=2)
    assert Worker(object(), {}, settings=explicit).settings is explicit  # type: ignore[arg-type]


@given(st.integers(min_value=1, max_value=200), st.floats(min_value=0, max_value=60),
       st.floats(min_value=0, max_value=3600), st.floats(min_value=0, max_value=1))
def test_retry_delay_doubles_is_capped_and_jitter_only_shortens_it(attempt: int, base: float, cap: float,
                                                                   jitter: float) -> None:
    settings = BusSettings(backoff_base_seconds=base, backoff_max_seconds=cap, backoff_jitter=jitter)
    full = min(base * 2.0 ** (attempt - 1), cap)
    delay = retry_delay(attempt, settings)
    assert full * (1 - jitter) - 1e-9 <= delay <= full + 1e-9
