"""The bus settings: environment, keyword arguments and defaults; bad values refused naming them; the
retry delay; and the process default the library falls back to."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from agentfy.events.outbox import retry_delay
from agentfy.events.settings import BusSettings, as_environment, default_settings, resolve


def test_defaults() -> None:
    settings = BusSettings()
    assert (settings.lease_seconds, settings.renew_interval, settings.max_attempts, settings.batch_size,
            settings.concurrency, settings.handler_timeout_seconds, settings.retention_days) == (60, 20, 5, 20, 1,
                                                                                                 300, 7)


def test_the_environment_sets_and_keyword_arguments_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTFY_EVENTS_LEASE_SECONDS", "120")
    monkeypatch.setenv("AGENTFY_EVENTS_STRICT_IDS", "true")
    monkeypatch.setenv("AGENTFY_EVENTS_BATCH_SIZE", "7")
    settings = BusSettings(batch_size=3)
    assert (settings.lease_seconds, settings.renew_interval, settings.strict_ids, settings.batch_size) == (
        120, 40, True, 3)


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
    with pytest.raises(ValidationError, match=message) as caught:
        BusSettings()
    assert value in str(caught.value)


def test_unknown_settings_are_refused() -> None:
    with pytest.raises(ValidationError, match="lease"):
        BusSettings(lease=5)  # type: ignore[call-arg]


def test_settings_are_frozen() -> None:
    with pytest.raises(ValidationError):
        BusSettings().lease_seconds = 5  # type: ignore[misc]


def test_as_environment_round_trips(monkeypatch: pytest.MonkeyPatch) -> None:
    chosen = BusSettings(lease_seconds=90, renew_seconds=10, strict_ids=True, concurrency=3, backoff_jitter=0)
    for name, value in as_environment(chosen).items():
        monkeypatch.setenv(name, value)
    assert BusSettings() == chosen


def test_the_library_default_is_the_process_settings_read_once() -> None:
    assert resolve(None) is default_settings() and resolve(None) is resolve(None)
    explicit = BusSettings(batch_size=2)
    assert resolve(explicit) is explicit


@given(st.integers(min_value=1, max_value=200), st.floats(min_value=0, max_value=60),
       st.floats(min_value=0, max_value=3600), st.floats(min_value=0, max_value=1))
def test_retry_delay_doubles_is_capped_and_jitter_only_shortens_it(attempt: int, base: float, cap: float,
                                                                   jitter: float) -> None:
    settings = BusSettings(backoff_base_seconds=base, backoff_max_seconds=cap, backoff_jitter=jitter)
    full = min(base * 2.0 ** (attempt - 1), cap)
    delay = retry_delay(attempt, settings)
    assert full * (1 - jitter) - 1e-9 <= delay <= full + 1e-9
