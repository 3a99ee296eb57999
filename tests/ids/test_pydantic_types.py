"""EntityId: pydantic fields that accept exactly is_id's values and publish its pattern in the schema."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from hypothesis import given
from pydantic import BaseModel, ValidationError

from agentfy.ids import EntityId, UnknownPrefixError, format_id, id_pattern, is_id
from tests.ids.strategies import agentfy_ids


class AgentRef(BaseModel):
    agent_id: EntityId("agent")  # type: ignore[valid-type]


def test_accepts_ids_of_its_entity_canonical_and_legacy() -> None:
    agent = format_id("agent")
    assert AgentRef(agent_id=agent).agent_id == agent
    assert AgentRef(agent_id="0193a5b0-7000-7000-8000-000000000001")


@pytest.mark.parametrize("value", ["team-calm-rivers-k8m4p2d7n9x3", "agent-calm-rivers-k8m4p2d7n9x3\n",
                                   "AGENT-calm-rivers-k8m4p2d7n9x3", "goctech-leader", ""])
def test_refusal_names_the_value_the_expected_format_and_the_problem(value: str) -> None:
    with pytest.raises(ValidationError) as caught:
        AgentRef(agent_id=value)
    error = caught.value.errors()[0]
    assert error["type"] == "invalid_id"
    assert repr(value) in error["msg"]
    assert "agent-<adjective>-<noun>-<12 Crockford base32>" in error["msg"]
    assert error["ctx"]["problems"]


@pytest.mark.parametrize("value", [5, None, b"agent-calm-rivers-k8m4p2d7n9x3"])
def test_non_strings_are_refused_not_coerced(value: object) -> None:
    with pytest.raises(ValidationError):
        AgentRef(agent_id=value)


def test_json_schema_carries_the_anchored_pattern_and_max_length() -> None:
    schema = AgentRef.model_json_schema()["properties"]["agent_id"]
    assert schema["pattern"] == id_pattern("agent")
    assert schema["maxLength"] == 80
    assert schema["type"] == "string"


@given(agentfy_ids)
def test_model_and_pattern_agree_with_is_id(value: str) -> None:
    accepted = True
    try:
        AgentRef(agent_id=value)
    except ValidationError:
        accepted = False
    assert accepted == is_id(value, "agent") == (re.fullmatch(id_pattern("agent"), value) is not None)


def test_unregistered_prefix_fails_at_definition_time() -> None:
    with pytest.raises(UnknownPrefixError):
        EntityId("agents")


def test_the_id_module_itself_does_not_import_pydantic() -> None:
    code = "import sys, agentfy.ids; agentfy.ids.format_id('agent'); print('pydantic' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
