"""The prefix registry: every entry is its model name's derivation, and nothing else is a prefix."""

from __future__ import annotations

import pytest

from agentfy.ids import ID_ENTITIES, ID_PREFIXES, UnknownPrefixError, assert_id_prefix, derive_prefix
from agentfy.ids.registry import ID_PREFIXES_LONGEST_FIRST, RENAMED_PREFIXES, model_of_prefix


def test_every_entry_equals_its_derivation() -> None:
    for model, prefix in ID_ENTITIES.items():
        assert prefix == derive_prefix(model), model


@pytest.mark.parametrize(("model", "prefix"), [
    ("Organization", "org"),
    ("OrganizationMember", "org-member"),
    ("OrganizationCredential", "org-credential"),
    ("AgentMcpServer", "agent-mcp-server"),
    ("TeamApiKey", "team-api-key"),
    ("KgEntity", "kg-entity"),
    ("User", "user"),
])
def test_derivation_follows_the_seed(model: str, prefix: str) -> None:
    assert derive_prefix(model) == prefix


def test_required_models_are_registered() -> None:
    for model in ["Organization", "OrganizationMember", "OrganizationCredential", "OrganizationPolicy", "User",
                  "Agent", "AgentLink", "AgentMcpServer", "Team", "TeamMember", "TeamApiKey",
                  "EpisodicSummary", "KgEntity", "KgRelation", "MemoryDocument", "MemoryChunk",
                  "VaultDocument", "Skill", "CronJob"]:
        assert model in ID_ENTITIES
    assert {"user", "team-api-key"} <= ID_PREFIXES


def test_prefixes_are_unique_and_at_most_32_characters() -> None:
    assert len(ID_PREFIXES) == len(ID_ENTITIES)
    assert all(len(p) <= 32 for p in ID_PREFIXES)


def test_longest_first_order_for_the_alternation() -> None:
    lengths = [len(p) for p in ID_PREFIXES_LONGEST_FIRST]
    assert lengths == sorted(lengths, reverse=True)


@pytest.mark.parametrize("bad", ["", "agent", "Agent_Link", "agentLink", "Agent-Link", "1Agent"])
def test_derive_prefix_refuses_names_that_are_not_pascal_case(bad: str) -> None:
    with pytest.raises(ValueError, match="PascalCase"):
        derive_prefix(bad)


def test_derive_prefix_refuses_prefixes_over_32_characters() -> None:
    with pytest.raises(ValueError, match="at most 32"):
        derive_prefix("AgentVeryLongModelNameThatKeepsGoing")


def test_retired_organization_prefixes_are_not_registered() -> None:
    assert not set(RENAMED_PREFIXES) & ID_PREFIXES
    assert set(RENAMED_PREFIXES.values()) <= ID_PREFIXES


def test_assert_id_prefix_and_lookup() -> None:
    assert assert_id_prefix("agent") == "agent"
    assert model_of_prefix("team-api-key") == "TeamApiKey"
    assert model_of_prefix("organization") is None
    for bad in ["organization", "Agent", "", None, 3]:
        with pytest.raises(UnknownPrefixError):
            assert_id_prefix(bad)
