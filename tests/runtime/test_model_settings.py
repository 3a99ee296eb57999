"""The one validator of a model configuration: every refusal names the field path, the value and what was
expected, wherever the configuration sits (an agent's ``config.model``, or a body that is the configuration)."""

from __future__ import annotations

from typing import Any

import pytest

from agentfy.runtime.providers import ModelConfigError, ModelSettings

OPENAI = {"provider": "openai", "base_url": "https://llm.test/v1", "model": "m"}


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
