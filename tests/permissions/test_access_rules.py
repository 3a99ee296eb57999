"""The access policy's table: complete, documented as it is, and decided as it says."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentfy.gateway.app import create_app
from agentfy.gateway.auth import Principal
from agentfy.gateway.rpc.methods import METHODS
from agentfy.identity import OrgId
from agentfy.permissions.access import RULES, AccessDenied, authorize, may_use_scope, rules_table, visible_scopes
from agentfy.store.db import Database

DOC = Path(__file__).resolve().parents[2] / "docs" / "permissions.md"
ACME = OrgId("org-calm-rivers-k8m4p2d7n9x3")


def test_the_documented_table_is_the_table_in_the_code() -> None:
    assert rules_table() in DOC.read_text(), "docs/permissions.md is stale: `python -m agentfy.permissions.access`"


def test_every_route_and_method_has_a_rule(tmp_path: Path) -> None:
    app = create_app(Database(f"sqlite:///{tmp_path / 'a.db'}"), signing_secret=b"s" * 32)
    spec = app.openapi()
    operations = {op["operationId"] for path, item in spec["paths"].items() if path.startswith("/v1/")
                  for op in item.values()}
    assert operations | set(METHODS) == set(RULES)


@pytest.mark.parametrize("credential", ["signed", "team"])
def test_credential_kinds_are_refused_what_the_table_refuses_them(credential: str) -> None:
    caller = Principal(ACME, "owner", "user-calm-rivers-k8m4p2d7n9x3", signed_context=credential == "signed",
                       team_id="team-calm-rivers-k8m4p2d7n9x3" if credential == "team" else None)
    refused = {name for name, rule in RULES.items()
               if (rule.api_key_only if credential == "signed" else not rule.team_keys) or rule.platform_admin
               or (rule.person and caller.user_id is None)}
    for name in RULES:
        try:
            authorize(caller, name)
            allowed = True
        except AccessDenied as denied:
            assert denied.status == 403
            allowed = False
        assert allowed == (name not in refused), name


def test_scopes_follow_the_table() -> None:
    person = "user-calm-rivers-k8m4p2d7n9x3"
    member = Principal(ACME, "member", person)
    nobody = Principal(ACME, "member")
    operator = Principal(ACME, "operator")
    for scope, member_may in ((person, True), ("user-other-rivers-k8m4p2d7n9x3", False),
                              ("group:telegram:1", False), ("", False)):
        assert may_use_scope(member, scope) is member_may
        assert may_use_scope(nobody, scope) is False
        assert may_use_scope(operator, scope) is True
    assert visible_scopes(member) == {person} and visible_scopes(nobody) == frozenset()
    assert visible_scopes(operator) is None
