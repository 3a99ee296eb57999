"""The one validator of a model configuration: every refusal names the field path, the value and what was
expected, wherever the configuration sits (an agent's ``config.model``, or a body that is the configuration)."""

from __future__ import annotations

from typing import Any

import pytest

from agentfy.runtime.providers import ModelConfigError, ModelSettings

OPENAI = {"provider": "openai", "base_url": "https://llm.test/v1", "model": "m"}
ANTHROPIC = {"provider": "anthropic", "model": "claude-test"}


@pytest.mark.parametrize(("raw", "field", "value"), [
    ({"provider": "openai", "model": "m"}, "base_url", None),
    ({"provider": "openai", "base_url": "https://x.test"}, "model", None),
    ({**OPENAI, "base_url": "ftp://x.test"}, "base_url", "ftp://x.test"),
    ({**OPENAI, "base_url": "https://"}, "base_url", "https://"),
    ({"provider": "claude"}, "provider", "claude"),
    ({"context_window": 499}, "context_window", 499),
    ({"context_window": True}, "context_window", None),
    ({**OPENAI, "credential": "Not A Slug"}, "credential", "Not A Slug"),
    ({**OPENAI, "model": ""}, "model", ""),
    ({"provider": "anthropic"}, "model", None),
    ({**ANTHROPIC, "base_url": "api.anthropic.com"}, "base_url", "api.anthropic.com"),
    ({**ANTHROPIC, "max_tokens": 0}, "max_tokens", 0),
    ({**ANTHROPIC, "max_tokens": 1_000_001}, "max_tokens", 1_000_001),
    ({**ANTHROPIC, "max_tokens": "4096"}, "max_tokens", "4096"),
    ({**ANTHROPIC, "max_tokens": True}, "max_tokens", None),
    ({**ANTHROPIC, "credential": "Not A Slug"}, "credential", "Not A Slug"),
    ({**OPENAI, "max_tokens": 100}, "max_tokens", 100),
    ({"max_tokens": 100}, "max_tokens", 100),
])
def test_a_refusal_names_the_field_the_value_and_what_was_expected(raw: dict[str, Any], field: str,
                                                                   value: object) -> None:
    for where, path in (("config.model", f"config.model.{field}"), ("", field)):
        with pytest.raises(ModelConfigError) as raised:
            ModelSettings.parse(raw, field=where)
        assert raised.value.field == path and path in str(raised.value)
        assert raised.value.value == value and raised.value.expected


def test_a_configuration_that_is_not_an_object_is_refused_naming_it() -> None:
    with pytest.raises(ModelConfigError) as raised:
        ModelSettings.parse("gpt-4", field="config.model")
    assert raised.value.field == "config.model" and raised.value.expected == "an object"


def test_a_valid_configuration_reads_back_from_what_it_stores() -> None:
    settings = ModelSettings.parse({**OPENAI, "credential": "openai", "context_window": 16000})
    assert settings == ModelSettings("openai", "https://llm.test/v1", "m", "openai", 16000)
    assert ModelSettings.parse(settings.as_config()) == settings
    assert ModelSettings.parse(None) == ModelSettings()


def test_anthropic_defaults_its_base_url_and_max_tokens_and_reads_back() -> None:
    settings = ModelSettings.parse({**ANTHROPIC, "credential": "anthropic"})
    assert settings == ModelSettings("anthropic", "https://api.anthropic.com", "claude-test", "anthropic",
                                     max_tokens=4096)
    assert ModelSettings.parse(settings.as_config()) == settings
    chosen = ModelSettings.parse({**ANTHROPIC, "base_url": "http://127.0.0.1:9", "max_tokens": 64}, field="")
    assert (chosen.base_url, chosen.max_tokens) == ("http://127.0.0.1:9", 64)
    assert ModelSettings.parse(OPENAI).max_tokens is None and "max_tokens" not in ModelSettings.parse(
        OPENAI).as_config()


def test_a_refused_max_tokens_says_what_would_do() -> None:
    with pytest.raises(ModelConfigError) as raised:
        ModelSettings.parse({**OPENAI, "max_tokens": 100})
    assert str(raised.value) == "config.model.max_tokens applies to provider 'anthropic' only, not 'openai'"
    with pytest.raises(ModelConfigError) as bounded:
        ModelSettings.parse({**ANTHROPIC, "max_tokens": -1}, field="")
    assert str(bounded.value) == "max_tokens -1 must be an integer from 1 to 1000000 (tokens of one answer)"
