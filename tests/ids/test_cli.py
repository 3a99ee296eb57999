"""`agentfy id new | check | explain`: output and exit statuses that scripts can rely on."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from agentfy.cli import app
from agentfy.ids import is_canonical_id

runner = CliRunner()


def test_new_mints_n_valid_distinct_ids() -> None:
    result = runner.invoke(app, ["id", "new", "agent", "-n", "50"])
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert len(lines) == len(set(lines)) == 50
    assert all(is_canonical_id(line, "agent") for line in lines)


def test_new_refuses_an_unregistered_prefix_with_the_list_of_valid_ones() -> None:
    result = runner.invoke(app, ["id", "new", "organization"])
    assert result.exit_code == 2
    assert "'organization' is not a registered prefix" in result.stderr
    assert "org-member" in result.stderr


def test_new_refuses_a_count_below_one() -> None:
    assert runner.invoke(app, ["id", "new", "agent", "-n", "0"]).exit_code == 2


def test_check_valid_exits_0() -> None:
    result = runner.invoke(app, ["id", "check", "agent-calm-rivers-k8m4p2d7n9x3", "--prefix", "agent"])
    assert result.exit_code == 0
    assert "valid" in result.stdout and "Agent" in result.stdout


def test_check_invalid_exits_1_with_the_reason() -> None:
    result = runner.invoke(app, ["id", "check", "team-api-key-calm-rivers-k8m4p2d7n9x3", "--prefix", "team"])
    assert result.exit_code == 1
    assert "prefix 'team-api-key' (TeamApiKey) is not the expected 'team'" in result.stdout


def test_check_json() -> None:
    result = runner.invoke(app, ["id", "check", "agent-calm-rivers-k8m4p2d7n9xu", "--json"])
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["valid"] is False and any("'u'" in p for p in data["problems"])


def test_check_with_another_products_legacy_format() -> None:
    value = "shift-zorb-quux-k8m4p2"
    assert runner.invoke(app, ["id", "check", value]).exit_code == 1
    assert runner.invoke(app, ["id", "check", value, "--product", "shiffty"]).exit_code == 0


def test_check_usage_errors_exit_2() -> None:
    bad_prefix = runner.invoke(app, ["id", "check", "x", "--prefix", "nope"])
    assert bad_prefix.exit_code == 2 and "--prefix 'nope' is not a registered prefix" in bad_prefix.stderr
    bad_product = runner.invoke(app, ["id", "check", "x", "--product", "nope"])
    assert bad_product.exit_code == 2 and "--product 'nope' is unknown" in bad_product.stderr


def test_explain_shows_format_model_words_suffix_and_products() -> None:
    result = runner.invoke(app, ["id", "explain", "team-api-key-calm-rivers-k8m4p2d7n9x3"])
    assert result.exit_code == 0
    for fragment in ["canonical", "team-api-key (model TeamApiKey)", "calm rivers", "k8m4p2d7n9x3", "shiffty"]:
        assert fragment in result.stdout


def test_explain_an_invalid_value_lists_problems() -> None:
    result = runner.invoke(app, ["id", "explain", "organization-calm-rivers-k8m4p2d7n9x3"])
    assert result.exit_code == 0
    assert "retired when organization-* became org-*" in result.stdout
