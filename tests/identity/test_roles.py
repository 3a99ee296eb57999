"""Organization roles: one order, one validator, and every layer agreeing with them."""

from __future__ import annotations

import pytest

from agentfy.gateway.routes.schemas_admin import MemberPatch
from agentfy.identity.roles import ROLES, InvalidRoleError, parse_role, role_rank, roles_from
from agentfy.permissions import PRIVILEGED_ROLES
from agentfy.store.schema import api_keys


def test_roles_are_listed_highest_first_and_ranked_in_that_order() -> None:
    assert ROLES == ("owner", "admin", "operator", "member")
    assert [role_rank(role) for role in ROLES] == [3, 2, 1, 0]
    assert roles_from("operator") == PRIVILEGED_ROLES == {"owner", "admin", "operator"}


def test_an_unknown_role_is_refused_with_the_roles_there_are() -> None:
    assert parse_role("admin") == "admin"
    for value in ("root", "Owner", "", None, 3):
        with pytest.raises(InvalidRoleError, match="is unknown; expected one of owner, admin, operator, member"):
            parse_role(value)
    with pytest.raises(InvalidRoleError):
        role_rank("root")


def test_the_database_and_the_request_models_allow_exactly_these_roles() -> None:
    check = next(c for c in api_keys.constraints if str(getattr(c, "name", "")).endswith("role_known"))
    assert str(check.sqltext) == "role IN ('owner', 'admin', 'operator', 'member')"  # type: ignore[attr-defined]
    assert MemberPatch.model_json_schema()["properties"]["role"]["enum"] == list(ROLES)
